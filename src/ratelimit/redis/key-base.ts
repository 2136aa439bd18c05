import type { LimitKey } from '../limit-key.js';

/** What every Redis key of the limiter starts with (the router's user needs its keys there only: `~ir:*`). */
export const KEY_PREFIX = 'ir:';

/**
 * `ir:{<limit key>}`: the base of every Redis key of one limit (lua/window.ts appends
 * `:in|out:<unit>:<windowStartSeconds>`). `%`, `{` and `}` are percent-encoded, so the hash tag
 * is the whole key and keeps every counter of the limit in one Cluster slot.
 */
export function redisKeyBase(key: LimitKey): string {
  return `${KEY_PREFIX}{${key.replace(/[%{}]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)}}`;
}
