import type { WindowUnit } from '../../config/resource-types.js';
import type { CounterStore, RouteCounters } from './counter-store.js';
import { NO_LIMIT, STATUS_ALLOWED, STATUS_REJECTED_INPUT } from '../decision-codec.js';

export interface LeaseBookOptions<W> {
  /**
   * A lease holds what is free in the window divided by this (input and output separately);
   * 0 turns leases off (the primary decides every request).
   */
  divisor: number;
  /** A recalled lease not given back within this many ms is forfeited (its tokens stay charged). */
  recallTimeoutMs: number;
  /** The array the worker's answers go into (the host sends it at the end of the turn). */
  replyTo(worker: W): number[];
  /** Asks a worker to give these leases back (sent after the worker's pending answers). */
  recall(worker: W, leaseIds: readonly number[]): void;
}

/** A slice of one route's window budget, held by one worker. */
interface Lease<W> {
  readonly id: number;
  readonly worker: W;
  /** Input tokens charged to the counter for it (0 without an input limit). */
  readonly input: number;
  /** Output tokens the worker may still charge without reporting them; Infinity without an output limit. */
  outLeft: number;
}

/** An admission waiting while the route's leases are recalled. */
interface Waiting<W> {
  worker: W;
  id: number;
  inLimit: number | null;
  outLimit: number | null;
  unit: WindowUnit;
  tokens: number;
}

/** The leases of one route in one window. */
class RouteLeases<W> {
  start: number;
  unit: WindowUnit;
  readonly leases = new Map<number, Lease<W>>();
  readonly byWorker = new Map<W, Lease<W>>();
  /** Sum of the leases' input tokens. */
  inLeased = 0;
  /** Sum of the output allowances left (each counted from 0 up). */
  outLeased = 0;
  /** Limits of the latest admission, to notice when the leases no longer fit. */
  inLimit: number | null = null;
  outLimit: number | null = null;
  /** Admissions held back while a recall is under way (non-null = recalling). */
  waiting: Waiting<W>[] | null = null;
  timer: NodeJS.Timeout | null = null;

  constructor(c: RouteCounters) {
    this.start = c.start;
    this.unit = c.unit;
  }
}

const NO_LEASE: readonly number[] = [0, 0, 0, 0];

/**
 * The primary's account of budget leased to workers (local mode, docs/rate-limiting.md).
 *
 * A worker whose admission the primary grants may also get a lease: input tokens charged to the
 * route's counter at once (a share of what is free), and an output allowance (a share of the
 * output budget not yet used or promised). The worker then admits on its own while a request's
 * tokens fit in its lease and its unreported output stays below its allowance, and gives the
 * lease back (with what it did not use) when it no longer fits, when the window ends, or when the
 * primary recalls it. Invariants, so that no admission made from a lease is one the primary would
 * have refused: the input counter, leases included, stays <= the input limit, and the output
 * counter plus the allowances left stays < the output limit. When a rejection might be wrong
 * because budget sits in leases, or a correction or overshoot breaks an invariant, the primary
 * recalls the route's leases and decides the waiting admissions once they are back.
 */
export class LeaseBook<W> {
  private readonly store: CounterStore;
  private readonly opts: LeaseBookOptions<W>;
  private readonly routes = new Map<string, RouteLeases<W>>();
  private nextId = 1;

  constructor(store: CounterStore, opts: LeaseBookOptions<W>) {
    if (!(opts.divisor === 0 || opts.divisor >= 1)) throw new RangeError(`lease divisor must be 0 or >= 1, got ${opts.divisor}`);
    this.store = store;
    this.opts = opts;
  }

  /** Decides (answer in replyTo(worker)) now, or once a recall this needs is over. */
  admit(worker: W, id: number, route: string, inLimit: number | null, outLimit: number | null, unit: WindowUnit, tokens: number): void {
    const c = this.store.current(route, unit);
    const rl = this.existing(route, c);
    if (rl !== null && rl.waiting !== null) {
      rl.waiting.push({ worker, id, inLimit, outLimit, unit, tokens });
      return;
    }
    this.decide(rl, worker, id, route, inLimit, outLimit, unit, tokens, this.opts.divisor > 0);
  }

