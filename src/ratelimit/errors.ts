import { RouterError } from '../errors.js';
import type { LateCharge } from './limiter.js';

/**
 * Errors a TokenLimiter rejects with when it cannot decide. The router maps both to
 * 503 `upstream_error` ("rate limiter unavailable") with `retry-after: 1`: admitting without a
 * decision would break the limit's exactness, so the router fails closed.
 */
export class LimiterUnavailableError extends Error {
  readonly code = 'LIMITER_UNAVAILABLE' as const;
  constructor(message: string) {
    super(message);
    this.name = 'LimiterUnavailableError';
  }
}

/** The client already has its maximum number of decisions in flight (bounded queue). */
export class LimiterOverloadedError extends Error {
  readonly code = 'LIMITER_OVERLOADED' as const;
  constructor(message: string) {
    super(message);
    this.name = 'LimiterOverloadedError';
  }
}

/**
 * The global limit store did not answer (RATE_LIMIT_REDIS_FAILURE_MODE=closed). A
 * LimiterUnavailableError, so the router answers 503 `upstream_error`, never a misleading 429.
 */
export class LimitStoreUnavailableError extends LimiterUnavailableError {
  /** Of an admission whose call went out and failed: what the store may still charge late (limiter.ts LateCharge), else null. */
  lateCharge: LateCharge | null = null;
  constructor(address: string) {
    super(`the global rate limit store (Redis at ${address}) is unavailable`);
    this.name = 'LimitStoreUnavailableError';
  }
}

/**
 * The answer for a limiter that could not decide (LimiterUnavailableError: timeout, closed
 * channel, store down; LimiterOverloadedError: too many decisions in flight): 503
 * `upstream_error` with `retry-after: 1`. The router fails closed: forwarding without a decision
 * could exceed the limit. Returns null for any other error.
 */
export function limiterFailure(err: unknown): RouterError | null {
  if (err instanceof LimiterUnavailableError || err instanceof LimiterOverloadedError) {
    return new RouterError('upstream_error', `rate limiter unavailable: ${err.message}`, 503, { 'retry-after': '1' }, 'limiter_unavailable');
  }
  return null;
}
