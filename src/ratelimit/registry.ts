import type { RateLimitSpec } from '../config/resource-types.js';
import type { TokenLimiter } from './limiter.js';
import type { RedisLimitSettings } from './redis/settings.js';
import { closeRedisLimiters, closeRetiredRedisLimiters, redisAddressKey, redisLimiterFor, redisStoreStates } from './redis/clients.js';
import type { RedisLimiter, RedisLimiterOptions } from './redis/limiter.js';

/**
 * How long a Redis store no configuration names any more (a reload moved its limits to another
 * address, or removed them) keeps its connection: requests admitted by it before the change still
 * settle their output there. Then it is closed. Meanwhile it is left out of the metrics.
 */
export const RETIRED_STORE_CLOSE_MS = 10 * 60_000;

/**
 * Chooses the limiter of a route's rateLimit: the instance-local one (exact across this
 * instance's workers) or the Redis one of its address (one client per address per process).
 * `configured()` gives every limit the configuration names now (the routes' and the tenants'):
 * a store none of them names is retired (retire()).
 */
export class LimiterRegistry {
  private readonly local: TokenLimiter;
  private readonly redis: RedisLimitSettings;
  private readonly options: RedisLimiterOptions;
  private readonly configured: () => Iterable<RateLimitSpec>;
  /** The addresses (redisAddressKey) named by no configuration since (clock ms), for retire(). */
  private readonly unnamedSince = new Map<string, number>();

  constructor(local: TokenLimiter, redis: RedisLimitSettings, options: RedisLimiterOptions, configured: () => Iterable<RateLimitSpec> = () => []) {
    this.local = local;
    this.redis = redis;
    this.options = options;
    this.configured = configured;
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

  /**
   * The global limit stores the configuration names and whether each decides now (metrics:
   * inference_router_ratelimit_store_up). A store only a previous configuration named is left out:
   * its gauge would stay 0 for good once that Redis is taken away, an alert that never ends.
   */
  storeStates(): { readonly store: string; readonly up: boolean }[] {
    const named = this.namedAddresses();
    return redisStoreStates((key) => named.has(key));
  }

  /**
   * Closes the stores no configuration has named for RETIRED_STORE_CLOSE_MS by `now` (called every
   * minute): their clients would otherwise reconnect for good to a Redis that may be gone.
   */
  async retire(now: number): Promise<void> {
    const named = this.namedAddresses();
    for (const key of this.unnamedSince.keys()) if (named.has(key)) this.unnamedSince.delete(key);
    await closeRetiredRedisLimiters((key) => {
      if (named.has(key)) return false;
      const since = this.unnamedSince.get(key);
      if (since === undefined) {
        this.unnamedSince.set(key, now);
        return false;
      }
      if (now - since < RETIRED_STORE_CLOSE_MS) return false;
      this.unnamedSince.delete(key);
      return true;
    });
  }

  private namedAddresses(): Set<string> {
    const named = new Set<string>();
    for (const spec of this.configured()) if (spec.global !== null) named.add(redisAddressKey(spec.global.redis.address));
    return named;
  }

  async close(): Promise<void> {
    await closeRedisLimiters();
    await this.local.close();
  }
}
