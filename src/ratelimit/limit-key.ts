/**
 * What a limit's counters are keyed by, everywhere: the TokenLimiter calls, the IPC ops, the
 * lease maps and the Redis keys (`ir:{<limit key>}`). Built only by the builders below, once per
 * snapshot (the compiled route holds its key). A new scope (per API key, per tenant) is one new
 * builder whose keys cannot collide with the others'.
 */
export type LimitKey = string;

/**
 * The limit of a ModelRoute: its route key `namespace/name` itself (Kubernetes names contain no
 * `:`, so a future scope's `<scope>:<id>` keys never collide). Unchanged from the keys before
 * limit keys existed, so counters in Redis survive an upgrade.
 */
export function routeLimitKey(routeKey: string): LimitKey {
  return routeKey;
}
