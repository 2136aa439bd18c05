import type { TokenLimiter } from '../limiter.js';
import { FailureModeLimiter } from './failure-mode.js';
import type { StoreState } from './health.js';
import type { RedisLimitSettings, RedisFailureMode } from './settings.js';
import { RedisStoreLimiter, type RedisStoreOptions } from './store-limiter.js';

export interface RedisLimiterOptions extends RedisStoreOptions {
  /** Observability hook (metrics): an admission was decided by the failure mode. */
  onFailureModeDecision?: (mode: RedisFailureMode) => void;
}

/**
 * Global token limiter of one Redis address: the Redis store (store-limiter.ts) wrapped in the
 * settings' failure mode (failure-mode.ts), which asks `fallback` in the `local` mode.
 * One per address per process (clients.ts).
 */
export class RedisLimiter extends FailureModeLimiter {
  private readonly redis: RedisStoreLimiter;

  constructor(address: string, settings: RedisLimitSettings, fallback: TokenLimiter, opts: RedisLimiterOptions = {}) {
    const redis = new RedisStoreLimiter(address, settings, opts);
    super(redis, settings.failureMode, fallback, { clock: opts.clock, onFailureModeDecision: opts.onFailureModeDecision });
    this.redis = redis;
  }

  /** Address as shown in logs and errors (credentials hidden). */
  get name(): string {
    return this.redis.name;
  }

  /** up: decisions are made by Redis; starting / down: by the failure mode. */
  get state(): StoreState {
    return this.redis.state;
  }

  /** Redis decides now (its outage after a refusal is over only once a script call answered): the store gauge. */
  get decides(): boolean {
    return this.redis.decides;
  }
}