  /** Output tokens of a finished answer; `leaseId` is the lease the worker counted them against (0: none). */
  charge(worker: W, leaseId: number, route: string, unit: WindowUnit, tokens: number): void {
    this.store.chargeOutputRaw(route, unit, tokens);
    const c = this.store.current(route, unit);
    const rl = this.existing(route, c);
    if (rl === null) return;
    const lease = rl.leases.get(leaseId);
    if (lease !== undefined && lease.worker === worker && lease.outLeft !== Infinity) {
      const before = lease.outLeft > 0 ? lease.outLeft : 0;
      lease.outLeft -= tokens;
      rl.outLeased -= before - (lease.outLeft > 0 ? lease.outLeft : 0);
    }
    this.check(rl, c, route);
  }

  /** An input correction reported to the primary (not absorbed by a lease). */
  adjust(route: string, unit: WindowUnit, delta: number): void {
    this.store.adjustInputRaw(route, unit, delta);
    const c = this.store.current(route, unit);
    const rl = this.existing(route, c);
    if (rl !== null) this.check(rl, c, route);
  }

  /** A lease given back with its unused input tokens; one of an ended window is ignored. */
  giveBack(worker: W, leaseId: number, route: string, unit: WindowUnit, unusedInput: number): void {
    const c = this.store.current(route, unit);
    const rl = this.existing(route, c);
    const lease = rl?.leases.get(leaseId);
    if (rl === null || lease === undefined || lease.worker !== worker) return;
    if (unusedInput !== 0) this.store.adjustInputRaw(route, unit, -unusedInput);
    this.remove(rl, lease);
    if (rl.waiting !== null) {
      if (rl.leases.size === 0) this.endRecall(rl, route);
    } else {
      this.check(rl, c, route);
      this.dropIfIdle(route, rl);
    }
  }

  /** A worker went away: its leases are forfeited (their tokens stay charged; nothing over-admits). */
  forgetWorker(worker: W): void {
    for (const [route, rl] of this.routes) {
      const lease = rl.byWorker.get(worker);
      if (lease === undefined) continue;
      this.forfeit(rl, lease, route);
      if (rl.waiting !== null && rl.leases.size === 0) this.endRecall(rl, route);
      else this.dropIfIdle(route, rl);
    }
  }

  /** Stops recall timers (the host is detached). */
  close(): void {
    for (const rl of this.routes.values()) if (rl.timer !== null) clearTimeout(rl.timer);
    this.routes.clear();
  }

  private decide(
    rl: RouteLeases<W> | null, worker: W, id: number, route: string,
    inLimit: number | null, outLimit: number | null, unit: WindowUnit, tokens: number, mayGrant: boolean,
  ): void {
    const out = this.opts.replyTo(worker);
    const mark = out.length;
    out.push(id);
    this.store.admitInto(out, route, inLimit, outLimit, unit, tokens);
    if (rl !== null) {
      rl.inLimit = inLimit;
      rl.outLimit = outLimit;
    }
    const status = out[mark + 1];
    if (status !== STATUS_ALLOWED) {
      // Rejected by input while leases hold enough to fit it: decide once they are back. (An
      // output rejection stands: the output counter only grows, leases or not.)
      if (rl !== null && status === STATUS_REJECTED_INPUT && rl.leases.size > 0
        && inLimit !== null && this.store.current(route, unit).input - rl.inLeased + tokens <= inLimit) {
        out.length = mark;
        this.startRecall(rl, route);
        rl.waiting!.push({ worker, id, inLimit, outLimit, unit, tokens });
        return;
      }
      out.push(...NO_LEASE);
      return;
    }
    if (mayGrant && (rl === null || !rl.byWorker.has(worker))) this.grant(rl, worker, route, inLimit, outLimit, unit, tokens, out);
    else out.push(...NO_LEASE);
  }

  /** Appends [leaseId, input, output, windowEnd] of a new lease, or NO_LEASE when too little is free. */
  private grant(
    rl: RouteLeases<W> | null, worker: W, route: string,
    inLimit: number | null, outLimit: number | null, unit: WindowUnit, tokens: number, out: number[],
  ): void {
    const c = this.store.current(route, unit);
    const d = this.opts.divisor;
    const input = inLimit === null ? NO_LIMIT : Math.floor((inLimit - c.input) / d);
    // A lease that would not hold two more requests like this one is not worth its messages.
    if (inLimit !== null && (input < 1 || input < 2 * tokens)) {
      out.push(...NO_LEASE);
      return;
    }
    const promised = rl === null ? 0 : rl.outLeased;
    const output = outLimit === null ? NO_LIMIT : Math.floor((outLimit - 1 - c.output - promised) / d);
    if (outLimit !== null && output < 1) {
      out.push(...NO_LEASE);
      return;
    }
    if (rl === null) {
      rl = new RouteLeases<W>(c);
      rl.inLimit = inLimit;
      rl.outLimit = outLimit;
      this.routes.set(route, rl);
    }
    const lease: Lease<W> = {
      id: this.nextId++, worker, input: input === NO_LIMIT ? 0 : input, outLeft: output === NO_LIMIT ? Infinity : output,
    };
    c.input += lease.input;
    rl.inLeased += lease.input;
    if (output !== NO_LIMIT) rl.outLeased += output;
    rl.leases.set(lease.id, lease);
    rl.byWorker.set(worker, lease);
    out.push(lease.id, input, output, c.end);
  }

