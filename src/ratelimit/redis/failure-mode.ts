import { systemClock, type Clock } from '../../clock.js';
import type { RateLimitSpec } from '../../config/resource-types.js';
import { LimitStoreUnavailableError } from '../errors.js';
import type { LimitKey } from '../limit-key.js';
import type { Decision, LimitTerm, TokenLimiter } from '../limiter.js';
import { admitTerms } from '../admit-all.js';
import { settleCounters } from '../settle.js';
import { secondsUntilReset } from '../windows.js';
import type { RedisFailureMode } from './settings.js';

export interface FailureModeOptions {
  /** Clock of the `open` mode's reset seconds (default: the system clock). */
  clock?: Clock;
  /** Observability hook (metrics): an admission was decided by the failure mode. */
  onFailureModeDecision?: (mode: RedisFailureMode) => void;
}

/**
 * A limiter around a store that may be unavailable (the Redis store): every operation goes to
 * the store; one the store cannot take (LimitStoreUnavailableError) follows the failure mode.
 * `local` asks `fallback` (this instance's counters); `open` admits without counting and drops
 * the settles; `closed` rejects admissions with the store's error (503, never 429) and drops the
 * settles. Any other error (a bad token count) passes through.
 */
export class FailureModeLimiter implements TokenLimiter {
  private readonly store: TokenLimiter;
  private readonly mode: RedisFailureMode;
  private readonly fallback: TokenLimiter;
  private readonly clock: Clock;
  private readonly onFailureModeDecision: ((mode: RedisFailureMode) => void) | null;

  constructor(store: TokenLimiter, mode: RedisFailureMode, fallback: TokenLimiter, opts: FailureModeOptions = {}) {
    this.store = store;
    this.mode = mode;
    this.fallback = fallback;
    this.clock = opts.clock ?? systemClock;
    this.onFailureModeDecision = opts.onFailureModeDecision ?? null;
  }

  /** The store's decision; one the store cannot give follows the failure mode (one `then`, no async frame). */
  admit(key: LimitKey, limit: RateLimitSpec, inputTokens: number): Promise<Decision> | Decision {
    let d: Promise<Decision> | Decision;
    try {
      d = this.store.admit(key, limit, inputTokens);
    } catch (err) {
      return this.admitWithout(err, key, limit, inputTokens);
    }
    if (!(d instanceof Promise)) return d;
    return d.then(undefined, (err: unknown) => this.admitWithout(err, key, limit, inputTokens));
  }

  private admitWithout(err: unknown, key: LimitKey, limit: RateLimitSpec, inputTokens: number): Promise<Decision> | Decision {
    if (!(err instanceof LimitStoreUnavailableError)) throw err;
    if (this.onFailureModeDecision !== null) this.onFailureModeDecision(this.mode);
    if (this.mode === 'local') {
      const d = this.fallback.admit(key, limit, inputTokens);
      return d instanceof Promise ? d.then(byFailureMode) : byFailureMode(d);
    }
    if (this.mode === 'closed') throw err;
    // open: admitted without counting; the counts are unknown, so no limit state is reported.
    const d: Decision = { allowed: true, rejectedBy: null, retryAfterSeconds: secondsUntilReset(limit.unit, this.clock()), input: null, output: null, byFailureMode: true };
    // What the store may still charge late, undone if the request gives its input back (limiter.ts LateCharge).
    if (err.lateCharge !== null) d.lateCharge = err.lateCharge;
    return d;
  }

  /** A multi-limit admission (limiter.ts admitAll) by the store, or as the failure mode says (one `then`, no async frame). */
  admitAll(terms: readonly LimitTerm[], inputTokens: number): Promise<Decision[]> | Decision[] {
    let d: Promise<Decision[]> | Decision[];
    try {
      d = this.store.admitAll !== undefined
        ? this.store.admitAll(terms, inputTokens)
        : admitTerms(terms.map((t) => ({ key: t.key, limit: t.limit, limiter: this.store })), inputTokens);
    } catch (err) {
      return this.admitAllWithout(err, terms, inputTokens);
    }
    if (!(d instanceof Promise)) return d;
    return d.then(undefined, (err: unknown) => this.admitAllWithout(err, terms, inputTokens));
  }

