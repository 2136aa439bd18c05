import { Cluster, Redis, type RedisOptions } from 'ioredis';
import { ADMIT_LUA } from './lua/admit.js';
import { SETTLE_LUA } from './lua/settle.js';
import type { RedisTarget } from './redis-address.js';
import type { RedisLimitSettings } from './redis-settings.js';

/** The limiter's scripts as client commands (ioredis defineCommand: EVALSHA, EVAL on NOSCRIPT). */
export interface LimiterCommands {
  /** Reply: [status, inputUsed, outputUsed, msUntilWindowEnd]. */
  irAdmit(base: string, unit: string, now: string, inLimit: number, outLimit: number, tokens: number): Promise<number[]>;
  /** Input correction and output charge in one call. Reply: [inputCount, outputCount]. */
  irSettle(base: string, unit: string, now: string, delta: number, outputTokens: number): Promise<number[]>;
}

export type LimiterClient = (Redis | Cluster) & LimiterCommands;

export interface ConnectionTuning {
  /** Cap of the reconnect backoff, ms. */
  reconnectCapMs: number;
  /** Initial TCP/TLS connect timeout, ms. */
  connectTimeoutMs: number;
}

export const DEFAULT_TUNING: ConnectionTuning = { reconnectCapMs: 2_000, connectTimeoutMs: 2_000 };

const SCRIPTS = {
  irAdmit: { lua: ADMIT_LUA, numberOfKeys: 1 },
  irSettle: { lua: SETTLE_LUA, numberOfKeys: 1 },
};

/**
 * A client that fails fast instead of queueing: no offline queue, no retries of a request,
 * every command bounded by the settings' timeout, reconnects in the background with capped
 * exponential backoff, auto-pipelining on (one round trip carries many decisions).
 */
export function createLimiterClient(target: RedisTarget, settings: RedisLimitSettings, tuning: ConnectionTuning): LimiterClient {
  const retry = (times: number): number => Math.min(50 * 2 ** Math.min(times, 16), tuning.reconnectCapMs);
  const perNode = {
    username: settings.username ?? undefined,
    password: settings.password ?? undefined,
    tls: settings.tls || target.tls ? {} : undefined,
    protocol: 2 as const,
    commandTimeout: settings.timeoutMs,
    connectTimeout: tuning.connectTimeoutMs,
    maxRetriesPerRequest: 0,
    autoResendUnfulfilledCommands: false,
    connectionName: 'inference-router-limiter',
  } satisfies RedisOptions;
  if (settings.cluster) {
    return new Cluster(target.nodes, {
      enableAutoPipelining: true,
      enableOfflineQueue: false,
      scripts: SCRIPTS,
      clusterRetryStrategy: retry,
      retryDelayOnClusterDown: 50,
      retryDelayOnFailover: 50,
      retryDelayOnTryAgain: 50,
      slotsRefreshTimeout: Math.max(settings.timeoutMs, 1_000),
      redisOptions: perNode,
    }) as LimiterClient;
  }
  const node = target.nodes[0];
  return new Redis({
    ...perNode,
    host: node.host,
    port: node.port,
    db: target.db,
    enableAutoPipelining: true,
    enableOfflineQueue: false,
    retryStrategy: retry,
    scripts: SCRIPTS,
  }) as LimiterClient;
}
