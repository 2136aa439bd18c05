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
