import { COUNTERS_LUA } from './counters.js';

/** Adds ARGV[3] output tokens to the current window (even past the limit). Returns the new count. */
export const CHARGE_OUTPUT_LUA = `${COUNTERS_LUA}
local now, s, e = currentWindow()
return chargeOutput(now, s, e, tonumber(ARGV[3]))
`;
