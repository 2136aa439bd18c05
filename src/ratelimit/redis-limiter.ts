import type { RateLimitSpec } from '../config/resource-types.js';
import type { Clock, Decision, LimitState, TokenLimiter } from './limiter.js';
import { parseRedisAddress } from './redis-address.js';
import { createLimiterClient, DEFAULT_TUNING, type LimiterClient } from './redis-connection.js';
import { LimitStoreUnavailableError } from './redis-errors.js';
import { StoreHealth, type StoreState } from './redis-health.js';
import type { RedisFailureMode, RedisLimitSettings } from './redis-settings.js';
import { secondsUntilReset } from './windows.js';
import { settleCounters } from './settle.js';

export interface RedisLimiterOptions {
  /**
   * Injected clock (tests): its time is passed to the scripts instead of the Redis server's
   * TIME. Without it, windows follow the Redis server clock, shared by every instance.
   */
  clock?: Clock;
  /** Where the outage / recovery lines go (once per transition). Default: stderr. */
  log?: (message: string) => void;
  /** Delay between health pings while the store is down, ms (default 500). */
  probeIntervalMs?: number;
  /** Cap of the reconnect backoff, ms (default 2000). */
  reconnectCapMs?: number;
  /** Initial connect timeout, ms (default 2000). */
  connectTimeoutMs?: number;
  /** Observability hooks (metrics): a store command failed; a decision was made without the store. */
  onStoreError?: (store: string) => void;
  onFailureModeDecision?: (mode: RedisFailureMode) => void;
}

const STATUS_REJECTED_INPUT = 1;
const STATUS_REJECTED_OUTPUT = 2;
const NO_LIMIT = -1;

/**
 * Global token limiter: counters in Redis shared by every router instance, one Lua script per
 * decision (lua/*.ts), one client per limiter (redis-clients.ts keeps one per address).
 * Semantics are TokenLimiter's (limiter.ts). When Redis fails or is slower than the settings'
 * timeout, the failure mode applies: `local` asks `fallback` (this instance's counters),
 * `open` admits, `closed` rejects with LimitStoreUnavailableError (503, never 429); the circuit
 * stays open, without waiting on Redis, until it answers again.
 */
export class RedisLimiter implements TokenLimiter {
  /** Address as shown in logs and errors (credentials hidden). */
  readonly name: string;
  private readonly client: LimiterClient;
  private readonly health: StoreHealth;
  private readonly fallback: TokenLimiter;
  private readonly mode: RedisFailureMode;
  private readonly clock: Clock | null;
  private readonly bases = new Map<string, string>();
  private readonly onStoreError: ((store: string) => void) | null;
  private readonly onFailureModeDecision: ((mode: RedisFailureMode) => void) | null;

  constructor(address: string, settings: RedisLimitSettings, fallback: TokenLimiter, opts: RedisLimiterOptions = {}) {
    const target = parseRedisAddress(address, settings.cluster);
    const log = opts.log ?? defaultLog;
    this.name = address.replace(/\/\/[^@/]*@/g, '//***@');
    if (target.hadCredentials) {
      log(`rate limit store ${this.name}: credentials in the address are ignored; set REDIS_USERNAME / REDIS_PASSWORD`);
    }
    this.fallback = fallback;
    this.mode = settings.failureMode;
    this.clock = opts.clock ?? null;
    this.onStoreError = opts.onStoreError ?? null;
    this.onFailureModeDecision = opts.onFailureModeDecision ?? null;
    this.client = createLimiterClient(target, settings, {
      reconnectCapMs: opts.reconnectCapMs ?? DEFAULT_TUNING.reconnectCapMs,
      connectTimeoutMs: opts.connectTimeoutMs ?? DEFAULT_TUNING.connectTimeoutMs,
    });
    this.health = new StoreHealth(this.client, {
      name: this.name,
      failureMode: settings.failureMode,
      timeoutMs: settings.timeoutMs,
      probeIntervalMs: opts.probeIntervalMs ?? 500,
      log,
    });
  }

  /** true while decisions are made by Redis (circuit closed). */
  get healthy(): boolean {
    return this.health.state === 'up';
  }

  get state(): StoreState {
    return this.health.state;
  }

