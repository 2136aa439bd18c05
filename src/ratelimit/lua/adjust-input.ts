import { WINDOW_LUA } from './window.js';

/**
 * Corrects the current window's input counter by ARGV[3] (may be negative; the counter floors
 * at 0). Keeps the key's expiry; a new key gets the window's. Returns the new count.
 */
export const ADJUST_INPUT_LUA = `${WINDOW_LUA}
local now, s, e = currentWindow()
local key = windowKey('in', s)
local cur = redis.call('GET', key)
local v = tonumber(cur or '0') + tonumber(ARGV[3])
if v < 0 then v = 0 end
if cur then
  redis.call('SET', key, string.format('%d', v), 'KEEPTTL')
elseif v > 0 then
  redis.call('SET', key, string.format('%d', v), 'PX', e - now + TTL_MARGIN_MS)
end
return v
`;