  /** The route's leases of the current window, or null; leases of an ended window are dropped. */
  private existing(route: string, c: RouteCounters): RouteLeases<W> | null {
    const rl = this.routes.get(route);
    if (rl === undefined) return null;
    if (rl.start === c.start && rl.unit === c.unit) return rl;
    // A new window: its counters start at 0, the old leases mean nothing.
    this.routes.delete(route);
    if (rl.timer !== null) clearTimeout(rl.timer);
    if (rl.waiting !== null) {
      for (const w of rl.waiting) this.decide(null, w.worker, w.id, route, w.inLimit, w.outLimit, w.unit, w.tokens, false);
    }
    return null;
  }

  /** Recalls when a lease could break an invariant (a correction or overshoot, or a lower limit). */
  private check(rl: RouteLeases<W>, c: RouteCounters, route: string): void {
    if (rl.waiting !== null || rl.leases.size === 0) return;
    const overIn = rl.inLimit !== null && c.input > rl.inLimit;
    const overOut = rl.outLimit !== null && c.output + rl.outLeased >= rl.outLimit;
    if (overIn || overOut) this.startRecall(rl, route);
  }

  private startRecall(rl: RouteLeases<W>, route: string): void {
    if (rl.waiting !== null) return;
    rl.waiting = [];
    const byWorker = new Map<W, number[]>();
    for (const lease of rl.leases.values()) {
      const ids = byWorker.get(lease.worker);
      if (ids === undefined) byWorker.set(lease.worker, [lease.id]);
      else ids.push(lease.id);
    }
    for (const [worker, ids] of byWorker) this.opts.recall(worker, ids);
    rl.timer = setTimeout(() => this.recallTimedOut(route, rl), this.opts.recallTimeoutMs);
    rl.timer.unref();
  }

  private recallTimedOut(route: string, rl: RouteLeases<W>): void {
    rl.timer = null;
    if (this.routes.get(route) !== rl || rl.waiting === null) return;
    const c = this.store.current(route, rl.unit);
    if (this.existing(route, c) === null) return; // the window ended meanwhile; waiting ones were decided
    for (const lease of [...rl.leases.values()]) this.forfeit(rl, lease, route);
    this.endRecall(rl, route);
  }

  /** Decides the admissions that waited for the recall, in arrival order, without new leases. */
  private endRecall(rl: RouteLeases<W>, route: string): void {
    if (rl.timer !== null) {
      clearTimeout(rl.timer);
      rl.timer = null;
    }
    const waiting = rl.waiting ?? [];
    rl.waiting = null;
    for (const w of waiting) this.decide(this.routes.get(route) ?? null, w.worker, w.id, route, w.inLimit, w.outLimit, w.unit, w.tokens, false);
    this.dropIfIdle(route, rl);
  }

  /** A lease that will not come back: its input stays charged, its whole allowance counts as output. */
  private forfeit(rl: RouteLeases<W>, lease: Lease<W>, route: string): void {
    if (lease.outLeft !== Infinity && lease.outLeft > 0) this.store.chargeOutputRaw(route, rl.unit, lease.outLeft);
    this.remove(rl, lease);
  }

  private remove(rl: RouteLeases<W>, lease: Lease<W>): void {
    rl.leases.delete(lease.id);
    if (rl.byWorker.get(lease.worker) === lease) rl.byWorker.delete(lease.worker);
    rl.inLeased -= lease.input;
    if (lease.outLeft !== Infinity && lease.outLeft > 0) rl.outLeased -= lease.outLeft;
  }

  private dropIfIdle(route: string, rl: RouteLeases<W>): void {
    if (rl.leases.size === 0 && rl.waiting === null && this.routes.get(route) === rl) this.routes.delete(route);
  }
}
