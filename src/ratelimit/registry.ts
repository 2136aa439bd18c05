import type { RateLimitSpec } from '../config/resource-types.js';
import type { TokenLimiter } from './limiter.js';
import type { RedisLimitSettings } from './redis/settings.js';
import { closeRedisLimiters, redisLimiterFor, redisStoreStates } from './redis/clients.js';
import type { RedisLimiter, RedisLimiterOptions } from './redis/limiter.js';

/**
 * Chooses the limiter of a route's rateLimit: the instance-local one (exact across this
 * instance's workers) or the Redis one of its address (one client per address per process).
 */
export class LimiterRegistry {
  private readonly local: TokenLimiter;
  private readonly redis: RedisLimitSettings;
  private readonly options: RedisLimiterOptions;

  constructor(local: TokenLimiter, redis: RedisLimitSettings, options: RedisLimiterOptions) {
    this.local = local;
    this.redis = redis;
    this.options = options;
  }

  limiterFor(spec: RateLimitSpec): TokenLimiter {
    if (spec.global === null) return this.local;
    return redisLimiterFor(spec.global.redis.address, this.redis, this.local, this.options);
  }

  /**
   * Creates the Redis limiters these limits use, so their connections open before traffic
   * arrives, and resolves once each answers (bounded by `maxWaitMs`: a store that is down does
   * not keep the router from starting; its failure mode applies until it answers).
   */
  async warmUp(specs: readonly RateLimitSpec[], maxWaitMs = 3000): Promise<void> {
    const pending = specs.filter((s) => s.global !== null).map((s) => this.limiterFor(s) as RedisLimiter);
    const deadline = Date.now() + maxWaitMs;
    while (pending.some((l) => l.state !== 'up') && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 10));
    }
  }

  /** The global limit stores in use and whether each decides now (metrics: inference_router_ratelimit_store_up). */
  storeStates(): { readonly store: string; readonly up: boolean }[] {
    return redisStoreStates();
  }

  async close(): Promise<void> {
    await closeRedisLimiters();
    await this.local.close();
  }
}
