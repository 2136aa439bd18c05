import { RouterError } from '../errors.js';
import type { Decision, LimitDirection } from './limiter.js';

export const INPUT_LIMIT_MESSAGE = 'input token rate limit exceeded';
export const OUTPUT_LIMIT_MESSAGE = 'output token rate limit exceeded';

/** The direction a 429 for rejected decision `d` names (its message, its metric's `direction`). */
export function rejectedDirection(d: Decision): LimitDirection {
  return d.rejectedBy === 'output' ? 'output' : 'input';
}

/** The 429 for a rejected decision: body is the exact message, retry-after the seconds to reset. */
export function rateLimitRejection(d: Decision): RouterError {
  const output = rejectedDirection(d) === 'output';
  return new RouterError(
    'rate_limit',
    output ? OUTPUT_LIMIT_MESSAGE : INPUT_LIMIT_MESSAGE,
    429,
    { 'retry-after': String(Math.max(1, d.retryAfterSeconds)) },
    output ? 'output_tokens_exceeded' : 'input_tokens_exceeded',
  );
}
