/**
 * Whether the Redis that answers may evict the limiter's keys, from its INFO text (read at each
 * connection, store-limiter.ts readInstance). A limit's counts are keys with an expiry: with a
 * `maxmemory` and any policy but `noeviction` (`allkeys-*`, and `volatile-*`, which takes keys with
 * an expiry), Redis may evict them at its memory limit, and that window then counts from 0 again.
 */

/** The policy that lets Redis evict keys at its maxmemory (e.g. `allkeys-lru`), or null when none can be. */
export function evictingPolicy(info: string): string | null {
  const max = /^maxmemory:(\d+)/m.exec(info);
  const policy = /^maxmemory_policy:([a-z-]+)/m.exec(info);
  if (max === null || policy === null || max[1] === '0' || policy[1] === 'noeviction') return null;
  return policy[1];
}

/** The warning for a store whose Redis evicts with `policy`. */
export function evictionWarning(name: string, policy: string): string {
  return `rate limit store ${name}: Redis evicts keys at its maxmemory (maxmemory-policy ${policy}), the limits' counts too: ` +
    'a window whose counts are evicted counts from 0 again, and admits up to its whole limit again, with nothing logged; ' +
    'set maxmemory-policy noeviction for the limiter\'s Redis (at maxmemory, calls are then refused and the failure mode decides)';
}
