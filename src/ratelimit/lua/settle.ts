import { COUNTERS_LUA } from './counters.js';

/**
 * After an answer: corrects the current window's input counter by ARGV[3] and adds ARGV[4]
 * output tokens, in one call instead of two. Returns { input, output } counts after the change
 * (0 for a direction left untouched).
 */
export const SETTLE_LUA = `${COUNTERS_LUA}
local now, s, e = currentWindow()
local delta = tonumber(ARGV[3])
local out = tonumber(ARGV[4])
local inCount = 0
if delta ~= 0 then inCount = adjustInput(now, s, e, delta) end
local outCount = 0
if out > 0 then outCount = chargeOutput(now, s, e, out) end
return { inCount, outCount }
`;
