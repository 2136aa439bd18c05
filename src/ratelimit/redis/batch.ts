import type { RateLimitSpec, WindowUnit } from '../../config/resource-types.js';
import { NO_LIMIT, STATUS_ALLOWED, STATUS_REJECTED_INPUT, STATUS_REJECTED_OUTPUT } from '../decision-codec.js';
import { STATUS_RECALLING } from './lua/counters.js';
import type { Recalling } from './recall-waits.js';
import type { Decision, LimitState } from '../limiter.js';
import { secondsUntil } from '../windows.js';

/**
 * Most admissions in one script call. A turn with more starts another batch for the same limit key,
 * sent right after it, so that one call never keeps Redis busy for long.
 */
export const MAX_BATCH_ADMISSIONS = 500;

/** Where the script's reply (lua/batch.ts) has what: ms until the window ends, counts, lease, window, recall, leases out, incarnation, statuses. */
export const REPLY_MS = 0;
export const REPLY_IN_USED = 1;
export const REPLY_OUT_USED = 2;
export const REPLY_LEASE = 3;
export const REPLY_WINDOW = 4;
export const REPLY_RECALL = 5;
export const REPLY_LEASES_OUT = 6;
export const REPLY_INCARNATION = 7;
export const FIRST_STATUS = 8;

export interface PendingAdmission {
  /** The limit key. */
  readonly key: string;
  readonly limit: RateLimitSpec;
  readonly tokens: number;
  /** Times the script answered STATUS_RECALLING and the admission was asked again. */
  waits: number;
  resolve(d: Decision | PromiseLike<Decision>): void;
  reject(err: unknown): void;
}

export interface PendingSettle {
  readonly limit: RateLimitSpec;
  readonly inputDelta: number;
  readonly outputTokens: number;
  resolve(): void;
  reject(err: unknown): void;
}

/**
 * The operations on one limit's counters (one unit, one clock reading, one pair of limits) issued
 * during one event-loop turn, sent as one call of the batch script (lua/batch.ts): the settles
 * summed and applied first, then the admissions in arrival order, each decided by the admission rule.
 */
export class Batch {
  readonly key: string;
  /** The key base `ir:{<limit key>}` (key-base.ts). */
  readonly base: string;
  readonly unit: WindowUnit;
  /** The injected clock's time, or '' for the Redis server's clock. */
  readonly now: string;
  /** Sums of the settles' input corrections and output charges. */
  inputDelta = 0;
  outputTokens = 0;
  /** The input tokens of the give-backs (negative corrections) among `inputDelta`: on a Cluster the script drops them alone when the window's incarnation is not the expected one. */
  givenBack = 0;
  /** The admissions' limits (NO_LIMIT for none), set by the first admission. */
  inLimit = NO_LIMIT;
  outLimit = NO_LIMIT;
  readonly admissions: PendingAdmission[] = [];
  /** The admissions' input tokens, in order: the script's ARGV[14..]. */
  readonly tokens: number[] = [];
  readonly settles: PendingSettle[] = [];
  /** Lease: input tokens asked for (0 = none); the unused tokens of leases given back, the window start they were lent in and their size when lent. */
  lease = 0;
  back = 0;
  backWindow = 0;
  backLent = 0;
  /** On a Redis Cluster, the window's incarnation the give-backs expect (set by the first one: incarnations.ts), else null. */
  incarnation: string | null = null;
  /**
   * The window (its start, by the script's clock) that the input corrections belong to, set by the
   * first one (its admission's Decision.window; -1: not known, the script then applies them to the
   * current window); null: no correction yet. A correction of another window does not join
   * (takesCorrection).
   */
  correctionWindow: number | null = null;

  constructor(key: string, base: string, unit: WindowUnit, now: string) {
    this.key = key;
    this.base = base;
    this.unit = unit;
    this.now = now;
  }

  /**
   * Whether an admission under `limit` can join: the batch is not full and has no admission yet
   * or one under the same limit values (an edit mid-turn starts another batch).
   */
  accepts(limit: RateLimitSpec): boolean {
    if (this.admissions.length === 0) return true;
    return this.admissions.length < MAX_BATCH_ADMISSIONS
      && this.inLimit === (limit.inputTokensPerUnit ?? NO_LIMIT)
      && this.outLimit === (limit.outputTokensPerUnit ?? NO_LIMIT);
  }

