import type { LimitKey } from '../limit-key.js';
import type { RateLimitSpec, WindowUnit } from '../../config/resource-types.js';
import { NO_LIMIT } from '../decision-codec.js';
import { OP_ADJUST_INPUT, OP_CHARGE_OUTPUT, OP_LEASE_USED, OP_RETURN_LEASE } from './ipc-protocol.js';
import type { Clock } from '../../clock.js';
import { isShadow, type Decision, type LimitTerm } from '../limiter.js';
import { secondsUntil, windowOver } from '../windows.js';

/** Queues one op for the primary: [op, id, key, NO_LIMIT, NO_LIMIT, unit, amount]. */
export type LeaseOpSink = (op: number, id: number, key: LimitKey, unit: WindowUnit, amount: number) => void;

/** A lease granted by the primary (lease-book.ts), as the worker holds it. */
interface HeldLease {
  readonly id: number;
  readonly key: LimitKey;
  readonly unit: WindowUnit;
  /** The limits it was granted under; a request with other limits (a config edit) gives it back. */
  readonly inLimit: number | null;
  readonly outLimit: number | null;
  /** Window end, epoch ms: the lease is void from then on. */
  readonly end: number;
  /** Input tokens it holds; NO_LIMIT without an input limit (nothing was charged up front). */
  readonly inGranted: number;
  /** Output tokens it may charge unreported; NO_LIMIT without an output limit. */
  readonly outGranted: number;
  /**
   * What everyone else has used of the window (input / output; 0 without that limit): first
   * worked out from the decision that granted the lease, then as the primary tells (MSG_USAGE).
   * The headers say the limit minus this minus the lease's own use.
   */
  othersIn: number;
  othersOut: number;
  /** Input admitted or corrected against it; output charged against it. */
  inUsed: number;
  outUsed: number;
  /** inUsed as last reported (OP_LEASE_USED; leases with an input limit). */
  inReported: number;
  /**
   * Other workers use the key too (the primary sent their usage): what the lease absorbs is
   * reported at the end of the turn, not REPORT_INTERVAL_MS later.
   */
  shared: boolean;
  /** Not yet reported to the primary: output always; input only without an input limit. */
  inUnreported: number;
  outUnreported: number;
}

/**
 * How often (ms) at most a worker reports what its leases absorbed. A lease nobody else shares
 * reports this long after its first unreported use. Shared leases report at the end of the turn
 * when the last report is at least this old, else this long after it: a busy worker sends one
 * report for all the turns of that time. Each report is a message to the primary and one from it
 * to every other worker, and each wakes a process: at 1 ms they were about three quarters of the
 * primary's CPU under full load (docs/internals/performance-changes.md, "Local limiter reports"), while other
 * workers' figures lag by at most this long.
 */
export const REPORT_INTERVAL_MS = 50;

/**
 * The leases one worker holds, one per key at most. A request whose tokens fit in the key's
 * lease, while the output charged against the lease stays below its allowance, is admitted here
 * without a message; anything else gives the lease back and asks the primary. What the lease
 * absorbs (admissions, output charges, input corrections) is reported when it goes back, and
 * meanwhile every REPORT_INTERVAL_MS — or, once the primary has told of other workers' use of
 * the key (usage()), at the end of the event loop turn (report(), called by the client's flush;
 * `schedule` asks for one; at most once per REPORT_INTERVAL_MS, so a busy worker sends one
 * report for many turns), so the primary and through it the other workers know what was used.
 * A lease of an ended window is dropped with what it had not reported: that window's counters
 * are gone.
 */
export class HeldLeases {
  private readonly leases = new Map<string, HeldLease>();
  private readonly byId = new Map<number, HeldLease>();
  private readonly send: LeaseOpSink;
  private readonly clock: Clock;
  private readonly schedule: () => void;
  /** Something of a shared lease is to be reported at the end of the turn. */
  private due = false;
  /**
   * performance.now() of the last report(); read through globalThis (not a node:perf_hooks
   * import) so tests can move it with fake timers.
   */
  private reportedAt = -Infinity;
  private holdTimer: NodeJS.Timeout | null = null;
  private readonly scheduleNow = (): void => {
    this.holdTimer = null;
    this.schedule();
  };
  private timer: NodeJS.Timeout | null = null;
  private readonly reportNow = (): void => {
    this.timer = null;
    this.reportAll();
  };

  constructor(send: LeaseOpSink, clock: Clock, schedule: () => void) {
    this.send = send;
    this.clock = clock;
    this.schedule = schedule;
  }

  /** Leases held (tests and metrics). */
  get size(): number {
    return this.leases.size;
  }

