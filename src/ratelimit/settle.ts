import type { LimitKey } from './limit-key.js';
import type { RateLimitSpec } from '../config/resource-types.js';
import type { TokenLimiter } from './limiter.js';

/**
 * After an answer: corrects the input counter by `inputDelta` and charges `outputTokens`, in one
 * operation when the limiter offers it (Redis: one script call), else as the two calls.
 * Synchronous when the limiter is (a local lease): a Promise only when there is something to wait for.
 */
export function settleCounters(
  l: TokenLimiter, key: LimitKey, limit: RateLimitSpec, inputDelta: number, outputTokens: number,
  /** The admission was decided by a failure mode (Decision.byFailureMode): its correction goes where that charged it. */
  byFailureMode = false,
  /** Date.now() when that admission began (<= 0: not known; TokenLimiter.adjustInput). */
  admittedAt = 0,
  /** The admission's Decision.window (< 0: not known; TokenLimiter.adjustInput). */
  window = -1,
): Promise<void> | void {
  if (inputDelta === 0 && outputTokens === 0) return;
  if (l.settle !== undefined) return l.settle(key, limit, inputDelta, outputTokens, byFailureMode, admittedAt, window);
  const adjusted = inputDelta !== 0 ? l.adjustInput(key, limit, inputDelta, byFailureMode, admittedAt, window) : undefined;
  if (adjusted instanceof Promise) return adjusted.then(() => (outputTokens > 0 ? l.chargeOutput(key, limit, outputTokens) : undefined));
  if (outputTokens > 0) return l.chargeOutput(key, limit, outputTokens);
}
