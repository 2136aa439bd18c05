import { NO_LIMIT, STATUS_ALLOWED, STATUS_REJECTED_INPUT } from '../decision-codec.js';
import { isShadow, type Decision, type LimitTerm } from '../limiter.js';
import { secondsUntil } from '../windows.js';
import { MAX_BATCH_ADMISSIONS, toDecision } from './batch.js';
import { STATUS_RECALLING } from './lua/counters.js';
import type { Recalling } from './recall-waits.js';
import type { ScriptArgs } from './script-args.js';

/**
 * Values per limit at the head of the admit-all script's reply: ms to the window end, input used,
 * output used, leases out, lease lent, window start, recall flag, incarnation (0: none kept).
 */
export const PER_LIMIT = 8;
export const MULTI_MS = 0;
export const MULTI_IN_USED = 1;
export const MULTI_OUT_USED = 2;
export const MULTI_LEASES_OUT = 3;
export const MULTI_LEASE = 4;
export const MULTI_WINDOW = 5;
export const MULTI_RECALL = 6;
export const MULTI_INCARNATION = 7;

/** A lease asked for, and the unused tokens of leases given back (batch.ts has the same fields for its one limit). */
export interface LeaseSlot {
  lease: number;
  back: number;
  backWindow: number;
  backLent: number;
  /** On a Redis Cluster, the window's incarnation a lease given back expects (incarnations.ts), else null. */
  incarnation: string | null;
}

export interface PendingMulti {
  readonly terms: readonly LimitTerm[];
  readonly tokens: number;
  /** Times the script answered STATUS_RECALLING and the admission was asked again. */
  waits: number;
  resolve(d: Decision[]): void;
  reject(err: unknown): void;
}

/**
 * The multi-limit admissions (route and tenant) of one event-loop turn under the same limits (the
 * same keys, units, limit values and clock reading), sent as one call of the admit-all script
 * (lua/admit-all.ts): decided in arrival order, each atomically across its limits.
 */
export class MultiBatch {
  readonly terms: readonly LimitTerm[];
  /** numKeys, the key bases, now and n: the script's arguments before the limits'. */
  private readonly head: readonly (string | number)[];
  /** Per limit: its lease asked for and given back (leases.ts), set while the batch collects. */
  readonly slots: LeaseSlot[] = [];
  readonly admissions: PendingMulti[] = [];

  constructor(terms: readonly LimitTerm[], head: readonly (string | number)[]) {
    this.terms = terms;
    this.head = head;
    for (let j = 0; j < terms.length; j++) this.slots.push({ lease: 0, back: 0, backWindow: 0, backLent: 0, incarnation: null });
  }

  /** The key base of limit j (`ir:{<limit key>}`), as in the script's KEYS. */
  base(j: number): string {
    return this.head[1 + j] as string;
  }

  /** The clock reading the batch was decided at: the injected clock's time, or '' for the Redis server's. */
  get now(): string {
    return String(this.head[1 + this.terms.length]);
  }

  /**
   * The script's keys and arguments (lua/admit-all.ts), written to `a`: the key base of each limit,
   * the clock reading and the number of limits, per limit its spec and lease slot, then each
   * admission's tokens.
   */
  writeArgs(a: ScriptArgs): ScriptArgs {
    const n = this.terms.length;
    for (let j = 0; j < n; j++) a.key(this.base(j));
    a.str(this.now).num(n);
    for (let j = 0; j < n; j++) {
      const limit = this.terms[j].limit;
      const slot = this.slots[j];
      a.str(limit.unit).num(limit.inputTokensPerUnit ?? NO_LIMIT).num(limit.outputTokensPerUnit ?? NO_LIMIT).str(isShadow(limit) ? '1' : '0');
      a.num(slot.lease).num(slot.back).num(slot.backWindow).num(slot.backLent).str(slot.incarnation ?? '');
    }
    for (const p of this.admissions) a.num(p.tokens);
    return a;
  }

  /** Input tokens of the admissions the reply admitted (every enforced limit allowed). */
  admittedTokens(reply: readonly number[]): number {
    const n = this.terms.length;
    let sum = 0;
    for (let i = 0; i < this.admissions.length; i++) {
      const a = this.admissions[i];
      if (admittedAt(reply, n * PER_LIMIT + i * n, a.terms)) sum += a.tokens;
    }
    return sum;
  }

  /** Whether the reply admitted admission `i` (every enforced limit allowed). */
  admitted(reply: readonly number[], i: number): boolean {
    const n = this.terms.length;
    return admittedAt(reply, n * PER_LIMIT + i * n, this.admissions[i].terms);
  }

  get full(): boolean {
    return this.admissions.length >= MAX_BATCH_ADMISSIONS;
  }

  admit(terms: readonly LimitTerm[], tokens: number): Promise<Decision[]> {
    return new Promise((resolve, reject) => this.join({ terms, tokens, waits: 0, resolve, reject }));
  }

  /** Adds an admission (a new one, or one asked again after waiting for leases to come back). */
  join(a: PendingMulti): void {
    this.admissions.push(a);
  }

  /** Resolves every admission from the script's reply; one refused only by limits recalling their leases goes to `recalling` while it may wait. */
  answer(reply: readonly number[], recalling: Recalling<PendingMulti>): void {
    const n = this.terms.length;
    const reset: number[] = [];
    const inUsed: number[] = [];
    const outUsed: number[] = [];
    for (let j = 0; j < n; j++) {
      reset.push(secondsUntil(reply[j * PER_LIMIT + MULTI_MS], 0));
      inUsed.push(reply[j * PER_LIMIT + MULTI_IN_USED] - reply[j * PER_LIMIT + MULTI_LEASES_OUT]); // leases out count as unused (as in batch.ts)
      outUsed.push(reply[j * PER_LIMIT + MULTI_OUT_USED]);
    }
    for (let i = 0; i < this.admissions.length; i++) {
      const a = this.admissions[i];
      const at = n * PER_LIMIT + i * n;
      let admitted = true;
      let waitable = true; // refused, but only by limits whose leases out would let it in
      for (let j = 0; j < n; j++) {
        const status = reply[at + j];
        if (status === STATUS_ALLOWED || isShadow(a.terms[j].limit)) continue;
        admitted = false;
        if (status !== STATUS_RECALLING) waitable = false;
      }
      if (!admitted && waitable && recalling.take(a)) continue;
      if (a.waits > 0) recalling.ended(admitted);
      if (admitted) for (let j = 0; j < n; j++) inUsed[j] += a.tokens;
      const ds: Decision[] = [];
      for (let j = 0; j < n; j++) {
        const status = reply[at + j] === STATUS_RECALLING ? STATUS_REJECTED_INPUT : reply[at + j];
        ds.push(toDecision(status, inUsed[j], outUsed[j], reset[j], a.terms[j].limit, reply[j * PER_LIMIT + MULTI_WINDOW]));
      }
      a.resolve(ds);
    }
  }

  fail(err: unknown): void {
    for (const a of this.admissions) a.reject(err);
  }
}

function admittedAt(reply: readonly number[], at: number, terms: readonly LimitTerm[]): boolean {
  for (let j = 0; j < terms.length; j++) if (reply[at + j] !== STATUS_ALLOWED && !isShadow(terms[j].limit)) return false;
  return true;
}
