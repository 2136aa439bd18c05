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

/**
 * The budget of one tenant: `tenant:key:<API key name>` or `tenant:jwt:<tenant claim>`. Route keys
 * have no `:`, so the two scopes never share counters; API keys and JWT tenants of the same name
 * do not either.
 */
export function tenantLimitKey(source: 'key' | 'jwt', tenant: string): LimitKey {
  return `tenant:${source}:${tenant}`;
}
