import { WINDOW_LUA } from './window.js';

/**
 * How long a limit's recall flag lives: set by a script when an admission is refused by input,
 * it tells the workers holding leases of the window to give them back, and stops new leases.
 */
export const RECALL_FLAG_MS = 1_000;

/** Status of an admission refused by input for now: it would fit if the leases still out came back (the worker asks again). */
export const STATUS_RECALLING = 3;

/**
 * Leases still out this long after a refusal first recalled them are forfeit: a live holder gives
 * its lease back within about 150 ms of a recall, so these holders stopped or died. Their tokens
 * stay counted; the admissions that waited for them are refused from then on.
 */
export const LEASES_FORFEIT_MS = 2_000;

/**
 * The counter rules of the scripts (on top of the window functions): the admission rule, the
 * refusal by input with its recall of the leases, a lease given back, a lease lent and the output
 * charge and its undoing, and the window's incarnation (a Cluster), each written once.
 */
export const COUNTERS_LUA = `${WINDOW_LUA}
-- The admission rule (docs/rate-limiting.md): 1 = rejected by input (inUsed + tokens > inLimit),
-- 2 = rejected by output (outUsed >= outLimit), 0 = admitted. A limit below 0 is no limit.
local function admission(inUsed, outUsed, inLimit, outLimit, tokens)
  if inLimit >= 0 and inUsed + tokens > inLimit then return 1 end
  if outLimit >= 0 and outUsed >= outLimit then return 2 end
  return 0
end

-- The counts of the window whose key names lv holds (windowKeys), in one MGET: input and output
-- used (nil when the key does not exist). lv gains the lease state that refuseByInput and the lend
-- read: lentOut (size of the leases out), since, recalled.
local function windowCounts(lv)
  local used = redis.call('MGET', lv.inKey, lv.outKey, lv.recallKey, lv.lentKey, lv.sinceKey)
  lv.recalled = used[3] and true or false
  lv.lentOut = tonumber(used[4] or '0')
  lv.since = used[5] and tonumber(used[5]) or nil
  return used[1], used[2]
end

-- An admission refused by input: the recall flag is set (once: lv.recalled), and the status is
-- ${STATUS_RECALLING} (recalling) when the admission would fit with the leases out given back (free + lv.lentOut >=
-- tokens), else 1. lv: one limit's keys and lease state (windowKeys, then windowCounts); sinceKey holds when the leases out were first recalled: after LEASES_FORFEIT_MS they are
-- forfeit (the count of leases out is dropped) and the admission is refused.
local function refuseByInput(lv, now, free, tokens)
  if not lv.recalled then
    redis.call('SET', lv.recallKey, '1', 'PX', ${RECALL_FLAG_MS})
    lv.recalled = true
  end
  if lv.lentOut <= 0 or free + lv.lentOut < tokens then return 1 end
  if lv.since and now - lv.since > ${LEASES_FORFEIT_MS} then
    redis.call('DEL', lv.lentKey, lv.sinceKey)
    lv.lentOut = 0
    lv.since = nil
    return 1
  end
  if not lv.since then
    redis.call('SET', lv.sinceKey, string.format('%d', now), 'PX', ${2 * LEASES_FORFEIT_MS})
    lv.since = now
  end
  return ${STATUS_RECALLING}
end

-- A lease given back: when it was lent in this window (backWindow = the window start s), the count of
-- leases out goes down by its size when lent (backLent), and true is returned (the caller then takes
-- its unused tokens off the input count); a lease of an earlier window is not given back.
local function leaseBack(lv, s, backWindow, backLent)
  if backLent <= 0 or backWindow ~= s then return false end
  if redis.call('DECRBY', lv.lentKey, backLent) <= 0 then redis.call('DEL', lv.lentKey, lv.sinceKey) end
  return true
end

-- The lease lent for \`ask\` input tokens (0 = none asked), counted in the window's leases out
-- (expiring ttlMs + TTL_MARGIN_MS from now): only while nothing is being recalled and the output
-- limit is not reached, at most what was asked and 1/16 of the input still free (inUsed counts the
-- admissions), and not less than twice the last admission's tokens (0 otherwise).
local function lend(lv, ask, inLimit, inUsed, outLimit, outUsed, last, ttlMs)
  if ask <= 0 or lv.recalled or inLimit < 0 or (outLimit >= 0 and outUsed >= outLimit) then return 0 end
  local lent = math.floor((inLimit - inUsed) / 16)
  if lent > ask then lent = ask end
  if lent < 2 * last or lent <= 0 then return 0 end
  if redis.call('INCRBY', lv.lentKey, lent) == lent then redis.call('PEXPIRE', lv.lentKey, ttlMs + TTL_MARGIN_MS) end
  return lent
end

-- The window's incarnation on a Redis Cluster (expected ~= ''; a plain Redis keeps none: the
-- router reads its run_id instead): read into lv.id (false when absent); true when it is
-- \`expected\` (the incarnation the router saw when it charged what it gives back). A give-back (a
-- negative correction, a lease's unused tokens) is applied only then: a node that restarted empty
-- lost the key with the charges, and one whose key holds another value never held them.
local function heldBy(lv, expected)
  if expected == '' then return true end
  lv.id = redis.call('GET', lv.idKey)
  return lv.id == expected
end

-- The window's incarnation as the reply shows it ('0' when none is kept): on a Cluster, created
-- by the first call with admissions when absent, named by the server's time in microseconds (a
-- restarted node names it anew), expiring with the counters (ttlMs + TTL_MARGIN_MS from now).
local function incarnation(lv, expected, admitting, ttlMs)
  if expected == '' then return '0' end
  if not lv.id and admitting then
    local t = redis.call('TIME')
    lv.id = t[1] .. string.format('%06d', tonumber(t[2]))
    redis.call('SET', lv.idKey, lv.id, 'PX', ttlMs + TTL_MARGIN_MS)
  end
  return lv.id or '0'
end

-- Adds tokens to the output counter \`key\` of the window ending at e (even past the limit). Returns the new count.
local function chargeOutput(key, now, e, tokens)
  local v = redis.call('INCRBY', key, tokens)
  if v == tokens then redis.call('PEXPIRE', key, e - now + TTL_MARGIN_MS) end
  return v
end

-- Takes back \`tokens\` (> 0) of the output counter \`key\`, whose count is \`used\` (floored at 0;
-- an absent key stays absent). Returns the new count.
local function unchargeOutput(key, used, tokens)
  local take = tokens
  if take > used then take = used end
  if take > 0 then redis.call('DECRBY', key, take) end
  return used - take
end
`;
