import type { LimitKey } from './limit-key.js';
import type { RateLimitSpec } from '../config/resource-types.js';

export type LimitDirection = 'input' | 'output';

/** State of one counter after a decision, for the x-ratelimit-* headers. */
export interface LimitState {
  limit: number;
  remaining: number;
  /** Whole seconds until the window resets (>= 1). */
  resetSeconds: number;
}

export interface Decision {
  allowed: boolean;
  /** Which limit rejected (null when allowed). */
  rejectedBy: LimitDirection | null;
  /** Whole seconds until the window resets (retry-after on 429). */
  retryAfterSeconds: number;
  /** null when that direction has no limit. */
  input: LimitState | null;
  output: LimitState | null;
  /**
   * Set (true) only on a decision the failure mode of a store took while the store was
   * unavailable (redis/failure-mode.ts): what it charged is in the fallback's counters (`local`)
   * or nowhere (`open`), not in the store. The request's input corrections and give-backs go there
   * too (settle's and adjustInput's `byFailureMode`). Absent on every other decision.
   */
  byFailureMode?: true;
  /**
   * Set only on a decision the `open` failure mode took because the store's call failed or timed
   * out, when the store may still run that call late and charge it (LateCharge). Absent otherwise.
   */
  lateCharge?: LateCharge;
  /**
   * Set only by a store that keeps its windows by a clock of its own (Redis: its TIME): the start
   * (epoch ms of that clock) of the window this decision charged. The request's input corrections
   * and give-backs carry it (adjustInput's and settle's `window`), and the store applies them only
   * while that window is on by its own clock: a router whose clock differs from the store's near a
   * window's end neither drops a give-back its window still owes nor takes one off the next window.
   * Absent: the window is the process clock's (the local limit's).
   */
  window?: number;
}

/**
 * A charge a store may make after its call was given up on (Redis stalled past the timeout, then
 * ran it), of an admission the `open` failure mode admitted meanwhile: when the request gives its
 * input back (it never reached a pod), giveBack() undoes that charge; when its answer corrects the
 * input count (the backend's prompt tokens), correct() applies the correction to it; each now if
 * the charge was made, else when it is (redis/late-charge.ts).
 */
export interface LateCharge {
  giveBack(): void;
  correct(delta: number): void;
}

/** One limit a request must fit: its key and its spec (`limit.mode` shadow: never blocks). */
export interface LimitTerm {
  readonly key: LimitKey;
  readonly limit: RateLimitSpec;
}

/** Whether a limit only counts and reports (shadow mode), never rejecting. */
export function isShadow(limit: RateLimitSpec): boolean {
  return limit.mode === 'shadow';
}

/**
 * Token limiter semantics (shared by local and global mode, docs/rate-limiting.md):
 * - counters per limit key (limit-key.ts) and direction, in fixed windows aligned to UTC
 *   (second/minute/hour/day/calendar month);
 * - admit(): atomically reject when input counter + inputTokens > inputTokensPerUnit, or when the
 *   output counter >= outputTokensPerUnit; a rejection charges nothing; admission charges input;
 * - chargeOutput(): adds output tokens to the current window (all of them, even past the limit);
 * - adjustInput(): corrects the current window's input counter by delta (may be negative, floors at 0).
 */
export interface TokenLimiter {
  admit(key: LimitKey, limit: RateLimitSpec, inputTokens: number): Promise<Decision> | Decision;
  chargeOutput(key: LimitKey, limit: RateLimitSpec, outputTokens: number): Promise<void> | void;
  /**
   * `byFailureMode`: the admission this corrects was decided by a failure mode (its Decision's
   * byFailureMode), so the correction goes where that charged it, not to the store; only a limiter
   * with a failure mode (redis/failure-mode.ts) reads it. `admittedAt`: Date.now() when that
   * admission began, before any store was asked (absent or <= 0: not known); only the Redis store
   * reads it, to keep a give-back from an instance that never held the charge (a restart:
   * redis/store-limiter.ts). `window`: the admission's Decision.window (< 0 or absent: not known);
   * only the Redis store reads it, and then applies the correction only in that window.
   */
  adjustInput(key: LimitKey, limit: RateLimitSpec, delta: number, byFailureMode?: boolean, admittedAt?: number, window?: number): Promise<void> | void;
  /**
   * Optional: adjustInput(inputDelta) and chargeOutput(outputTokens) in one operation, when the
   * store can do both in one round trip (Redis). Callers fall back to the two calls without it.
   * `byFailureMode`, `admittedAt` and `window` as for adjustInput (they concern the input
   * correction; the output is charged where the limiter counts now).
   */
  settle?(key: LimitKey, limit: RateLimitSpec, inputDelta: number, outputTokens: number, byFailureMode?: boolean, admittedAt?: number, window?: number): Promise<void> | void;
  /**
   * One admission against several limits (route and tenant), atomically: every term gets its own
   * decision (decided as admit() would, against counts that include nothing of this request);
   * when every term that is not shadow allows, `inputTokens` is charged to every term (shadow
   * ones too, even past their limit); else to none. admit-all.ts composes limiters without it.
   */
  admitAll?(terms: readonly LimitTerm[], inputTokens: number): Promise<Decision[]> | Decision[];
  close(): Promise<void>;
}
