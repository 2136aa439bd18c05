import type { RateLimitSpec } from '../config/resource-types.js';
import { tenantLimitKey, type LimitKey } from '../ratelimit/limit-key.js';

/**
 * Who a request is charged to: an API key (its name) or a JWT tenant (its tenant claim), with
 * that tenant's budget (null: the tenant has no limit of its own; route limits still apply).
 */
export interface Tenant {
  /** The subject as in messages: the key name or the token's `sub`. */
  readonly subject: string;
  /** The tenant: the key name, or the value of the JWT tenant claim. */
  readonly name: string;
  readonly limitKey: LimitKey;
  readonly limit: RateLimitSpec | null;
}

export function keyTenant(name: string, limit: RateLimitSpec | null): Tenant {
  return Object.freeze({ subject: name, name, limitKey: tenantLimitKey('key', name), limit });
}

export function jwtTenant(subject: string, name: string, limit: RateLimitSpec | null): Tenant {
  return Object.freeze({ subject, name, limitKey: tenantLimitKey('jwt', name), limit });
}
