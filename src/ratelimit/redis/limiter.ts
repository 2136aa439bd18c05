import type { RateLimitSpec, WindowUnit } from '../../config/resource-types.js';
import type { Clock } from '../../clock.js';
import type { Decision, TokenLimiter } from '../limiter.js';
import { Batch } from './batch.js';
import { parseRedisAddress } from './address.js';
import { createLimiterClient, DEFAULT_TUNING, type LimiterClient } from './connection.js';
import { LimitStoreUnavailableError } from '../errors.js';
import { StoreHealth, type StoreState } from './health.js';
import type { RedisFailureMode, RedisLimitSettings } from './settings.js';
import { secondsUntilReset } from '../windows.js';
import { settleCounters } from '../settle.js';
import { tokenCountError, tokenDeltaError } from '../token-amounts.js';

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

/**
 * Global token limiter: counters in Redis shared by every router instance, one client per
 * limiter (redis-clients.ts keeps one per address). Semantics are TokenLimiter's (limiter.ts).
 *
 * Batching: the operations issued during one event-loop turn are collected per route (and unit,
 * clock reading and limit values) and sent when the turn ends (setImmediate: after all of the
 * turn's I/O callbacks) as one call of the batch script (lua/batch.ts), which applies the summed
 * settles, then decides each admission in arrival order by the admission rule, atomically. Each
 * caller gets its own decision back. Settles with no admission of their route in the turn wait
 * one more turn for one to ride along with.
 *
 * When Redis fails or is slower than the settings' timeout (which bounds each batch call), every
 * operation of the batch follows the failure mode: `local` asks `fallback` (this instance's
 * counters), `open` admits, `closed` rejects with LimitStoreUnavailableError (503, never 429);
 * the circuit stays open, without waiting on Redis, until it answers again.
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
  /** Batches not sent yet, by route, unit and clock reading. */
  private pending = new Map<string, Batch>();
  /** Batches of this turn replaced in `pending` (full, or another limit), sent before it. */
  private spilled: Batch[] = [];
  private flushScheduled = false;

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

  get state(): StoreState {
    return this.health.state;
  }

  admit(route: string, limit: RateLimitSpec, inputTokens: number): Promise<Decision> {
    const invalid = tokenCountError(inputTokens, 'input tokens');
    if (invalid !== null) return Promise.reject(invalid);
    if (this.health.state === 'up') return this.enqueueAdmission(route, limit, inputTokens);
    return this.admitOnceUsable(route, limit, inputTokens);
  }

  chargeOutput(route: string, limit: RateLimitSpec, outputTokens: number): Promise<void> {
    return this.settle(route, limit, 0, outputTokens);
  }

  adjustInput(route: string, limit: RateLimitSpec, delta: number): Promise<void> {
    return this.settle(route, limit, delta, 0);
  }

  /** adjustInput + chargeOutput in one operation (batched with the turn's other operations). */
  settle(route: string, limit: RateLimitSpec, inputDelta: number, outputTokens: number): Promise<void> {
    const invalid = tokenDeltaError(inputDelta, 'input token adjustment') ?? tokenCountError(outputTokens, 'output tokens');
    if (invalid !== null) return Promise.reject(invalid);
    if (inputDelta === 0 && outputTokens === 0) return Promise.resolve();
    if (this.health.state === 'up') return this.enqueueSettle(route, limit, inputDelta, outputTokens);
    return this.settleOnceUsable(route, limit, inputDelta, outputTokens);
  }

  /** Closes the Redis client (not the fallback, which belongs to the caller). */
  async close(): Promise<void> {
    this.flushAll(); // what was collected goes out (or to the failure mode) before the client closes
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

  private async admitOnceUsable(route: string, limit: RateLimitSpec, inputTokens: number): Promise<Decision> {
    if (!(await this.usable())) return this.admitWithoutStore(route, limit, inputTokens);
    return this.enqueueAdmission(route, limit, inputTokens);
  }

  private async settleOnceUsable(route: string, limit: RateLimitSpec, inputDelta: number, outputTokens: number): Promise<void> {
    if (!(await this.usable())) {
      if (this.mode === 'local') await settleCounters(this.fallback, route, limit, inputDelta, outputTokens);
      return;
    }
    await this.enqueueSettle(route, limit, inputDelta, outputTokens);
  }

  /** Joins this turn's batch of the route; the batch goes out when the turn ends. */
  private enqueueAdmission(route: string, limit: RateLimitSpec, inputTokens: number): Promise<Decision> {
    return this.batchFor(route, limit, true).admit(limit, inputTokens);
  }

  /**
   * Joins the route's pending batch. A batch of settles alone waits one more turn for an admission
   * of its route to ride along with, then goes out on its own.
   */
  private enqueueSettle(route: string, limit: RateLimitSpec, inputDelta: number, outputTokens: number): Promise<void> {
    return this.batchFor(route, limit, false).settle(limit, inputDelta, outputTokens);
  }

  /**
   * The route's pending batch (same unit and clock reading), or a new one; an admission the
   * pending batch does not accept (full, or other limit values) spills it and starts another.
   */
  private batchFor(route: string, limit: RateLimitSpec, admission: boolean): Batch {
    const now = this.now();
    const key = batchKey(route, limit.unit, now);
    let batch = this.pending.get(key);
    if (batch === undefined || (admission && !batch.accepts(limit))) {
      if (batch !== undefined) this.spilled.push(batch);
      batch = new Batch(route, this.base(route), limit.unit, now);
      this.pending.set(key, batch);
    }
    this.scheduleFlush();
    return batch;
  }

  private scheduleFlush(): void {
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    setImmediate(this.flush);
  }

  /**
   * End of a turn (after its I/O callbacks): sends every batch with an admission, and the batches
   * of settles alone that already waited a turn; the others wait for the next turn.
   */
  private readonly flush = (): void => {
    this.flushScheduled = false;
    if (this.spilled.length > 0) {
      const spilled = this.spilled;
      this.spilled = [];
      for (const b of spilled) this.send(b);
    }
    for (const [key, b] of this.pending) {
      if (b.admissions.length === 0 && !b.waited) {
        b.waited = true;
        continue;
      }
      this.pending.delete(key);
      this.send(b);
    }
    if (this.pending.size > 0) this.scheduleFlush(); // setImmediate from here: the next turn
  };

  /** Sends every pending batch now (the limiter closes). */
  private flushAll(): void {
    const spilled = this.spilled;
    const pending = this.pending;
    this.spilled = [];
    this.pending = new Map();
    for (const b of spilled) this.send(b);
    for (const b of pending.values()) this.send(b);
  }

  private send(b: Batch): void {
    if (this.health.state !== 'up') {
      this.withoutStore(b);
      return;
    }
    this.client.irBatch(b.base, b.unit, b.now, b.inputDelta, b.outputTokens, b.inLimit, b.outLimit, b.tokens).then(
      (reply) => b.answer(reply),
      (err: unknown) => {
        this.storeFailed(err);
        this.withoutStore(b);
      },
    );
  }

  private storeFailed(err: unknown): void {
    this.health.markDown((err as Error).message);
    if (this.onStoreError !== null) this.onStoreError(this.name);
  }

  /** A batch Redis did not take: each operation follows the failure mode, settles first as in the script. */
  private withoutStore(b: Batch): void {
    for (const s of b.settles) {
      if (this.mode !== 'local') s.resolve();
      else settleCounters(this.fallback, b.route, s.limit, s.inputDelta, s.outputTokens).then(s.resolve, s.reject);
    }
    for (const a of b.admissions) {
      try {
        a.resolve(this.admitWithoutStore(b.route, a.limit, a.tokens));
      } catch (err) {
        a.reject(err);
      }
    }
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

/** Operations with the same key may share a batch: same route, unit and clock reading. */
function batchKey(route: string, unit: WindowUnit, now: string): string {
  return `${route}\0${unit}\0${now}`;
}

function defaultLog(message: string): void {
  process.stderr.write(`${message}\n`);
}
