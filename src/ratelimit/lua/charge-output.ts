import { WINDOW_LUA } from './window.js';

/** Adds ARGV[3] output tokens to the current window (even past the limit). Returns the new count. */
export const CHARGE_OUTPUT_LUA = `${WINDOW_LUA}
local now, s, e = currentWindow()
local key = windowKey('out', s)
local tokens = tonumber(ARGV[3])
local v = redis.call('INCRBY', key, tokens)
if v == tokens then redis.call('PEXPIRE', key, e - now + TTL_MARGIN_MS) end
return v
`;
