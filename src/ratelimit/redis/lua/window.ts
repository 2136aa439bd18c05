/**
 * Lua prelude shared by the limiter scripts: the current UTC-aligned window and the key names.
 *
 * Calling convention of every script: KEYS[1] is the limit's key base `ir:{<limit key>}` (its hash
 * tag puts all keys of a limit in one Cluster slot), ARGV[1] the window unit, ARGV[2] the time in
 * epoch ms, or '' to use the Redis server's clock (TIME), so instances whose clocks differ still
 * share windows. Keys: `<base>:in:<unit>:<windowStartSeconds>` and `<base>:out:<unit>:<...>` (and,
 * on a Redis Cluster, `<base>:id:<unit>:<...>`: the window's incarnation, counters.ts).
 * Keys expire at the window end plus TTL_MARGIN_MS (relative, so an injected clock works too).
 *
 * Calendar months use Howard Hinnant's days-from-civil / civil-from-days algorithms
 * (proleptic Gregorian calendar, exact for leap years), in floor arithmetic on doubles:
 * epoch milliseconds stay far below 2^53.
 */
export const TTL_MARGIN_MS = 60_000;

export const WINDOW_LUA = `
local FIXED_MS = { second = 1000, minute = 60000, hour = 3600000, day = 86400000 }
local DAY_MS = 86400000
local floor = math.floor

local function daysFromCivil(y, m, d)
  if m <= 2 then y = y - 1 end
  local era = floor(y / 400)
  local yoe = y - era * 400
  local mp = m + 9
  if m > 2 then mp = m - 3 end
  local doy = floor((153 * mp + 2) / 5) + d - 1
  local doe = yoe * 365 + floor(yoe / 4) - floor(yoe / 100) + doy
  return era * 146097 + doe - 719468
end

local function civilFromDays(z)
  z = z + 719468
  local era = floor(z / 146097)
  local doe = z - era * 146097
  local yoe = floor((doe - floor(doe / 1460) + floor(doe / 36524) - floor(doe / 146096)) / 365)
  local y = yoe + era * 400
  local doy = doe - (365 * yoe + floor(yoe / 4) - floor(yoe / 100))
  local mp = floor((5 * doy + 2) / 153)
  local m = mp + 3
  if mp >= 10 then m = mp - 9 end
  if m <= 2 then y = y + 1 end
  return y, m
end

-- now, window start, window end (epoch ms) of unit at time nowArg (epoch ms, or '' for TIME).
local function windowAt(unit, nowArg)
  local now
  if nowArg == '' then
    local t = redis.call('TIME')
    now = tonumber(t[1]) * 1000 + floor(tonumber(t[2]) / 1000)
  else
    now = tonumber(nowArg)
  end
  local len = FIXED_MS[unit]
  if len then
    local s = now - now % len
    return now, s, s + len
  end
  if unit ~= 'month' then
    return error({ err = 'ERR unknown rate limit unit ' .. tostring(unit) })
  end
  local y, m = civilFromDays(floor(now / DAY_MS))
  local s = daysFromCivil(y, m, 1) * DAY_MS
  if m == 12 then y = y + 1; m = 1 else m = m + 1 end
  return now, s, daysFromCivil(y, m, 1) * DAY_MS
end

-- The key names of a limit's window of unit starting at s (base: the limit's key base), from one
-- suffix: { inKey, outKey, lentKey (size of the leases out), sinceKey (when they were first
-- recalled), recallKey (the recall flag), idKey (the window's incarnation, on a Cluster) }.
local function windowKeys(base, unit, s)
  local suffix = ':' .. unit .. ':' .. string.format('%d', s / 1000)
  return { inKey = base .. ':in' .. suffix, outKey = base .. ':out' .. suffix, lentKey = base .. ':ls' .. suffix, sinceKey = base .. ':rs' .. suffix, recallKey = base .. ':rc' .. suffix, idKey = base .. ':id' .. suffix }
end

-- now, window start, window end (epoch ms) for ARGV[1] (unit) and ARGV[2] (now or '').
local function currentWindow()
  return windowAt(ARGV[1], ARGV[2])
end

local TTL_MARGIN_MS = ${TTL_MARGIN_MS}
`;
