import type { Cluster, Redis, RedisOptions } from 'ioredis';
import type { RedisTarget } from './address.js';
import type { RedisLimitSettings } from './settings.js';
import { LATE_REPLY_MS } from './late-reply.js';
import { ioredis } from './ioredis-module.js';

/**
 * The limiter's client: one Redis or a Cluster. Its script calls are commands of the limiter's
 * own making (script-command.ts), not commands defined with ioredis's `scripts`.
 */
export type LimiterClient = Redis | Cluster;

export interface ConnectionTuning {
  /** Cap of the reconnect backoff, ms. */
  reconnectCapMs: number;
  /** Initial TCP/TLS connect timeout, ms. */
  connectTimeoutMs: number;
}

export const DEFAULT_TUNING: ConnectionTuning = { reconnectCapMs: 2_000, connectTimeoutMs: 2_000 };

/**
 * A client that fails fast instead of queueing: no offline queue, no retries of a request,
 * every wait bounded by the settings' timeout (the limiter's own timers: late-reply.ts, health.ts,
 * store-limiter.ts close), reconnects in the background with capped exponential backoff. Auto-pipelining is off: the limiter already sends one command per limit key
 * per event-loop turn (RedisLimiter batches), and ioredis would hold each for one more turn.
 */
export function createLimiterClient(target: RedisTarget, settings: RedisLimitSettings, tuning: ConnectionTuning): LimiterClient {
  const retry = (times: number): number => Math.min(50 * 2 ** Math.min(times, 16), tuning.reconnectCapMs);
  const perNode = {
    username: settings.username ?? undefined,
    password: settings.password ?? undefined,
    tls: settings.tls || target.tls ? (settings.tlsCa === null ? {} : { ca: settings.tlsCa }) : undefined,
    protocol: 2 as const,
    // The limiter waits RATE_LIMIT_REDIS_TIMEOUT for a reply itself (late-reply.ts); the client
    // keeps its other commands (PING, INFO, QUIT) longer, as the limiter reads a script call's
    // late reply (its script calls keep no timer of the client's: script-command.ts).
    commandTimeout: Math.max(settings.timeoutMs, LATE_REPLY_MS),
    connectTimeout: tuning.connectTimeoutMs,
    maxRetriesPerRequest: 0,
    autoResendUnfulfilledCommands: false,
    connectionName: 'inference-router-limiter',
  } satisfies RedisOptions;
  if (settings.cluster) {
    const { Cluster } = ioredis();
    return new Cluster(target.nodes, {
      enableAutoPipelining: false,
      enableOfflineQueue: false,
      clusterRetryStrategy: retry,
      retryDelayOnClusterDown: 50,
      retryDelayOnFailover: 50,
      retryDelayOnTryAgain: 50,
      slotsRefreshTimeout: Math.max(settings.timeoutMs, 1_000),
      redisOptions: perNode,
    }) as LimiterClient;
  }
  const node = target.nodes[0];
  const { Redis } = ioredis();
  return new Redis({
    ...perNode,
    host: node.host,
    port: node.port,
    db: target.db,
    enableAutoPipelining: false,
    enableOfflineQueue: false,
    retryStrategy: retry,
  }) as LimiterClient;
}
