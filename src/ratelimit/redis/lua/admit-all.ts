import { COUNTERS_LUA } from './counters.js';

/** Values per limit in the admit-all script's arguments, after the key bases, the time and n. */
export const ARGS_PER_LIMIT = 9;

/**
 * Admissions against several limits of one Redis (route and tenant), collected during one
 * event-loop turn, decided in arrival order, each atomically across its limits: KEYS[j] is the
 * key base of limit j (all in one slot: a plain Redis, not a Cluster), ARGV[1] the time in epoch
 * ms or '' (the server's TIME), ARGV[2] the number of limits n, then per limit nine values: unit,
 * input limit, output limit (-1 = none), shadow ('1': never blocks), the lease asked for (input
 * tokens, 0 = none), the unused input tokens of a lease given back, the start of the window it was
 * lent in, its size when lent and the window's incarnation a lease given back expects (as in the
 * batch script, batch.ts); then the input tokens of each admission. A lease given back is applied
 * first (only in the window it was lent in, and on a Cluster only to the incarnation it expects). Each
 * limit decides each admission by the admission rule against the counts left by the ones before
 * it; when no enforced limit refuses, its tokens are added to every limit's input counter, else
 * to none. As in the batch script, an enforced limit that refuses by input sets its recall flag
 * (its leases come back), and answers STATUS_RECALLING instead when the admission would fit with
 * every lease of its window back. Then each limit that was asked for a lease lends one by the
 * batch script's rule: while nothing is being recalled and its output limit is not reached, at
 * most what was asked and 1/16 of the input still free, and not less than twice the last
 * admission's tokens.
 *
 * Returns one string (script-reply.ts reads it): per limit eight integers, each followed by a
 * space (ms until its window ends, input used before the admissions, output used, size of its
 * leases out before this call's lease, lease lent, window start, recall flag 1 or 0, the window's
 * incarnation or 0), then per
 * admission one status digit per limit (0 admitted, 1 rejected by input, 2 by output, 3 recalling).
 */
export const ADMIT_ALL_LUA = `${COUNTERS_LUA}
local n = tonumber(ARGV[2])
local first = 3 + n * ${ARGS_PER_LIMIT}
local STATUS_DIGIT = { [0] = '0', '1', '2', '3' }
local statuses = {}
local fresh, ttl, inUsed, outUsed, inLimit, outLimit, shadow, added, change, ask = {}, {}, {}, {}, {}, {}, {}, {}, {}, {}
local lvs, nows, starts, inBefore, expected = {}, {}, {}, {}, {}
for j = 1, n do
  local a = 3 + (j - 1) * ${ARGS_PER_LIMIT}
  local unit = ARGV[a]
  local now, s, e = windowAt(unit, ARGV[1])
  local lv = windowKeys(KEYS[j], unit, s)
  local back = 0
  if heldBy(lv, ARGV[a + 8]) and leaseBack(lv, s, tonumber(ARGV[a + 6]), tonumber(ARGV[a + 7])) then back = tonumber(ARGV[a + 5]) end
  local inRaw, outRaw = windowCounts(lv)
  local inStored = tonumber(inRaw or '0')
  local used = inStored - back
  if used < 0 then used = 0 end
  lvs[j] = lv
  expected[j] = ARGV[a + 8]
  nows[j] = now
  starts[j] = s
  fresh[j] = not inRaw
  ttl[j] = e - now
  inUsed[j] = used
  change[j] = used - inStored
  outUsed[j] = tonumber(outRaw or '0')
  inLimit[j] = tonumber(ARGV[a + 1])
  outLimit[j] = tonumber(ARGV[a + 2])
  shadow[j] = ARGV[a + 3] == '1'
  ask[j] = tonumber(ARGV[a + 4])
  added[j] = 0
  inBefore[j] = used
end
local last = 0
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
  last = tokens
end
local head = {}
for j = 1, n do
  local lv = lvs[j]
  local lent = 0
  if not shadow[j] then lent = lend(lv, ask[j], inLimit[j], inUsed[j], outLimit[j], outUsed[j], last, ttl[j]) end
  local recall = 0
  if lv.recalled then recall = 1 end
  -- lentOut: before this call's lease, less any lease forfeit in the loop; the output count is the one read (no output charge here)
  local id = incarnation(lv, expected[j], true, ttl[j])
  head[j] = string.format('%d %d %d %d %d %d %d %s ', ttl[j], inBefore[j], outUsed[j], lv.lentOut, lent, starts[j], recall, id)
  local total = change[j] + added[j] + lent
  if total ~= 0 then
    redis.call('INCRBY', lv.inKey, string.format('%d', total))
    if fresh[j] then redis.call('PEXPIRE', lv.inKey, ttl[j] + TTL_MARGIN_MS) end
  end
end
return table.concat(head) .. table.concat(statuses)
`;
