/**
 * A TokenLimiter that reports to RouterMetrics: admission decision latency by mode and
 * rejections by key and direction. Wrap once per limiter (limiterFor), not per request.
 */
import type { LimitKey } from './limit-key.js';
import type { RateLimitSpec } from '../config/resource-types.js';
import type { Decision, TokenLimiter } from './limiter.js';
import type { RouterMetrics } from '../observe/metrics.js';
import { settleCounters } from './settle.js';

export class MeteredLimiter implements TokenLimiter {
  constructor(
    private readonly inner: TokenLimiter,
    private readonly mode: 'local' | 'global',
    private readonly metrics: RouterMetrics,
  ) {}

  admit(key: LimitKey, limit: RateLimitSpec, inputTokens: number): Promise<Decision> | Decision {
    const t0 = performance.now();
    let d: Promise<Decision> | Decision;
    try {
      d = this.inner.admit(key, limit, inputTokens);
    } catch (err) {
      this.metrics.limiterDecision(this.mode, performance.now() - t0);
      throw err;
    }
    if (d instanceof Promise) return d.then((v) => this.seen(key, v, t0), (err: unknown) => this.failed(err, t0));
    return this.seen(key, d, t0);
  }

  chargeOutput(key: LimitKey, limit: RateLimitSpec, outputTokens: number): Promise<void> | void {
    return this.inner.chargeOutput(key, limit, outputTokens);
  }

  adjustInput(key: LimitKey, limit: RateLimitSpec, delta: number): Promise<void> | void {
    return this.inner.adjustInput(key, limit, delta);
  }

  settle(key: LimitKey, limit: RateLimitSpec, inputDelta: number, outputTokens: number): Promise<void> | void {
    return settleCounters(this.inner, key, limit, inputDelta, outputTokens);
  }

  close(): Promise<void> {
    return this.inner.close();
  }

  private seen(key: LimitKey, d: Decision, t0: number): Decision {
    this.metrics.limiterDecision(this.mode, performance.now() - t0);
    if (!d.allowed && d.rejectedBy !== null) this.metrics.rateLimitRejected(key, d.rejectedBy);
    return d;
  }

  private failed(err: unknown, t0: number): never {
    this.metrics.limiterDecision(this.mode, performance.now() - t0);
    throw err;
  }
}

/** Wraps each distinct limiter once (the same inner limiter always yields the same wrapper). */
export function meteredLimiters(metrics: RouterMetrics): (inner: TokenLimiter, spec: RateLimitSpec) => TokenLimiter {
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