  admit(limit: RateLimitSpec, tokens: number): Promise<Decision> {
    return new Promise((resolve, reject) => this.join({ key: this.key, limit, tokens, waits: 0, resolve, reject }));
  }

  /** Adds an admission (a new one, or one asked again after waiting for leases to come back). */
  join(a: PendingAdmission): void {
    if (this.admissions.length === 0) {
      this.inLimit = a.limit.inputTokensPerUnit ?? NO_LIMIT;
      this.outLimit = a.limit.outputTokensPerUnit ?? NO_LIMIT;
    }
    this.tokens.push(a.tokens);
    this.admissions.push(a);
  }

  /** Whether an input correction of an admission charged in `window` (-1: not known) can join. */
  takesCorrection(window: number): boolean {
    return this.correctionWindow === null || this.correctionWindow === window;
  }

  /** Joins a settle; its input correction belongs to `window` (-1: not known; takesCorrection said yes). */
  settle(limit: RateLimitSpec, inputDelta: number, outputTokens: number, window = -1): Promise<void> {
    if (inputDelta !== 0) this.correctionWindow = window;
    this.inputDelta += inputDelta;
    if (inputDelta < 0) this.givenBack -= inputDelta;
    this.outputTokens += outputTokens;
    return new Promise((resolve, reject) => {
      this.settles.push({ limit, inputDelta, outputTokens, resolve, reject });
    });
  }

  /** Whether the reply admitted admission `i`. */
  admitted(reply: readonly number[], i: number): boolean {
    return reply[FIRST_STATUS + i] === STATUS_ALLOWED;
  }

  /** Input tokens of the admissions the reply admitted. */
  admittedTokens(reply: readonly number[]): number {
    let sum = 0;
    for (let i = 0; i < this.tokens.length; i++) if (this.admitted(reply, i)) sum += this.tokens[i];
    return sum;
  }

  /** Resolves every operation from the script's reply; an admission answered STATUS_RECALLING goes to `recalling` while it may wait. */
  answer(reply: readonly number[], recalling: Recalling<PendingAdmission>): void {
    for (const s of this.settles) s.resolve();
    if (this.admissions.length === 0) return;
    const reset = secondsUntil(reply[REPLY_MS], 0);
    // What requests used, as far as Redis knows it: the leases out (other workers') count as unused.
    let inUsed = reply[REPLY_IN_USED] - reply[REPLY_LEASES_OUT];
    const outUsed = reply[REPLY_OUT_USED];
    for (let i = 0; i < this.admissions.length; i++) {
      const a = this.admissions[i];
      let status = reply[FIRST_STATUS + i];
      if (status === STATUS_RECALLING) {
        if (recalling.take(a)) continue;
        status = STATUS_REJECTED_INPUT;
      }
      if (a.waits > 0) recalling.ended(status === STATUS_ALLOWED);
      if (status === STATUS_ALLOWED) inUsed += a.tokens;
      a.resolve(toDecision(status, inUsed, outUsed, reset, a.limit, reply[REPLY_WINDOW]));
    }
  }
}

/** A decision of status `status` under `limit`, with the counts requests used (the x-ratelimit-* figures), `reset` whole seconds to the window's end and the window's start. */
export function toDecision(status: number, inUsed: number, outUsed: number, reset: number, limit: RateLimitSpec, window: number): Decision {
  return {
    allowed: status === STATUS_ALLOWED,
    rejectedBy: status === STATUS_REJECTED_INPUT ? 'input' : status === STATUS_REJECTED_OUTPUT ? 'output' : null,
    retryAfterSeconds: reset,
    input: state(limit.inputTokensPerUnit, inUsed, reset),
    output: state(limit.outputTokensPerUnit, outUsed, reset),
    window,
  };
}

function state(limit: number | null, used: number, reset: number): LimitState | null {
  if (limit === null) return null;
  return { limit, remaining: limit > used ? limit - used : 0, resetSeconds: reset };
}
