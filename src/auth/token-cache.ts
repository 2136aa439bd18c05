/**
 * Verified JWTs, by their exact text, so a client reusing a token pays the signature check once
 * per TTL instead of per request (~80 µs for ES256/RS256, bench/auth-micro.ts). An entry lives
 * until the token's exp or `ttlMs` after verification, whichever is first, so a key the issuer
 * withdraws stops being honoured within `ttlMs` of the key set's next refresh (jwks-cache.ts).
 * Bounded: when full, the oldest entry goes.
 */
import type { Clock } from '../clock.js';
import type { Tenant } from './tenant.js';

export interface VerifiedToken {
  readonly subject: string;
  /** Who the token's requests are charged to. */
  readonly tenant: Tenant;
  /** The models claim as found in the token (validated per request against the model). */
  readonly models: unknown;
  /** Epoch ms after which the entry is not used. */
  readonly until: number;
  /** Epoch ms before which the token is not valid (nbf), or 0. */
  readonly notBefore: number;
}

export class TokenCache {
  private readonly map = new Map<string, VerifiedToken>();

  constructor(private readonly max: number, private readonly ttlMs: number, private readonly now: Clock = Date.now) {}

  /** The entry for `token` when still usable now, else null (and the entry is dropped). */
  get(token: string): VerifiedToken | null {
    const v = this.map.get(token);
    if (v === undefined) return null;
    const now = this.now();
    if (now >= v.until) {
      this.map.delete(token);
      return null;
    }
    return now >= v.notBefore ? v : null;
  }

  /** Remembers a verified token; `exp`/`nbf` in epoch seconds as in the claims (undefined = none). */
  set(token: string, tenant: Tenant, models: unknown, exp: number | undefined, nbf: number | undefined, toleranceMs: number): void {
    if (this.max <= 0) return;
    const now = this.now();
    const until = Math.min(now + this.ttlMs, exp === undefined ? Infinity : exp * 1000 + toleranceMs);
    if (until <= now) return;
    if (this.map.size >= this.max) this.map.delete(this.map.keys().next().value as string);
    this.map.set(token, { subject: tenant.subject, tenant, models, until, notBefore: nbf === undefined ? 0 : nbf * 1000 - toleranceMs });
  }

  get size(): number {
    return this.map.size;
  }
}