  /**
   * Takes the lease granted in a reply to an admission under these limits: `r` holds the encoded
   * decision at `at` (decision-codec.ts) followed by [leaseId, input, output, windowEnd]. Returns
   * false (and gives it straight back) when a lease of the key is already held.
   */
  take(key: LimitKey, inLimit: number | null, outLimit: number | null, unit: WindowUnit, r: readonly number[], at: number, leaseAt: number): boolean {
    if (this.leases.has(key)) {
      this.giveBack(key, unit, r, leaseAt);
      return false;
    }
    const l: HeldLease = {
      id: r[leaseAt], key, unit, inLimit, outLimit,
      end: r[leaseAt + 3], inGranted: r[leaseAt + 1], outGranted: r[leaseAt + 2],
      othersIn: inLimit === null ? 0 : inLimit - r[at + 3], othersOut: outLimit === null ? 0 : outLimit - r[at + 6],
      inUsed: 0, outUsed: 0, inReported: 0, shared: false, inUnreported: 0, outUnreported: 0,
    };
    this.leases.set(key, l);
    this.byId.set(l.id, l);
    return true;
  }

  /** Gives back, unused, the lease granted in a reply that is not kept (`r` as in take()). */
  giveBack(key: LimitKey, unit: WindowUnit, r: readonly number[], leaseAt: number): void {
    const input = r[leaseAt + 1];
    this.send(OP_RETURN_LEASE, r[leaseAt], key, unit, input === NO_LIMIT ? 0 : input);
  }

  /** The decision when the lease covers the request, else null (the lease, if any, has gone back). */
  admit(key: LimitKey, limit: RateLimitSpec, tokens: number): Decision | null {
    const now = this.clock();
    const l = this.covering(key, limit, tokens, now);
    return l === null ? null : this.admitFrom(l, tokens, now);
  }

  /**
   * The decisions of a multi-limit admission when every one of its limits has a lease here that
   * covers the request (each then admits it), else null: the primary decides it (a lease that
   * does not cover it has gone back). Shadow limits are never leased. One reading of the clock
   * decides every limit: a window that ends between two readings cannot leave one admitted
   * and the other not.
   */
  admitAll(terms: readonly LimitTerm[], tokens: number): Decision[] | null {
    const now = this.clock();
    const held: HeldLease[] = [];
    for (const t of terms) {
      if (isShadow(t.limit)) return null;
      const l = this.covering(t.key, t.limit, tokens, now);
      if (l === null) return null;
      held.push(l);
    }
    const out: Decision[] = [];
    for (const l of held) out.push(this.admitFrom(l, tokens, now));
    return out;
  }

  /** The key's lease when it covers `tokens` under these limits at `now`; else null, and a lease that does not has gone back (or is dropped: its window is over). */
  private covering(key: LimitKey, limit: RateLimitSpec, tokens: number, now: number): HeldLease | null {
    const l = this.leases.get(key);
    if (l === undefined) return null;
    if (now >= l.end) {
      this.drop(l);
      return null;
    }
    if (windowOver(l.unit, l.end, now) || l.unit !== limit.unit || l.inLimit !== limit.inputTokensPerUnit || l.outLimit !== limit.outputTokensPerUnit
      || (l.inGranted !== NO_LIMIT && l.inUsed + tokens > l.inGranted)
      || (l.outGranted !== NO_LIMIT && l.outUsed >= l.outGranted)) {
      this.release(l);
      return null;
    }
    return l;
  }

  private admitFrom(l: HeldLease, tokens: number, now: number): Decision {
    l.inUsed += tokens;
    if (tokens > 0) {
      if (l.inGranted === NO_LIMIT) this.unreported(l, tokens, 0);
      else this.reportDue(l);
    }
    const reset = secondsUntil(l.end, now);
    return {
      allowed: true,
      rejectedBy: null,
      retryAfterSeconds: reset,
      input: l.inLimit === null ? null : { limit: l.inLimit, remaining: positive(l.inLimit - l.othersIn - l.inUsed), resetSeconds: reset },
      output: l.outLimit === null ? null : { limit: l.outLimit, remaining: positive(l.outLimit - l.othersOut - l.outUsed), resetSeconds: reset },
    };
  }

  /** The lease clock's time now: one reading for an answer's adjust() and charge() together. */
  now(): number {
    return this.clock();
  }

