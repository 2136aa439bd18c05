import type { TokenLimiter } from '../../../src/ratelimit/limiter.js';

/** A fallback limiter that must not be used: proves every decision came from Redis. */
export const NO_FALLBACK: TokenLimiter = {
  admit: () => {
    throw new Error('fallback used: Redis did not decide');
  },
  chargeOutput: () => {
    throw new Error('fallback used: Redis did not decide');
  },
  adjustInput: () => {
    throw new Error('fallback used: Redis did not decide');
  },
  close: async () => {},
};
