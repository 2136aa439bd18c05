import type { RateLimitSpec } from '../config/resource-types.js';
import type { LimitKey } from './limit-key.js';
import { admitTerms } from './admit-all.js';
import { isShadow, type Decision, type LimitDirection, type LimitTerm, type TokenLimiter } from './limiter.js';
import { performance } from 'node:perf_hooks';

/** Where a metered limiter reports (observe/metrics.ts RouterMetrics is one). */
export interface LimiterMetricsSink {
  /** One admission decided (or failed) after `ms`, by a limiter of this mode. */
  limiterDecision(mode: 'local' | 'global', ms: number): void;
  /** A shadow limit would have rejected an admission (it did not). */
  shadowRejected?(key: LimitKey, direction: LimitDirection): void;
}

/** t0 of a decision that came synchronously: it is recorded as 0 s, with no clock read. */
const NOT_TIMED = -1;

/**
 * A TokenLimiter that reports admissions to a metrics sink: decision latency by mode, and what
 * shadow limits would have rejected. Rejections are not counted here but once per refused request,
 * under the limit its 429 names (worker/pipeline.ts): a request that several limits refuse (a
 * route's and a tenant's, decided together) is one rejection. A decision that waits (the primary over IPC, Redis) is
 * timed from the moment it was handed over to its answer; one given synchronously (from a lease,
 * well under a microsecond) is recorded as 0 s, below the histogram's lowest bucket either way:
 * two clock reads per request cost more than such a decision. Everything else goes straight to the inner limiter
 * (settle only when the inner one has it). Wrap once per limiter (meteredLimiters), not per request.
 */
export class MeteredLimiter implements TokenLimiter {
  readonly settle?: (key: LimitKey, limit: RateLimitSpec, inputDelta: number, outputTokens: number, byFailureMode?: boolean, admittedAt?: number, window?: number) => Promise<void> | void;

  constructor(
    private readonly inner: TokenLimiter,
    private readonly mode: 'local' | 'global',
    private readonly metrics: LimiterMetricsSink,
  ) {
    if (inner.settle !== undefined) this.settle = inner.settle.bind(inner);
  }

  admit(key: LimitKey, limit: RateLimitSpec, inputTokens: number): Promise<Decision> | Decision {
    let d: Promise<Decision> | Decision;
    try {
      d = this.inner.admit(key, limit, inputTokens);
    } catch (err) {
      this.metrics.limiterDecision(this.mode, 0);
      throw err;
    }
    if (d instanceof Promise) {
      const t0 = performance.now();
      return d.then((v) => this.seen(key, limit, v, t0), (err: unknown) => this.failed(err, t0));
    }
    return this.seen(key, limit, d, NOT_TIMED);
  }

  admitAll(terms: readonly LimitTerm[], inputTokens: number): Promise<Decision[]> | Decision[] {
    let d: Promise<Decision[]> | Decision[];
    try {
      d = this.inner.admitAll !== undefined
        ? this.inner.admitAll(terms, inputTokens)
        : admitTerms(terms.map((t) => ({ key: t.key, limit: t.limit, limiter: this.inner })), inputTokens);
    } catch (err) {
      this.metrics.limiterDecision(this.mode, 0);
      throw err;
    }
    if (d instanceof Promise) {
      const t0 = performance.now();
      return d.then((v) => this.seenAll(terms, v, t0), (err: unknown) => this.failed(err, t0));
    }
    return this.seenAll(terms, d, NOT_TIMED);
  }

  chargeOutput(key: LimitKey, limit: RateLimitSpec, outputTokens: number): Promise<void> | void {
    return this.inner.chargeOutput(key, limit, outputTokens);
  }

  adjustInput(key: LimitKey, limit: RateLimitSpec, delta: number, byFailureMode?: boolean, admittedAt?: number, window?: number): Promise<void> | void {
    return this.inner.adjustInput(key, limit, delta, byFailureMode, admittedAt, window);
  }

  close(): Promise<void> {
    return this.inner.close();
  }

  private seen(key: LimitKey, limit: RateLimitSpec, d: Decision, t0: number): Decision {
    this.metrics.limiterDecision(this.mode, t0 === NOT_TIMED ? 0 : performance.now() - t0);
    // A shadow limit asked alone (admit-all.ts admitInOrder, a store without admitAll).
    if (!d.allowed && d.rejectedBy !== null && isShadow(limit) && this.metrics.shadowRejected !== undefined) this.metrics.shadowRejected(key, d.rejectedBy);
    return d;
  }

  private seenAll(terms: readonly LimitTerm[], ds: Decision[], t0: number): Decision[] {
    this.metrics.limiterDecision(this.mode, t0 === NOT_TIMED ? 0 : performance.now() - t0);
    for (let i = 0; i < ds.length; i++) {
      const d = ds[i];
      if (d.allowed || d.rejectedBy === null) continue;
      if (isShadow(terms[i].limit) && this.metrics.shadowRejected !== undefined) this.metrics.shadowRejected(terms[i].key, d.rejectedBy);
    }
    return ds;
  }

  private failed(err: unknown, t0: number): never {
    this.metrics.limiterDecision(this.mode, performance.now() - t0);
    throw err;
  }
}

/** Wraps each distinct limiter once (the same inner limiter always yields the same wrapper). */
export function meteredLimiters(metrics: LimiterMetricsSink): (inner: TokenLimiter, spec: RateLimitSpec) => TokenLimiter {
  const wrapped = new WeakMap<TokenLimiter, TokenLimiter>();
  return (inner, spec) => {
    let w = wrapped.get(inner);
    if (w === undefined) {
      w = new MeteredLimiter(inner, spec.global ? 'global' : 'local', metrics);
      wrapped.set(inner, w);
    }
    return w;
  };
}
