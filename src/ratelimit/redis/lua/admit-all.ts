import { COUNTERS_LUA } from './counters.js';

/**
 * One admission against several limits of one Redis (route and tenant), atomically: KEYS[j] is
 * the key base of limit j (all in one slot: a plain Redis, not a Cluster), ARGV[1] the time in
 * epoch ms or '' (the server's TIME), ARGV[2] the input tokens, then per limit four values: unit,
 * input limit, output limit (-1 = none), shadow ('1': never blocks). Each limit is decided by the
 * admission rule; when no enforced limit refuses, the tokens are added to every limit's input
 * counter, else to none.
 *
 * Returns per limit { ms until its window ends, input used (after the charge), output used, status }.
 */
export const ADMIT_ALL_LUA = `${COUNTERS_LUA}
local tokens = tonumber(ARGV[2])
local reply = {}
local inKeys = {}
local fresh = {}
local ttl = {}
local blocked = false
for j = 1, #KEYS do
  local a = 3 + (j - 1) * 4
  local unit = ARGV[a]
  local now, s, e = windowAt(unit, ARGV[1])
  local inKey = keyOf(KEYS[j], 'in', unit, s)
  local used = redis.call('MGET', inKey, keyOf(KEYS[j], 'out', unit, s))
  local inUsed = tonumber(used[1] or '0')
  local outUsed = tonumber(used[2] or '0')
  local status = admission(inUsed, outUsed, tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2]), tokens)
  if status ~= 0 and ARGV[a + 3] ~= '1' then blocked = true end
  inKeys[j] = inKey
  fresh[j] = not used[1]
  ttl[j] = e - now
  reply[j * 4 - 3] = e - now
  reply[j * 4 - 2] = inUsed
  reply[j * 4 - 1] = outUsed
  reply[j * 4] = status
end
if not blocked and tokens > 0 then
  for j = 1, #KEYS do
    redis.call('INCRBY', inKeys[j], tokens)
    if fresh[j] then redis.call('PEXPIRE', inKeys[j], ttl[j] + TTL_MARGIN_MS) end
    reply[j * 4 - 2] = reply[j * 4 - 2] + tokens
  end
end
return reply
`;
