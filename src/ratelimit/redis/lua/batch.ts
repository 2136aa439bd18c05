import { COUNTERS_LUA } from './counters.js';

/**
 * The limiter's only script: the operations on one limit's counters (one unit, one clock
 * reading, one pair of limits) collected during one event-loop turn, applied atomically in one call.
 *
 * ARGV[3] is the sum of the batch's input corrections, ARGV[4] the sum of its output charges;
 * they are applied first (correction floored at 0, charge in full). A negative ARGV[4] takes output
 * back (floored at 0): only the late undoing of a call's output charge sends one (store-limiter.ts). ARGV[5] and ARGV[6] are the
 * input and output limits (-1 = none). ARGV[7] is the lease asked for (input tokens, 0 = none),
 * ARGV[8] the unused input tokens of the leases given back, ARGV[9] the start of the window they
 * were lent in and ARGV[10] their size when lent (a lease of an earlier window is not given back:
 * that window's counters are gone). ARGV[11] is the window's incarnation the give-backs expect ('' on
 * a plain Redis: none kept; on a Cluster '0' when none is known): when the window's \`id\` key does not
 * hold it, the give-backs in ARGV[3] (ARGV[12]: their input tokens, >= 0; the rest of ARGV[3] is
 * positive corrections, charged whatever the incarnation) and the leases given back are not
 * applied (counters.ts heldBy). ARGV[13] is the start of the window the input corrections belong to
 * (the window their admissions were charged in, by this script's clock), or -1 when not known: when
 * it is not the current window, none of ARGV[3] is applied (that window is over, and the current
 * one owes those requests nothing). ARGV[14..] are the input tokens of each admission, in arrival order. Each admission is decided by the admission rule against the counts left by the ones
 * before it. The input counter is read once (with the lease state, one MGET) and written once:
 * the correction, the tokens of the admitted ones and of a lease lent, as one INCRBY.
 *
 * A lease is lent (leases.ts) only while nothing is being recalled and the output limit is not
 * reached: at most what was asked and 1/16 of the input still free after the admissions, and
 * not less than twice the last admission's tokens (0 otherwise). The window's \`ls\` counter holds
 * the size of the leases lent and not given back yet. An admission refused by input sets the
 * recall flag for RECALL_FLAG_MS: the holders give their leases back when they see it. When the
 * admission would fit if every lease out came back (free + \`ls\` ≥ its tokens), its status is
 * STATUS_RECALLING instead of a refusal: the worker asks again while the leases come back; leases
 * still out LEASES_FORFEIT_MS after the first such answer are forfeit (counters.ts refuseByInput).
 *
 * Returns one string (script-reply.ts reads it, and says why a string): eight integers, each
 * followed by a space (ms until the window ends, input used before the admissions, output used,
 * lease lent, window start, recall flag 1 or 0, the size of the leases out before this call's
 * lease, the window's incarnation after the call or 0), then one digit per admission, its status (0 admitted, 1 rejected by input, 2 rejected
 * by output, 3 recalling).
 */
export const BATCH_LUA = `${COUNTERS_LUA}
local STATUS_DIGIT = { [0] = '0', '1', '2', '3' }
local now, s, e = currentWindow()
local delta = tonumber(ARGV[3])
local out = tonumber(ARGV[4])
local lv = windowKeys(KEYS[1], ARGV[1], s)
local held = heldBy(lv, ARGV[11])
local correctionWindow = tonumber(ARGV[13])
if correctionWindow >= 0 and correctionWindow ~= s then delta = 0
elseif not held then delta = delta + tonumber(ARGV[12]) end
if held and leaseBack(lv, s, tonumber(ARGV[9]), tonumber(ARGV[10])) then delta = delta - tonumber(ARGV[8]) end
local n = #ARGV
local inRaw, outRaw = windowCounts(lv)
local inStored = tonumber(inRaw or '0')
local inUsed = inStored + delta
if inUsed < 0 then inUsed = 0 end
local change = inUsed - inStored -- the correction, floored at 0; then the admissions and the lease
local outUsed = tonumber(outRaw or '0')
if out > 0 then outUsed = chargeOutput(lv.outKey, now, e, out) elseif out < 0 then outUsed = unchargeOutput(lv.outKey, outUsed, -out) end
local inLimit = tonumber(ARGV[5])
local outLimit = tonumber(ARGV[6])
local inBefore = inUsed
local statuses = {}
local added = 0
local last = 0
for i = 14, n do
  local tokens = tonumber(ARGV[i])
  local status = admission(inUsed, outUsed, inLimit, outLimit, tokens)
  if status == 0 then
    inUsed = inUsed + tokens
    added = added + tokens
  elseif status == 1 then
    status = refuseByInput(lv, now, inLimit - inUsed, tokens)
  end
  last = tokens
  statuses[i - 13] = STATUS_DIGIT[status]
end
local lentNow = lend(lv, tonumber(ARGV[7]), inLimit, inUsed, outLimit, outUsed, last, e - now)
change = change + added + lentNow
if change ~= 0 then
  redis.call('INCRBY', lv.inKey, string.format('%d', change))
  if not inRaw then redis.call('PEXPIRE', lv.inKey, e - now + TTL_MARGIN_MS) end
end
local recall = 0
if lv.recalled then recall = 1 end
local id = incarnation(lv, ARGV[11], n >= 14, e - now)
-- lv.lentOut: less any lease forfeit in the loop
return string.format('%d %d %d %d %d %d %d %s ', e - now, inBefore, outUsed, lentNow, s, recall, lv.lentOut, id) .. table.concat(statuses)
`;
