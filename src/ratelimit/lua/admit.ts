import { WINDOW_LUA } from './window.js';

/**
 * One admission decision, atomically. ARGV[3] input limit, ARGV[4] output limit (-1 = none),
 * ARGV[5] input tokens. Rejects when input + tokens > input limit, or output >= output limit;
 * a rejection charges nothing, an admission adds the tokens to the input counter.
 * Returns { status (0 allowed, 1 rejected by input, 2 by output), input used, output used,
 * ms until the window ends }.
 */
export const ADMIT_LUA = `${WINDOW_LUA}
local now, s, e = currentWindow()
local inKey = windowKey('in', s)
local outKey = windowKey('out', s)
local inLimit = tonumber(ARGV[3])
local outLimit = tonumber(ARGV[4])
local tokens = tonumber(ARGV[5])
local used = redis.call('MGET', inKey, outKey)
local inUsed = tonumber(used[1] or '0')
local outUsed = tonumber(used[2] or '0')
local status = 0
if inLimit >= 0 and inUsed + tokens > inLimit then
  status = 1
elseif outLimit >= 0 and outUsed >= outLimit then
  status = 2
elseif tokens > 0 then
  inUsed = redis.call('INCRBY', inKey, tokens)
  if not used[1] then redis.call('PEXPIRE', inKey, e - now + TTL_MARGIN_MS) end
end
return { status, inUsed, outUsed, e - now }
`;
