import type { LimitKey } from '../limit-key.js';

/**
 * `ir:{<limit key>}`: the base of every Redis key of one limit (lua/window.ts appends
 * `:in|out:<unit>:<windowStartSeconds>`). `%`, `{` and `}` are percent-encoded, so the hash tag
 * is the whole key and keeps every counter of the limit in one Cluster slot.
 */
export function redisKeyBase(key: LimitKey): string {
  return `ir:{${key.replace(/[%{}]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)}}`;
}
