/**
 * A TokenLimiter that reports to RouterMetrics: admission decision latency by mode and
 * rejections by route and direction. Wrap once per limiter (limiterFor), not per request.
 */
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

  admit(route: string, limit: RateLimitSpec, inputTokens: number): Promise<Decision> | Decision {
    const t0 = performance.now();
    let d: Promise<Decision> | Decision;
    try {
      d = this.inner.admit(route, limit, inputTokens);
    } catch (err) {
      this.metrics.limiterDecision(this.mode, performance.now() - t0);
      throw err;
    }
    if (d instanceof Promise) return d.then((v) => this.seen(route, v, t0), (err: unknown) => this.failed(err, t0));
    return this.seen(route, d, t0);
  }

  chargeOutput(route: string, limit: RateLimitSpec, outputTokens: number): Promise<void> | void {
    return this.inner.chargeOutput(route, limit, outputTokens);
  }

  adjustInput(route: string, limit: RateLimitSpec, delta: number): Promise<void> | void {
    return this.inner.adjustInput(route, limit, delta);
  }

  settle(route: string, limit: RateLimitSpec, inputDelta: number, outputTokens: number): Promise<void> | void {
    return settleCounters(this.inner, route, limit, inputDelta, outputTokens);
  }

  close(): Promise<void> {
    return this.inner.close();
  }

  private seen(route: string, d: Decision, t0: number): Decision {
    this.metrics.limiterDecision(this.mode, performance.now() - t0);
    if (!d.allowed && d.rejectedBy !== null) this.metrics.rateLimitRejected(route, d.rejectedBy);
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
