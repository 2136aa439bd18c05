import { describe, expect, it } from 'vitest';
import { RouterError } from '../../../src/errors.js';
import { LimiterOverloadedError, LimiterUnavailableError, limiterFailure } from '../../../src/ratelimit/errors.js';

describe('limiterFailure', () => {
  it('maps an unavailable limiter to 503 upstream_error with retry-after 1', () => {
    const e = limiterFailure(new LimiterUnavailableError('the cluster primary did not answer a rate limit decision within 1000 ms'));
    expect(e).toBeInstanceOf(RouterError);
    expect(e?.type).toBe('upstream_error');
    expect(e?.status).toBe(503);
    expect(e?.headers).toEqual({ 'retry-after': '1' });
    expect(e?.message).toBe('rate limiter unavailable: the cluster primary did not answer a rate limit decision within 1000 ms');
  });

  it('maps an overloaded limiter the same way', () => {
    expect(limiterFailure(new LimiterOverloadedError('10000 rate limit decisions already in flight'))?.status).toBe(503);
  });

  it('leaves other errors alone', () => {
    expect(limiterFailure(new Error('boom'))).toBeNull();
    expect(limiterFailure('nope')).toBeNull();
  });
});
