import { LimiterUnavailableError } from './limiter-errors.js';

/**
 * The global limit store did not answer (RATE_LIMIT_REDIS_FAILURE_MODE=closed). A
 * LimiterUnavailableError, so the router answers 503 `upstream_error`, never a misleading 429.
 */
export class LimitStoreUnavailableError extends LimiterUnavailableError {
  constructor(address: string) {
    super(`the global rate limit store (Redis at ${address}) is unavailable`);
    this.name = 'LimitStoreUnavailableError';
  }
}