  /** Counts output against the key's lease; false when no lease of this unit is held (send it). `now`: the clock's time, read once by the caller. */
  charge(key: LimitKey, unit: WindowUnit, tokens: number, now: number): boolean {
    const l = this.live(key, unit, now);
    if (l === null) return false;
    l.outUsed += tokens;
    this.unreported(l, 0, tokens);
    // Past its allowance the lease may not admit, and the primary must see the overshoot now.
    if (l.outGranted !== NO_LIMIT && l.outUsed >= l.outGranted) this.release(l);
    return true;
  }

  /** Absorbs an input correction in the key's lease; false when no lease of this unit is held. `now`: as in charge(). */
  adjust(key: LimitKey, unit: WindowUnit, delta: number, now: number): boolean {
    const l = this.live(key, unit, now);
    if (l === null) return false;
    l.inUsed += delta;
    if (l.inGranted === NO_LIMIT) this.unreported(l, delta, 0);
    else if (l.inUsed > l.inGranted) this.release(l);
    else this.reportDue(l);
    return true;
  }

  /** What everyone else has used of the window of lease `id` (MSG_USAGE); unknown ids are gone. */
  usage(id: number, othersIn: number, othersOut: number): void {
    const l = this.byId.get(id);
    if (l === undefined) return;
    l.othersIn = othersIn;
    l.othersOut = othersOut;
    if (!l.shared) {
      l.shared = true;
      // What it absorbed so far goes now, the rest at the end of each turn.
      if (l.inUsed !== l.inReported || l.inUnreported !== 0 || l.outUnreported !== 0) this.reportDue(l);
    }
  }

  /** The primary wants these leases back. */
  recall(ids: readonly number[]): void {
    for (const l of this.leases.values()) if (ids.includes(l.id)) this.release(l);
  }

  /** Gives every lease back (closing). */
  releaseAll(): void {
    for (const l of this.leases.values()) this.release(l);
    this.due = false;
    if (this.timer !== null) {
      clearTimeout(this.timer);
      this.timer = null;
    }
    if (this.holdTimer !== null) {
      clearTimeout(this.holdTimer);
      this.holdTimer = null;
    }
  }

  /** Sends what shared leases absorbed this turn (the client calls it as it flushes). */
  report(): void {
    if (!this.due || this.holdTimer !== null) return;
    this.due = false;
    this.reportedAt = globalThis.performance.now();
    this.reportAll();
  }

  private reportAll(): void {
    const now = this.clock();
    for (const l of this.leases.values()) {
      if (now >= l.end) this.drop(l);
      else this.sendUnreported(l, true);
    }
  }

  private live(key: LimitKey, unit: WindowUnit, now: number): HeldLease | null {
    const l = this.leases.get(key);
    if (l === undefined || l.unit !== unit) return null;
    if (now >= l.end) {
      this.drop(l);
      return null;
    }
    return l;
  }

  private drop(l: HeldLease): void {
    this.leases.delete(l.key);
    this.byId.delete(l.id);
  }

  private release(l: HeldLease): void {
    this.drop(l);
    // The return carries what was left of the input, so the use need not be reported before it.
    this.sendUnreported(l, false);
    this.send(OP_RETURN_LEASE, l.id, l.key, l.unit, l.inGranted === NO_LIMIT ? 0 : l.inGranted - l.inUsed);
  }

  private sendUnreported(l: HeldLease, used: boolean): void {
    // The charge names the lease, so the primary counts it against the lease's allowance.
    if (l.outUnreported > 0) this.send(OP_CHARGE_OUTPUT, l.id, l.key, l.unit, l.outUnreported);
    if (l.inUnreported !== 0) this.send(OP_ADJUST_INPUT, l.id, l.key, l.unit, l.inUnreported);
    l.outUnreported = 0;
    l.inUnreported = 0;
    if (used && l.inGranted !== NO_LIMIT && l.inUsed !== l.inReported) {
      this.send(OP_LEASE_USED, l.id, l.key, l.unit, l.inUsed);
      l.inReported = l.inUsed;
    }
  }

  private unreported(l: HeldLease, input: number, output: number): void {
    l.inUnreported += input;
    l.outUnreported += output;
    this.reportDue(l);
  }

  private reportDue(l: HeldLease): void {
    if (l.shared) {
      if (this.due) return;
      this.due = true;
      const wait = this.reportedAt + REPORT_INTERVAL_MS - globalThis.performance.now();
      if (wait <= 0) this.schedule();
      else {
        this.holdTimer = setTimeout(this.scheduleNow, wait);
        this.holdTimer.unref();
      }
    } else if (this.timer === null) {
      this.timer = setTimeout(this.reportNow, REPORT_INTERVAL_MS);
      this.timer.unref();
    }
  }
}

function positive(n: number): number {
  return n > 0 ? n : 0;
}
