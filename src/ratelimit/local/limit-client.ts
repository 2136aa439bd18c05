import type { LimitKey } from '../limit-key.js';
import { performance } from 'node:perf_hooks';
import type { RateLimitSpec, WindowUnit } from '../../config/resource-types.js';
import { DECISION_STRIDE, decodeDecision, NO_LIMIT, STATUS_ALLOWED } from '../decision-codec.js';
import { HeldLeases } from './held-leases.js';
import { RefusalNotes } from './refusal-notes.js';
import {
  MSG_RECALL, MSG_REPLY, MSG_REQUEST, MSG_USAGE, OP_ADJUST_INPUT, OP_ADMIT, OP_RETURN_LEASE, OP_ADMIT_ALL, OP_ADMIT_TERM, OP_ADMIT_TERM_SHADOW, OP_CHARGE_OUTPUT,
  REPLY_INVALID, REPLY_STRIDE, REQUEST_STRIDE, USAGE_STRIDE, type LimitRequestMessage,
} from './ipc-protocol.js';
import { systemClock, type Clock } from '../../clock.js';
import { atTurnEnd } from '../../turn-end.js';
import { setReadDeadline } from '../../timers.js';
import { isShadow, type Decision, type LimitTerm, type TokenLimiter } from '../limiter.js';
import { LimiterOverloadedError, LimiterUnavailableError } from '../errors.js';
import { sameWindow } from '../windows.js';
import { checkTokenCount, checkTokenDelta, tokenCountError } from '../token-amounts.js';

/** The worker's end of the IPC channel; `process` in a cluster worker (or a ChildProcess in tests). */
export interface LimitClientPort {
  send?(message: LimitRequestMessage, sendHandle: undefined, callback: (error: Error | null) => void): boolean;
  readonly connected?: boolean;
  on(event: 'message' | 'disconnect', listener: (message: unknown) => void): unknown;
  off(event: 'message' | 'disconnect', listener: (message: unknown) => void): unknown;
}

export interface LocalLimitClientOptions {
  /** Default: `process` (must have an IPC channel, as cluster workers do). */
  port?: LimitClientPort;
  /** A decision not answered within this many ms fails with LimiterUnavailableError. Default 1000. */
  timeoutMs?: number;
  /** Decisions in flight at most; more fail at once with LimiterOverloadedError. Default 10000. */
  maxPending?: number;
  /** Ops per message at most; a full batch is sent at once. Default 1024. */
  maxBatch?: number;
  /** Clock for lease windows; must agree with the primary's (both Date.now in the router). */
  clock?: Clock;
}

interface Pending {
  resolve: (d: Decision) => void;
  /** A multi-limit admission (admitAll): its terms and its resolve; null for admit(). */
  terms: readonly LimitTerm[] | null;
  resolveAll: ((d: Decision[]) => void) | null;
  reject: (e: Error) => void;
  /** performance.now() when issued. */
  at: number;
  key: LimitKey;
  unit: WindowUnit;
  inLimit: number | null;
  outLimit: number | null;
  tokens: number;
}

/** What is remembered of a decision that timed out, to refund it if it was admitted after all. */
interface Abandoned {
  key: LimitKey;
  unit: WindowUnit;
  tokens: number;
  terms: readonly LimitTerm[] | null;
  /** The limiter clock's reading when the decision was asked for (its window's charge, if admitted). */
  askedAt: number;
}

/**
 * Worker side of the local mode. The cluster primary (attachLocalLimitHost) owns the instance's
 * counters; a decision it grants may come with a lease (a slice of the budget, lease-book.ts),
 * and while the worker holds one for the key it decides on its own (held-leases.ts); a refusal
 * it makes for good may come with a refusal note, from which the worker refuses what the primary
 * would refuse until the note is recalled or its window ends (refusal-notes.ts) — exact per
 * instance either way. Anything else asks the primary: ops issued during one event loop turn
 * go out as one message (at the turn's end, turn-end.ts); replies are matched by id.
 * chargeOutput/adjustInput are absorbed by a held lease or sent fire-and-forget (ordered before
 * any later admit).
 * Failure: no answer within timeoutMs (an answer that came in time is read first, however late
 * this worker's loop runs the timer), a closed channel or close() reject admit() with
 * LimiterUnavailableError; too many in flight rejects with LimiterOverloadedError.
 * A decision that timed out but was admitted by the primary is refunded when its late answer comes.
 */
