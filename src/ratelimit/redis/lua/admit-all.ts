import { COUNTERS_LUA } from './counters.js';

/**
 * Admissions against several limits of one Redis (route and tenant), collected during one
 * event-loop turn, decided in arrival order, each atomically across its limits: KEYS[j] is the
 * key base of limit j (all in one slot: a plain Redis, not a Cluster), ARGV[1] the time in epoch
 * ms or '' (the server's TIME), ARGV[2] the number of limits n, then per limit four values: unit,
 * input limit, output limit (-1 = none), shadow ('1': never blocks), then the input tokens of
 * each admission. Each limit decides each admission by the admission rule against the counts
 * left by the ones before it; when no enforced limit refuses, its tokens are added to every
 * limit's input counter, else to none. As in the batch script (batch.ts), an enforced limit that
 * refuses by input sets its recall flag (its leases come back), and answers STATUS_RECALLING
 * instead when the admission would fit with every lease of its window back.
 *
 * Returns one string (script-reply.ts reads it): per limit four integers, each followed by a space
 * (ms until its window ends, input used before the admissions, output used, size of its leases
 * out), then per admission one status digit per limit (0 admitted, 1 rejected by input, 2 by
 * output, 3 recalling).
 */
export const ADMIT_ALL_LUA = `${COUNTERS_LUA}
local n = tonumber(ARGV[2])
local first = 3 + n * 4
local STATUS_DIGIT = { [0] = '0', '1', '2', '3' }
local statuses = {}
local inKeys, fresh, ttl, inUsed, outUsed, inLimit, outLimit, shadow, added = {}, {}, {}, {}, {}, {}, {}, {}, {}
local lvs, nows, inBefore = {}, {}, {}
for j = 1, n do
  local a = 3 + (j - 1) * 4
  local unit = ARGV[a]
  local now, s, e = windowAt(unit, ARGV[1])
  local lv = windowKeys(KEYS[j], unit, s)
  local inRaw, outRaw = windowCounts(lv)
  inKeys[j] = lv.inKey
  lvs[j] = lv
  nows[j] = now
  fresh[j] = not inRaw
  ttl[j] = e - now
  inUsed[j] = tonumber(inRaw or '0')
  outUsed[j] = tonumber(outRaw or '0')
  inLimit[j] = tonumber(ARGV[a + 1])
  outLimit[j] = tonumber(ARGV[a + 2])
  shadow[j] = ARGV[a + 3] == '1'
  added[j] = 0
  inBefore[j] = inUsed[j]
end
for i = first, #ARGV do
  local tokens = tonumber(ARGV[i])
  local blocked = false
  local at = (i - first) * n
  for j = 1, n do
    local status = admission(inUsed[j], outUsed[j], inLimit[j], outLimit[j], tokens)
    if status == 1 and not shadow[j] then status = refuseByInput(lvs[j], nows[j], inLimit[j] - inUsed[j], tokens) end
    if status ~= 0 and not shadow[j] then blocked = true end
    statuses[at + j] = STATUS_DIGIT[status]
  end
  if not blocked then
    for j = 1, n do
      inUsed[j] = inUsed[j] + tokens
      added[j] = added[j] + tokens
    end
  end
end
local head = {}
for j = 1, n do
  -- lentOut: less any lease forfeit in the loop; the output count is the one read (no output charge here)
  head[j] = string.format('%d %d %d %d ', ttl[j], inBefore[j], outUsed[j], lvs[j].lentOut)
  if added[j] > 0 then
    redis.call('INCRBY', inKeys[j], added[j])
    if fresh[j] then redis.call('PEXPIRE', inKeys[j], ttl[j] + TTL_MARGIN_MS) end
  end
end
return table.concat(head) .. table.concat(statuses)
`;