  private admitAllWithout(err: unknown, terms: readonly LimitTerm[], inputTokens: number): Promise<Decision[]> | Decision[] {
    if (!(err instanceof LimitStoreUnavailableError)) throw err;
    if (this.onFailureModeDecision !== null) this.onFailureModeDecision(this.mode);
    if (this.mode === 'local') {
      const ds = admitTerms(terms.map((t) => ({ key: t.key, limit: t.limit, limiter: this.fallback })), inputTokens);
      return ds instanceof Promise ? ds.then(allByFailureMode) : allByFailureMode(ds);
    }
    if (this.mode === 'closed') throw err;
    const open: Decision = { allowed: true, rejectedBy: null, retryAfterSeconds: secondsUntilReset(terms[0].limit.unit, this.clock()), input: null, output: null, byFailureMode: true };
    const ds = terms.map(() => open);
    // One late charge covers every limit of the call: carried by the first decision only.
    if (err.lateCharge !== null) ds[0] = { ...open, lateCharge: err.lateCharge };
    return ds;
  }

  chargeOutput(key: LimitKey, limit: RateLimitSpec, outputTokens: number): Promise<void> | void {
    return this.settle(key, limit, 0, outputTokens);
  }

  adjustInput(key: LimitKey, limit: RateLimitSpec, delta: number, byFailureMode = false, admittedAt = 0, window = -1): Promise<void> | void {
    return this.settle(key, limit, delta, 0, byFailureMode, admittedAt, window);
  }

  /**
   * Each charge settles against the store that holds it. The input correction (or give-back) of
   * an admission goes where that admission was charged: the store, or, for one the failure mode
   * decided (`byFailureMode`), the local counters (`local`) or nowhere (`open`: nothing was
   * charged), even once the store is back: it never charged that request, so a refund must not
   * lower its count. When the store that charged it cannot take it, it is dropped: the fallback
   * never had that charge either. The output is usage, charged where the limits are counted when
   * the answer ends: the store, or, while it is unavailable, the local counters (`local`).
   */
  settle(key: LimitKey, limit: RateLimitSpec, inputDelta: number, outputTokens: number, byFailureMode = false, admittedAt = 0, window = -1): Promise<void> | void {
    if (byFailureMode && inputDelta !== 0) {
      const corrected = this.mode === 'local' ? settleCounters(this.fallback, key, limit, inputDelta, 0) : undefined;
      const charged = outputTokens > 0 ? this.settle(key, limit, 0, outputTokens) : undefined;
      if (corrected instanceof Promise) return charged instanceof Promise ? corrected.then(() => charged) : corrected;
      return charged;
    }
    let done: Promise<void> | void;
    try {
      done = settleCounters(this.store, key, limit, inputDelta, outputTokens, false, admittedAt, window);
    } catch (err) {
      return this.settleWithout(err, key, limit, outputTokens);
    }
    if (done instanceof Promise) return done.then(undefined, (err: unknown) => this.settleWithout(err, key, limit, outputTokens));
  }

  /**
   * The store did not take a settle: its output goes to the local counters (`local`); its input
   * correction is not theirs (a give-back the store holds for when it answers again: held-give-backs.ts).
   */
  private settleWithout(err: unknown, key: LimitKey, limit: RateLimitSpec, outputTokens: number): Promise<void> | void {
    if (!(err instanceof LimitStoreUnavailableError)) throw err;
    if (this.mode === 'local') return settleCounters(this.fallback, key, limit, 0, outputTokens);
  }

  /** Closes the store (not the fallback, which belongs to the caller). */
  close(): Promise<void> {
    return this.store.close();
  }
}

/** Marks a decision of the fallback as the failure mode's (limiter.ts Decision.byFailureMode). */
function byFailureMode(d: Decision): Decision {
  d.byFailureMode = true;
  return d;
}

function allByFailureMode(ds: Decision[]): Decision[] {
  for (let i = 0; i < ds.length; i++) ds[i].byFailureMode = true;
  return ds;
}