export class LocalLimitClient implements TokenLimiter {
  private readonly port: LimitClientPort;
  private readonly leases: HeldLeases;
  private readonly notes = new RefusalNotes();
  private readonly timeoutMs: number;
  private readonly maxPending: number;
  private readonly maxBatch: number;
  private readonly pending = new Map<number, Pending>();
  private readonly abandoned = new Map<number, Abandoned>();
  private batch: (number | string)[] = [];
  private flushScheduled = false;
  private timer: NodeJS.Timeout | null = null;
  private nextId = 1;
  private closed = false;

  private readonly onMessage = (message: unknown): void => this.receive(message);
  private readonly onDisconnect = (): void => this.failAll('the IPC channel to the cluster primary closed');
  private readonly onSendResult = (error: Error | null): void => {
    if (error !== null) this.failAll(`sending to the cluster primary failed: ${error.message}`);
  };
  private readonly flushNow = (): void => this.flush();
  private readonly scheduleFlush = (): void => {
    if (!this.flushScheduled) {
      this.flushScheduled = true;
      atTurnEnd(this.flushNow);
    }
  };
  private readonly sweepNow = (): void => this.sweep();

  constructor(options: LocalLimitClientOptions = {}) {
    const port: LimitClientPort = options.port ?? process;
    if (typeof port.send !== 'function') {
      throw new Error('LocalLimitClient needs an IPC channel to the cluster primary (process.send is undefined: not a cluster worker)');
    }
    this.port = port;
    this.timeoutMs = positive(options.timeoutMs ?? 1000, 'timeoutMs');
    this.maxPending = positive(options.maxPending ?? 10_000, 'maxPending');
    this.maxBatch = positive(options.maxBatch ?? 1024, 'maxBatch');
    this.leases = new HeldLeases(
      (op, id, key, unit, amount) => this.enqueue(op, id, key, NO_LIMIT, NO_LIMIT, unit, amount),
      options.clock ?? systemClock,
      this.scheduleFlush,
    );
    port.on('message', this.onMessage);
    port.on('disconnect', this.onDisconnect);
  }

  /** Decisions awaiting an answer (for metrics and tests). */
  get inFlight(): number {
    return this.pending.size;
  }

  /** Leases held (tests and metrics). */
  get leasesHeld(): number {
    return this.leases.size;
  }

  /** Refusal notes held (tests). */
  get notesHeld(): number {
    return this.notes.size;
  }

  admit(key: LimitKey, limit: RateLimitSpec, inputTokens: number): Promise<Decision> | Decision {
    if (this.closed) return Promise.reject(new LimiterUnavailableError('the local rate limiter is closed'));
    if (this.port.connected === false) {
      return Promise.reject(new LimiterUnavailableError('the IPC channel to the cluster primary is closed'));
    }
    const invalid = tokenCountError(inputTokens, 'input tokens');
    if (invalid !== null) return Promise.reject(invalid);
    const local = this.leases.admit(key, limit, inputTokens);
    if (local !== null) return local;
    if (this.notes.size > 0) {
      const refused = this.notes.refuse(key, limit, inputTokens, this.leases.now());
      if (refused !== null) return refused;
    }
    if (this.pending.size >= this.maxPending) {
      return Promise.reject(new LimiterOverloadedError(`${this.maxPending} rate limit decisions already in flight`));
    }
    const id = this.nextId++;
    const unit = limit.unit;
    return new Promise<Decision>((resolve, reject) => {
      this.pending.set(id, {
        resolve, reject, terms: null, resolveAll: null, at: performance.now(), key, unit,
        inLimit: limit.inputTokensPerUnit, outLimit: limit.outputTokensPerUnit, tokens: inputTokens,
      });
      this.armSweep(this.timeoutMs);
      this.enqueue(OP_ADMIT, id, key, limit.inputTokensPerUnit ?? NO_LIMIT, limit.outputTokensPerUnit ?? NO_LIMIT, unit, inputTokens);
    });
  }

