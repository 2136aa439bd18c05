import type { LimitKey } from './limit-key.js';
import type { RateLimitSpec } from '../config/resource-types.js';
import type { TokenLimiter } from './limiter.js';

/**
 * After an answer: corrects the input counter by `inputDelta` and charges `outputTokens`, in one
 * operation when the limiter offers it (Redis: one script call), else as the two calls.
 */
export async function settleCounters(
  l: TokenLimiter, key: LimitKey, limit: RateLimitSpec, inputDelta: number, outputTokens: number,
): Promise<void> {
  if (inputDelta === 0 && outputTokens === 0) return;
  if (l.settle !== undefined) {
    await l.settle(key, limit, inputDelta, outputTokens);
    return;
  }
  if (inputDelta !== 0) await l.adjustInput(key, limit, inputDelta);
  if (outputTokens > 0) await l.chargeOutput(key, limit, outputTokens);
}
