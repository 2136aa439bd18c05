import { COUNTERS_LUA } from './counters.js';

/**
 * Corrects the current window's input counter by ARGV[3] (may be negative; the counter floors
 * at 0). Keeps the key's expiry; a new key gets the window's. Returns the new count.
 */
export const ADJUST_INPUT_LUA = `${COUNTERS_LUA}
local now, s, e = currentWindow()
return adjustInput(now, s, e, tonumber(ARGV[3]))
`;