  /**
   * A multi-limit admission (limiter.ts admitAll): from the leases held here when every one of
   * its limits has one that covers it (held-leases.ts), else decided by the primary, atomically
   * across its terms and every worker (lease-book.ts admitAll), which may grant leases.
   */
  admitAll(terms: readonly LimitTerm[], inputTokens: number): Promise<Decision[]> | Decision[] {
    if (this.closed) return Promise.reject(new LimiterUnavailableError('the local rate limiter is closed'));
    if (this.port.connected === false) {
      return Promise.reject(new LimiterUnavailableError('the IPC channel to the cluster primary is closed'));
    }
    const invalid = tokenCountError(inputTokens, 'input tokens');
    if (invalid !== null) return Promise.reject(invalid);
    const local = this.leases.admitAll(terms, inputTokens);
    if (local !== null) return local;
    if (this.notes.size > 0) {
      const refused = this.notes.refuseAll(terms, inputTokens, this.leases.now());
      if (refused !== null) return refused;
    }
    if (this.pending.size >= this.maxPending) {
      return Promise.reject(new LimiterOverloadedError(`${this.maxPending} rate limit decisions already in flight`));
    }
    const id = this.nextId++;
    const first = terms[0];
    return new Promise<Decision[]>((resolveAll, reject) => {
      this.pending.set(id, {
        resolve: noop, resolveAll, reject, terms, at: performance.now(), key: first.key, unit: first.limit.unit,
        inLimit: null, outLimit: null, tokens: inputTokens,
      });
      this.armSweep(this.timeoutMs);
      for (const t of terms) {
        this.enqueue(isShadow(t.limit) ? OP_ADMIT_TERM_SHADOW : OP_ADMIT_TERM, id, t.key,
          t.limit.inputTokensPerUnit ?? NO_LIMIT, t.limit.outputTokensPerUnit ?? NO_LIMIT, t.limit.unit, 0);
      }
      this.enqueue(OP_ADMIT_ALL, id, '', NO_LIMIT, NO_LIMIT, first.limit.unit, inputTokens);
    });
  }

  /**
   * An answer's input correction, then its output charge (settle.ts), as adjustInput and
   * chargeOutput would do them, with one reading of the lease clock for both.
   */
  settle(key: LimitKey, limit: RateLimitSpec, inputDelta: number, outputTokens: number): void {
    if (inputDelta !== 0) checkTokenDelta(inputDelta, 'input token adjustment');
    if (outputTokens > 0) checkTokenCount(outputTokens, 'output tokens');
    const now = this.leases.now();
    if (inputDelta !== 0) this.adjustAt(key, limit.unit, inputDelta, now);
    if (outputTokens > 0) this.chargeAt(key, limit.unit, outputTokens, now);
  }

  chargeOutput(key: LimitKey, limit: RateLimitSpec, outputTokens: number): void {
    checkTokenCount(outputTokens, 'output tokens');
    this.chargeAt(key, limit.unit, outputTokens, this.leases.now());
  }

  adjustInput(key: LimitKey, limit: RateLimitSpec, delta: number): void {
    checkTokenDelta(delta, 'input token adjustment');
    this.adjustAt(key, limit.unit, delta, this.leases.now());
  }

  /** Output charged against the key's lease, else sent to the primary; `now`: the lease clock's reading. */
  private chargeAt(key: LimitKey, unit: WindowUnit, outputTokens: number, now: number): void {
    if (this.closed || !this.leases.charge(key, unit, outputTokens, now)) this.update(OP_CHARGE_OUTPUT, key, unit, outputTokens);
  }

  /** An input correction absorbed by the key's lease, else sent to the primary. */
  private adjustAt(key: LimitKey, unit: WindowUnit, delta: number, now: number): void {
    if (this.closed || !this.leases.adjust(key, unit, delta, now)) this.update(OP_ADJUST_INPUT, key, unit, delta);
  }

  /** Gives the leases back and sends what is batched, fails what is in flight, stops listening. */
  async close(): Promise<void> {
    if (this.closed) return;
    if (this.port.connected !== false) this.leases.releaseAll();
    this.flush();
    this.closed = true;
    this.notes.clear();
    this.failAll('the local rate limiter is closed');
    this.port.off('message', this.onMessage);
    this.port.off('disconnect', this.onDisconnect);
  }

  private update(op: number, key: LimitKey, unit: WindowUnit, amount: number): void {
    // The channel is gone: the charge cannot reach the counters (the primary's window goes on without it).
    if (this.closed || this.port.connected === false) return;
    this.enqueue(op, 0, key, NO_LIMIT, NO_LIMIT, unit, amount);
  }

