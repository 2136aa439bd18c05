import type { Cluster, Redis, RedisOptions } from 'ioredis';
import type { Buffer } from 'node:buffer';
import { BATCH_LUA } from './lua/batch.js';
import { ADMIT_ALL_LUA } from './lua/admit-all.js';
import type { RedisTarget } from './address.js';
import type { RedisLimitSettings } from './settings.js';
import { LATE_REPLY_MS } from './late-reply.js';
import { ioredis } from './ioredis-module.js';

/** The limiter's script as a client command (ioredis defineCommand: EVALSHA, EVAL on NOSCRIPT). */
export interface LimiterCommands {
  /**
   * One batch of a limit key (lua/batch.ts): the summed input correction and output charge, a
   * lease asked for and the unused tokens of leases given back (with the start of the window they
   * were lent in and their size when lent), then one admission per entry of `tokens` under the two
   * limits (-1 = none), with the window's incarnation the give-backs expect ('' on a plain Redis) and
   * the input tokens of the give-backs in the input correction (>= 0: what the script drops when
   * the incarnation is not the expected one, the positive corrections staying), and the start of the
   * window the input correction belongs to (-1: not known; in another window none of it is applied).
   * Reply: the bytes of one string, msUntilWindowEnd, inputUsedBeforeAdmissions, outputUsed,
   * leaseLent, windowStart, recallFlag, leasesOut and incarnation, then a status digit per admission
   * (script-reply.ts reads it). The Buffer form of the script's command (ioredis defines both).
   */
  irBatchBuffer(
    base: string, unit: string, now: string, inputDelta: number, outputTokens: number,
    inLimit: number, outLimit: number, lease: number, back: number, backWindow: number, backLent: number, incarnation: string, givenBack: number, correctionWindow: number, tokens: readonly number[],
  ): Promise<Buffer>;
  /**
   * Admissions against several limits (lua/admit-all.ts): numKeys, their key bases, then now, the
   * number of limits, per limit unit, input limit, output limit and shadow flag, then the tokens of
   * each admission. Reply: the bytes of one string, per limit msUntilWindowEnd, inputUsedBefore,
   * outputUsed and leasesOut, then per admission a status digit per limit (script-reply.ts reads
   * it). The Buffer form of the script's command.
   */
  irAdmitAllBuffer(numKeys: number, ...keysAndArgs: (string | number)[]): Promise<Buffer>;
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
  irBatch: { lua: BATCH_LUA, numberOfKeys: 1 },
  irAdmitAll: { lua: ADMIT_ALL_LUA },
};

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
    // The limiter waits RATE_LIMIT_REDIS_TIMEOUT for a script's reply itself (late-reply.ts); the
    // client keeps the command longer, so that a reply Redis sends after a stall is still read.
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
  const { Redis } = ioredis();
  return new Redis({
    ...perNode,
    host: node.host,
    port: node.port,
    db: target.db,
    enableAutoPipelining: false,
    enableOfflineQueue: false,
    retryStrategy: retry,
    scripts: SCRIPTS,
  }) as LimiterClient;
}
