import { COUNTERS_LUA } from './counters.js';

/**
 * The limiter's only script: the operations on one limit's counters (one unit, one clock
 * reading, one pair of limits) collected during one event-loop turn, applied atomically in one call.
 *
 * ARGV[3] is the sum of the batch's input corrections, ARGV[4] the sum of its output charges;
 * they are applied first (correction floored at 0, charge in full). ARGV[5] and ARGV[6] are the
 * input and output limits (-1 = none), ARGV[7..] the input tokens of each admission, in arrival
 * order. Each admission is decided by the admission rule against the counts left by the ones
 * before it; the tokens of the admitted ones are added to the input counter (one INCRBY).
 *
 * Returns { ms until the window ends, input used before the admissions, output used, then one
 * status per admission (0 admitted, 1 rejected by input, 2 rejected by output) }; only the ms
 * when there is no admission.
 */
export const BATCH_LUA = `${COUNTERS_LUA}
local now, s, e = currentWindow()
local delta = tonumber(ARGV[3])
local out = tonumber(ARGV[4])
if delta ~= 0 then adjustInput(now, s, e, delta) end
if out > 0 then chargeOutput(now, s, e, out) end
local n = #ARGV
if n < 7 then return { e - now } end
local inKey = windowKey('in', s)
local used = redis.call('MGET', inKey, windowKey('out', s))
local inUsed = tonumber(used[1] or '0')
local outUsed = tonumber(used[2] or '0')
local inLimit = tonumber(ARGV[5])
local outLimit = tonumber(ARGV[6])
local reply = { e - now, inUsed, outUsed }
local added = 0
for i = 7, n do
  local tokens = tonumber(ARGV[i])
  local status = admission(inUsed, outUsed, inLimit, outLimit, tokens)
  if status == 0 then
    inUsed = inUsed + tokens
    added = added + tokens
  end
  reply[i - 3] = status
end
if added > 0 then
  redis.call('INCRBY', inKey, added)
  if not used[1] then redis.call('PEXPIRE', inKey, e - now + TTL_MARGIN_MS) end
end
return reply
`;