  private enqueue(op: number, id: number, key: LimitKey, inLimit: number, outLimit: number, unit: string, amount: number): void {
    // A give-back or a lease's return may lower the count a refusal note of the key was made
    // with: the worker's later requests ask the primary, which will have it first.
    if (this.notes.size > 0 && ((op === OP_ADJUST_INPUT && amount < 0) || op === OP_RETURN_LEASE)) this.notes.forget(key);
    const b = this.batch;
    b.push(op, id, key, inLimit, outLimit, unit, amount);
    if (b.length >= this.maxBatch * REQUEST_STRIDE) this.flush();
    else this.scheduleFlush();
  }

  private flush(): void {
    // What the leases absorbed this turn goes in the same message (flushScheduled still set).
    if (!this.closed) this.leases.report();
    this.flushScheduled = false;
    if (this.batch.length === 0) return;
    const a = this.batch;
    this.batch = [];
    if (this.port.connected === false) {
      this.failAll('the IPC channel to the cluster primary is closed');
      return;
    }
    this.port.send!({ t: MSG_REQUEST, a }, undefined, this.onSendResult);
  }

  private receive(message: unknown): void {
    if (typeof message !== 'object' || message === null) return;
    const t = (message as { t?: unknown }).t;
    if (t !== MSG_REPLY && t !== MSG_RECALL && t !== MSG_USAGE) return;
    const a = (message as { a?: unknown }).a;
    if (!Array.isArray(a)) return;
    if (t === MSG_RECALL) {
      if (!this.closed) {
        this.leases.recall(a as number[]);
        if (this.notes.size > 0) this.notes.recall(a as number[]);
      }
      return;
    }
    if (t === MSG_USAGE) {
      for (let i = 0; i + USAGE_STRIDE <= a.length; i += USAGE_STRIDE) {
        this.leases.usage(a[i] as number, a[i + 1] as number, a[i + 2] as number);
        if (this.notes.size > 0) this.notes.usage(a[i] as number, a[i + 1] as number, a[i + 2] as number);
      }
      return;
    }
    let i = 0;
    while (i + REPLY_STRIDE <= a.length) {
      const id = a[i] as number;
      const leaseAt = i + 1 + DECISION_STRIDE;
      const p = this.pending.get(id);
      if (p === undefined) {
        i = this.refundLate(id, a as number[], i);
        continue;
      }
      this.pending.delete(id);
      if (a[i + 1] === REPLY_INVALID) {
        p.reject(new Error(`the cluster primary rejected the rate limit request for ${p.key} as malformed`));
        i += REPLY_STRIDE;
        continue;
      }
      if (p.terms !== null) {
        const ds: Decision[] = [];
        // Refused: what comes in the lease's place are refusal notes.
        const refused = refusedByEnforced(a, i, id, p.terms);
        for (let k = 0; k < p.terms.length && i + REPLY_STRIDE <= a.length && a[i] === id; k++, i += REPLY_STRIDE) {
          const t = p.terms[k];
          const at = i + 1 + DECISION_STRIDE;
          if (a[at] !== 0) {
            if (!refused) this.leases.take(t.key, t.limit.inputTokensPerUnit, t.limit.outputTokensPerUnit, t.limit.unit, a as number[], i + 1, at);
            else if (!this.closed) this.notes.take(t.key, t.limit.inputTokensPerUnit, t.limit.outputTokensPerUnit, t.limit.unit, a as number[], i + 1, at);
          }
          ds.push(decodeDecision(a as number[], i + 1));
        }
        p.resolveAll!(ds);
        continue;
      }
      if (a[leaseAt] !== 0) {
        // An admission's reply may carry a lease, a refusal's a refusal note (lease-book.ts).
        if (a[i + 1] === STATUS_ALLOWED) this.leases.take(p.key, p.inLimit, p.outLimit, p.unit, a as number[], i + 1, leaseAt);
        else if (!this.closed) this.notes.take(p.key, p.inLimit, p.outLimit, p.unit, a as number[], i + 1, leaseAt);
      }
      p.resolve(decodeDecision(a as number[], i + 1));
      i += REPLY_STRIDE;
    }
  }