  async admit(route: string, limit: RateLimitSpec, inputTokens: number): Promise<Decision> {
    checkAmount(inputTokens, 'input tokens');
    if (this.health.state !== 'up' && !(await this.usable())) return this.admitWithoutStore(route, limit, inputTokens);
    let reply: number[];
    try {
      reply = await this.client.irAdmit(
        this.base(route),
        limit.unit,
        this.now(),
        limit.inputTokensPerUnit ?? NO_LIMIT,
        limit.outputTokensPerUnit ?? NO_LIMIT,
        inputTokens,
      );
    } catch (err) {
      this.storeFailed(err);
      return this.admitWithoutStore(route, limit, inputTokens);
    }
    return toDecision(reply, limit);
  }

  chargeOutput(route: string, limit: RateLimitSpec, outputTokens: number): Promise<void> {
    return this.settle(route, limit, 0, outputTokens);
  }

  adjustInput(route: string, limit: RateLimitSpec, delta: number): Promise<void> {
    return this.settle(route, limit, delta, 0);
  }

  /** adjustInput + chargeOutput in one script call (one Redis command per answer, not two). */
  async settle(route: string, limit: RateLimitSpec, inputDelta: number, outputTokens: number): Promise<void> {
    if (!Number.isSafeInteger(inputDelta)) throw new RangeError(`input token adjustment must be an integer, got ${inputDelta}`);
    checkAmount(outputTokens, 'output tokens');
    if (inputDelta === 0 && outputTokens === 0) return;
    if (this.health.state !== 'up' && !(await this.usable())) {
      if (this.mode === 'local') await settleCounters(this.fallback, route, limit, inputDelta, outputTokens);
      return;
    }
    try {
      await this.client.irSettle(this.base(route), limit.unit, this.now(), inputDelta, outputTokens);
    } catch (err) {
      this.storeFailed(err);
      if (this.mode === 'local') await settleCounters(this.fallback, route, limit, inputDelta, outputTokens);
    }
  }

  /** Closes the Redis client (not the fallback, which belongs to the caller). */
  async close(): Promise<void> {
    this.health.close();
    if (this.client.status === 'ready') {
      try {
        await this.client.quit();
        return;
      } catch {
        // fall through to a hard disconnect
      }
    }
    this.client.disconnect();
  }

  /** Waits (bounded by the timeout) for the first connection; false when Redis is not usable now. */
  private async usable(): Promise<boolean> {
    const settled = this.health.startupSettled();
    if (settled !== null) await settled;
    return this.health.state === 'up';
  }

  private storeFailed(err: unknown): void {
    this.health.markDown((err as Error).message);
    if (this.onStoreError !== null) this.onStoreError(this.name);
  }

  private admitWithoutStore(route: string, limit: RateLimitSpec, inputTokens: number): Decision | Promise<Decision> {
    if (this.onFailureModeDecision !== null) this.onFailureModeDecision(this.mode);
    if (this.mode === 'local') return this.fallback.admit(route, limit, inputTokens);
    if (this.mode === 'closed') throw new LimitStoreUnavailableError(this.name);
    // open: admitted without counting; the counts are unknown, so no limit state is reported.
    const now = this.clock === null ? Date.now() : this.clock();
    return { allowed: true, rejectedBy: null, retryAfterSeconds: secondsUntilReset(limit.unit, now), input: null, output: null };
  }

  private now(): string {
    return this.clock === null ? '' : String(this.clock());
  }

  /** `ir:{<route>}`: the hash tag keeps every key of the route in one Cluster slot. */
  private base(route: string): string {
    let base = this.bases.get(route);
    if (base === undefined) {
      base = `ir:{${route.replace(/[%{}]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)}}`;
      this.bases.set(route, base);
    }
    return base;
  }
}

function toDecision(reply: number[], limit: RateLimitSpec): Decision {
  const status = reply[0];
  const msLeft = reply[3];
  const reset = msLeft <= 1000 ? 1 : Math.ceil(msLeft / 1000);
  return {
    allowed: status === 0,
    rejectedBy: status === STATUS_REJECTED_INPUT ? 'input' : status === STATUS_REJECTED_OUTPUT ? 'output' : null,
    retryAfterSeconds: reset,
    input: state(limit.inputTokensPerUnit, reply[1], reset),
    output: state(limit.outputTokensPerUnit, reply[2], reset),
  };
}

function state(limit: number | null, used: number, reset: number): LimitState | null {
  if (limit === null) return null;
  return { limit, remaining: limit > used ? limit - used : 0, resetSeconds: reset };
}

function checkAmount(n: number, what: string): void {
  if (!Number.isSafeInteger(n) || n < 0) throw new RangeError(`${what} must be a non-negative integer, got ${n}`);
}

function defaultLog(message: string): void {
  process.stderr.write(`${message}\n`);
}
