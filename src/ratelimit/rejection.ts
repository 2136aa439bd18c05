import { RouterError } from '../errors.js';
import type { Decision, LimitDirection } from './limiter.js';

export const INPUT_LIMIT_MESSAGE = 'input token rate limit exceeded';
export const OUTPUT_LIMIT_MESSAGE = 'output token rate limit exceeded';

/**
 * The longest retry-after the official OpenAI clients should wait on by themselves. Python's waits
 * one only up to a cap (60 s in older releases, then its own backoff of 0.5-8 s, which meets the
 * same 429; 120 s in newer ones), Node's (openai 6.x) sleeps whatever it is told, so a day's limit
 * held an application's call for hours. Past this, and for a request that can never fit, the 429
 * says `x-should-retry: false`, which both obey: the call fails at once with RateLimitError,
 * retry-after still on it. A minute's window never resets further off than this.
 */
export const CLIENT_RETRY_MAX_SECONDS = 60;

/** The direction a 429 for rejected decision `d` names (its message, its metric's `direction`). */
export function rejectedDirection(d: Decision): LimitDirection {
  return d.rejectedBy === 'output' ? 'output' : 'input';
}

/**
 * The 429 for a rejected decision of a request of `inputTokens`: body the exact message (the
 * product's text), retry-after the seconds to reset, and x-should-retry false when no retry within
 * CLIENT_RETRY_MAX_SECONDS can pass: the reset is further off, or the request's input is more than
 * the whole input limit (no window ever admits it).
 */
export function rateLimitRejection(d: Decision, inputTokens: number): RouterError {
  const output = rejectedDirection(d) === 'output';
  const retryAfter = Math.max(1, d.retryAfterSeconds);
  const headers: Record<string, string> = { 'retry-after': String(retryAfter) };
  if (retryAfter > CLIENT_RETRY_MAX_SECONDS || (!output && d.input !== null && inputTokens > d.input.limit)) headers['x-should-retry'] = 'false';
  return new RouterError('rate_limit', output ? OUTPUT_LIMIT_MESSAGE : INPUT_LIMIT_MESSAGE, 429, headers, output ? 'output_tokens_exceeded' : 'input_tokens_exceeded');
}