  /**
   * A late answer for a decision that already timed out: give back what it charged (and its
   * lease), to limits whose window that was asked in is still on: a window that has ended took the
   * charge, and a give-back now would lower the next one (admitting past its limit). A refusal's
   * note is not taken, and the note of its key held here is dropped. Returns the offset after its
   * records (a multi-limit answer has one per term).
   */
  private refundLate(id: number, a: number[], i: number): number {
    const start = i;
    let admitted = true;
    for (; i + REPLY_STRIDE <= a.length && a[i] === id; i += REPLY_STRIDE) {
      if (a[i + 1] !== STATUS_ALLOWED) admitted = false;
    }
    const gone = this.abandoned.get(id);
    if (gone === undefined) return i;
    this.abandoned.delete(id);
    if (gone.terms !== null) {
      // Admitted unless an enforced term refused (shadow terms are charged either way).
      admitted = !refusedByEnforced(a, start, id, gone.terms);
      for (let k = 0, at = start; k < gone.terms.length && at < i; k++, at += REPLY_STRIDE) {
        if (a[at + 1 + DECISION_STRIDE] === 0) continue;
        if (admitted) this.leases.giveBack(gone.terms[k].key, gone.terms[k].limit.unit, a, at + 1 + DECISION_STRIDE);
        else this.notes.forget(gone.terms[k].key); // a refusal's note: as below
      }
      if (admitted && gone.tokens > 0) {
        const now = this.leases.now();
        for (const t of gone.terms) if (sameWindow(t.limit.unit, gone.askedAt, now)) this.update(OP_ADJUST_INPUT, t.key, t.limit.unit, -gone.tokens);
      }
      return i;
    }
    const leaseAt = start + 1 + DECISION_STRIDE;
    if (a[start + 1] !== STATUS_ALLOWED) {
      // The primary now counts this answer's note as the one held here: the older note it replaced
      // would not be recalled, so it goes too.
      if (a[leaseAt] !== 0) this.notes.forget(gone.key);
      return i;
    }
    if (a[leaseAt] !== 0) this.leases.giveBack(gone.key, gone.unit, a, leaseAt);
    if (gone.tokens > 0 && sameWindow(gone.unit, gone.askedAt, this.leases.now())) this.update(OP_ADJUST_INPUT, gone.key, gone.unit, -gone.tokens);
    return i;
  }

  /** Arms the sweep to run in `ms` unless it is armed already (one timer for every decision in flight). */
  private armSweep(ms: number): void {
    if (this.timer === null) this.timer = setReadDeadline(this.sweepNow, ms).unref();
  }

  /**
   * Fails decisions older than timeoutMs (pending is in issue order), re-arms for the next. Its
   * timer is a read deadline (timers.ts): an answer that came in time while this worker's loop
   * was held past the timeout (a long task, a collection, the CPU taken by other processes) is
   * read before the sweep, and decides the request, rather than failing it as unavailable.
   */
  private sweep(): void {
    this.timer = null;
    const now = performance.now();
    for (const [id, p] of this.pending) {
      const due = p.at + this.timeoutMs;
      if (due > now) {
        this.armSweep(Math.ceil(due - now));
        return;
      }
      this.pending.delete(id);
      this.abandon(id, p);
      p.reject(new LimiterUnavailableError(`the cluster primary did not answer a rate limit decision within ${this.timeoutMs} ms`));
    }
  }

  private abandon(id: number, p: Pending): void {
    if (this.abandoned.size >= this.maxPending) {
      const oldest = this.abandoned.keys().next().value as number;
      this.abandoned.delete(oldest);
    }
    // When it was asked for, on the limiter's clock (kept off the per-request path: derived here).
    const askedAt = this.leases.now() - (performance.now() - p.at);
    this.abandoned.set(id, { key: p.key, unit: p.unit, tokens: p.tokens, terms: p.terms, askedAt });
  }

  private failAll(reason: string): void {
    // The sweep's timer is left to run (unref'd; it finds nothing due): once due, a read deadline
    // runs its sweep even if cleared, so clearing it here and arming another for a later decision
    // could leave two sweeps re-arming each other.
    const err = new LimiterUnavailableError(reason);
    for (const p of this.pending.values()) p.reject(err);
    this.pending.clear();
  }
}

function positive(n: number, name: string): number {
  if (!Number.isFinite(n) || n <= 0) throw new RangeError(`LocalLimitClient option ${name} must be a positive number, got ${n}`);
  return n;
}

function noop(): void {}

/**
 * Whether an enforced limit refused the multi-limit answer `id` whose records start at `at` in
 * `a` (one per term, in order); a shadow limit's refusal does not refuse the request.
 */
function refusedByEnforced(a: readonly unknown[], at: number, id: number, terms: readonly LimitTerm[]): boolean {
  for (let k = 0; k < terms.length && at + REPLY_STRIDE <= a.length && a[at] === id; k++, at += REPLY_STRIDE) {
    if (a[at + 1] !== STATUS_ALLOWED && !isShadow(terms[k].limit)) return true;
  }
  return false;
}
