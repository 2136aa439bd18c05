import type { Clock } from '../../clock.js';
import type { RateLimitSpec, WindowUnit } from '../../config/resource-types.js';
import type { LimitKey } from '../limit-key.js';
import { isShadow, type LimitTerm } from '../limiter.js';
import { Batch } from './batch.js';
import { redisKeyBase } from './key-base.js';
import { MultiBatch } from './multi-batch.js';

/**
 * Longest a settle (an answer's output charge and input correction) waits, by default, for an
 * admission of its route to share a script call with. A settle reaches Redis at most this much
 * later than a call of its own would have taken it, which is the same as the answer having ended
 * that much later; under load an admission comes within a turn or two.
 */
export const SETTLE_WAIT_MS = 20;

/** The `now` argument of a script call: the injected clock's ms, or '' for the Redis server's TIME. */
export function clockArgument(clock: Clock | null): string {
  return clock === null ? '' : String(clock());
}

/**
 * The script calls being collected for one Redis store, and when each goes out; what a call
 * sends and how its reply is read is the store's (store-limiter.ts), through `send` and
 * `sendMulti`.
 *
 * The operations issued during one event-loop turn are collected per limit key (and unit, clock
 * reading and limit values) and sent when the turn ends (setImmediate: after all of the turn's
 * I/O callbacks), one call per batch. Settles with no admission of their key in the turn wait
 * for the next one to ride along with, at most settleWaitMs: nothing waits on a settle, so this
 * saves a call of their own at no cost to any request. Multi-limit admissions (route and tenant)
 * are collected the same way, per set of limits, and sent at the same turn's end.
 */
export class TurnBatches {
  private readonly clock: Clock | null;
  private readonly settleWaitMs: number;
  private readonly send: (b: Batch) => void;
  private readonly sendMulti: (b: MultiBatch) => void;
  private readonly bases = new Map<LimitKey, string>();
  /** Batch ids with the server's clock, by limit key (batchId). */
  private readonly ids = new Map<LimitKey, { unit: WindowUnit; id: string }>();
  /** Batches not sent yet, by limit key, unit and clock reading. */
  private pending = new Map<string, Batch>();
  /** Multi-limit admissions of this turn, by their limits (multi-batch.ts). */
  private pendingMulti = new Map<string, MultiBatch>();
  /** Batches of this turn replaced in `pending` (full, or another limit), sent before it. */
  private spilled: Batch[] = [];
  private flushScheduled = false;
  /** Sends the settles that waited settleWaitMs for an admission of their key. */
  private settleTimer: NodeJS.Timeout | null = null;

  constructor(clock: Clock | null, settleWaitMs: number, send: (b: Batch) => void, sendMulti: (b: MultiBatch) => void) {
    this.clock = clock;
    this.settleWaitMs = settleWaitMs;
    this.send = send;
    this.sendMulti = sendMulti;
  }

  /**
   * The key's pending batch (same unit and clock reading), or a new one; an admission the
   * pending batch does not accept (full, or other limit values) spills it and starts another, as
   * does an input correction of another window than the batch's corrections (`correctionWindow`:
   * its admission's Decision.window, -1 not known; null: no correction).
   */
  batchFor(key: LimitKey, limit: RateLimitSpec, admission: boolean, correctionWindow: number | null = null): Batch {
    const now = this.now();
    const id = this.batchId(key, limit.unit, now);
    let batch = this.pending.get(id);
    if (batch === undefined || (admission && !batch.accepts(limit)) || (correctionWindow !== null && !batch.takesCorrection(correctionWindow))) {
      if (batch !== undefined) this.spilled.push(batch);
      batch = new Batch(key, this.base(key), limit.unit, now);
      this.pending.set(id, batch);
    }
    this.scheduleFlush();
    return batch;
  }

  /** This turn's multi-limit batch under these limits (same keys, units, limit values, clock reading), or a new one. */
  multiBatchFor(terms: readonly LimitTerm[]): MultiBatch {
    const now = this.now();
    let id = now;
    for (const t of terms) id += `\0${t.key}\0${t.limit.unit}\0${t.limit.inputTokensPerUnit}\0${t.limit.outputTokensPerUnit}\0${isShadow(t.limit) ? 1 : 0}`;
    let batch = this.pendingMulti.get(id);
    if (batch === undefined || batch.full) {
      if (batch !== undefined) this.sendMulti(batch);
      const head: (string | number)[] = [terms.length];
      for (const t of terms) head.push(this.base(t.key));
      head.push(now, terms.length);
      batch = new MultiBatch(terms, head);
      this.pendingMulti.set(id, batch);
    }
    this.scheduleFlush();
    return batch;
  }

  /** Sends the key's pending batch of this unit now, unless it has an admission (which sends it at the turn's end anyway). */
  sendUnlessAdmitting(key: LimitKey, unit: WindowUnit): void {
    const id = this.batchId(key, unit, this.now());
    const b = this.pending.get(id);
    if (b === undefined || b.admissions.length > 0) return;
    this.pending.delete(id);
    this.send(b);
  }

  /** Sends every pending batch now (the store closes). */
  flushAll(): void {
    if (this.settleTimer !== null) clearTimeout(this.settleTimer);
    this.settleTimer = null;
    const spilled = this.spilled;
    const pending = this.pending;
    this.spilled = [];
    this.pending = new Map();
    const multi = this.pendingMulti;
    this.pendingMulti = new Map();
    for (const b of multi.values()) this.sendMulti(b);
    for (const b of spilled) this.send(b);
    for (const b of pending.values()) this.send(b);
  }

  private scheduleFlush(): void {
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    setImmediate(this.flush);
  }

  /**
   * End of a turn (after its I/O callbacks): sends every batch with an admission; batches of
   * settles alone wait for an admission of their key in a later turn, or for the settle timer.
   */
  private readonly flush = (): void => {
    this.flushScheduled = false;
    if (this.spilled.length > 0) {
      const spilled = this.spilled;
      this.spilled = [];
      for (const b of spilled) this.send(b);
    }
    if (this.pendingMulti.size > 0) {
      const multi = this.pendingMulti;
      this.pendingMulti = new Map();
      for (const b of multi.values()) this.sendMulti(b);
    }
    for (const [key, b] of this.pending) {
      if (b.admissions.length === 0) continue; // settles alone wait for an admission of their key, or the timer
      this.pending.delete(key);
      this.send(b);
    }
    if (this.pending.size > 0 && this.settleTimer === null) this.settleTimer = setTimeout(this.sendSettles, this.settleWaitMs);
  };

  /** The settles still waiting for an admission go out on their own. */
  private readonly sendSettles = (): void => {
    this.settleTimer = null;
    const pending = this.pending;
    this.pending = new Map();
    for (const b of pending.values()) this.send(b);
  };

  private now(): string {
    return clockArgument(this.clock);
  }

  /**
   * Operations with the same id may share a batch: same limit key, unit and clock reading. With
   * the server's clock (no reading here) the id of a key and unit is built once, not per operation.
   */
  private batchId(key: LimitKey, unit: WindowUnit, now: string): string {
    if (now !== '') return `${key}\0${unit}\0${now}`;
    const known = this.ids.get(key);
    if (known !== undefined && known.unit === unit) return known.id;
    const id = `${key}\0${unit}\0`;
    this.ids.set(key, { unit, id });
    return id;
  }

  private base(key: LimitKey): string {
    let base = this.bases.get(key);
    if (base === undefined) {
      base = redisKeyBase(key);
      this.bases.set(key, base);
    }
    return base;
  }
}
