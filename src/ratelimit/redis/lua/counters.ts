import { WINDOW_LUA } from './window.js';

/**
 * The counter rules of the batch script (on top of the window functions): the admission rule,
 * the input correction and the output charge, each written once.
 */
export const COUNTERS_LUA = `${WINDOW_LUA}
-- The admission rule (docs/rate-limiting.md): 1 = rejected by input (inUsed + tokens > inLimit),
-- 2 = rejected by output (outUsed >= outLimit), 0 = admitted. A limit below 0 is no limit.
local function admission(inUsed, outUsed, inLimit, outLimit, tokens)
  if inLimit >= 0 and inUsed + tokens > inLimit then return 1 end
  if outLimit >= 0 and outUsed >= outLimit then return 2 end
  return 0
end

-- Input counter of window s corrected by delta (floored at 0); keeps the key's expiry, a new key
-- gets the window's. Returns the new count.
local function adjustInput(now, s, e, delta)
  local key = windowKey('in', s)
  local cur = redis.call('GET', key)
  local v = tonumber(cur or '0') + delta
  if v < 0 then v = 0 end
  if cur then
    redis.call('SET', key, string.format('%d', v), 'KEEPTTL')
  elseif v > 0 then
    redis.call('SET', key, string.format('%d', v), 'PX', e - now + TTL_MARGIN_MS)
  end
  return v
end

-- Adds tokens to the output counter of window s (even past the limit). Returns the new count.
local function chargeOutput(now, s, e, tokens)
  local key = windowKey('out', s)
  local v = redis.call('INCRBY', key, tokens)
  if v == tokens then redis.call('PEXPIRE', key, e - now + TTL_MARGIN_MS) end
  return v
end
`;
