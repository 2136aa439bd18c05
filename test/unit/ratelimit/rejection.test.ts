import { describe, expect, it } from 'vitest';
import { CLIENT_RETRY_MAX_SECONDS, rateLimitRejection } from '../../../src/ratelimit/rejection.js';
import type { Decision } from '../../../src/ratelimit/limiter.js';

function refused(by: 'input' | 'output', retryAfterSeconds: number, inLimit = 10): Decision {
  return {
    allowed: false, rejectedBy: by, retryAfterSeconds,
    input: { limit: inLimit, remaining: 2, resetSeconds: retryAfterSeconds },
    output: { limit: 100, remaining: by === 'output' ? 0 : 50, resetSeconds: retryAfterSeconds },
  };
}

describe('the 429 of a refused request', () => {
  it('within a minute of the reset: retry-after alone, the exact message; the clients retry after it', () => {
    for (const s of [1, 30, CLIENT_RETRY_MAX_SECONDS]) {
      const e = rateLimitRejection(refused('input', s), 4);
      expect([e.status, e.type, e.code, e.message, e.headers]).toEqual([429, 'rate_limit', 'input_tokens_exceeded', 'input token rate limit exceeded', { 'retry-after': String(s) }]);
    }
    const out = rateLimitRejection(refused('output', 12), 4);
    expect([out.code, out.message, out.headers]).toEqual(['output_tokens_exceeded', 'output token rate limit exceeded', { 'retry-after': '12' }]);
  });

  it('a reset further than a minute away (an hour, day or month window): x-should-retry false, so an SDK does not sleep until then', () => {
    const e = rateLimitRejection(refused('input', 5643), 4);
    expect([e.message, e.headers]).toEqual(['input token rate limit exceeded', { 'retry-after': '5643', 'x-should-retry': 'false' }]);
    const out = rateLimitRejection(refused('output', CLIENT_RETRY_MAX_SECONDS + 1), 4);
    expect([out.message, out.headers]).toEqual(['output token rate limit exceeded', { 'retry-after': '61', 'x-should-retry': 'false' }]);
  });

  it('a request with more input tokens than the whole input limit: never admitted, not to be retried; the same message', () => {
    const e = rateLimitRejection(refused('input', 20, 10), 11);
    expect([e.code, e.message, e.headers]).toEqual(['input_tokens_exceeded', 'input token rate limit exceeded', { 'retry-after': '20', 'x-should-retry': 'false' }]);
    // Exactly the whole limit fits an empty window: a plain refusal.
    expect(rateLimitRejection(refused('input', 20, 10), 10).headers).toEqual({ 'retry-after': '20' });
    // An output refusal waits for the window whatever the prompt.
    expect(rateLimitRejection(refused('output', 20, 10), 11).headers).toEqual({ 'retry-after': '20' });
  });
});
