import { RouterError } from '../errors.js';
import { LimiterOverloadedError, LimiterUnavailableError } from './limiter-errors.js';

/**
 * The answer for a limiter that could not decide (LimiterUnavailableError: timeout, closed
 * channel, store down; LimiterOverloadedError: too many decisions in flight): 503
 * `upstream_error` with `retry-after: 1`. The router fails closed: forwarding without a decision
 * could exceed the limit. Returns null for any other error.
 */
export function limiterFailure(err: unknown): RouterError | null {
  if (err instanceof LimiterUnavailableError || err instanceof LimiterOverloadedError) {
    return new RouterError('upstream_error', `rate limiter unavailable: ${err.message}`, 503, { 'retry-after': '1' });
  }
  return null;
}
