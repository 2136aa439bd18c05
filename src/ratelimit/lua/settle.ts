import { WINDOW_LUA } from './window.js';

/**
 * After an answer: corrects the current window's input counter by ARGV[3] (may be negative;
 * floors at 0; keeps the key's expiry) and adds ARGV[4] output tokens (even past the limit), in
 * one call instead of two. Returns { input, output } counts after the change.
 */
export const SETTLE_LUA = `${WINDOW_LUA}
local now, s, e = currentWindow()
local delta = tonumber(ARGV[3])
local out = tonumber(ARGV[4])
local inCount = 0
if delta ~= 0 then
  local inKey = windowKey('in', s)
  local cur = redis.call('GET', inKey)
  inCount = tonumber(cur or '0') + delta
  if inCount < 0 then inCount = 0 end
  if cur then
    redis.call('SET', inKey, string.format('%d', inCount), 'KEEPTTL')
  elseif inCount > 0 then
    redis.call('SET', inKey, string.format('%d', inCount), 'PX', e - now + TTL_MARGIN_MS)
  end
end
local outCount = 0
if out > 0 then
  local outKey = windowKey('out', s)
  outCount = redis.call('INCRBY', outKey, out)
  if outCount == out then redis.call('PEXPIRE', outKey, e - now + TTL_MARGIN_MS) end
end
return { inCount, outCount }
`;
