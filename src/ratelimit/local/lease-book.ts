import type { LimitKey } from '../limit-key.js';
import type { WindowUnit } from '../../config/resource-types.js';
import { SWEEP_INTERVAL_MS, type CounterStore, type LimitCounters, type RawTerm } from './counter-store.js';
import { DECISION_STRIDE, NO_LIMIT, STATUS_ALLOWED, STATUS_REJECTED_INPUT } from '../decision-codec.js';
import { setReadDeadline } from '../../timers.js';

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
  /** The array a worker's usage updates go into ([leaseId, othersInput, othersOutput] each; see publish()). */
  usageTo(worker: W): number[];
  /** Called when publish() has something to do (the host calls it at the end of the turn). */
  changed(): void;
}

/** A slice of one key's window budget, held by one worker. */
interface Lease<W> {
  readonly id: number;
  readonly worker: W;
  /** Input tokens charged to the counter for it (0 without an input limit). */
  readonly input: number;
  /** Output tokens the worker may still charge without reporting them; Infinity without an output limit. */
  outLeft: number;
  /** Input the worker reported as used from it (admissions and corrections, OP_LEASE_USED). */
  inUsed: number;
  /** Output the worker charged against it. */
  outCharged: number;
  /** The usage of everyone else the holder was last told (publish()). */
  sentIn: number;
  sentOut: number;
}

/** A refusal note as the primary keeps it: its id, its basis, and the usage its holder was last told (publish()). */
interface Note {
  readonly id: number;
  /** The input count (leases given back) it was made with: it holds while the count is not below. */
  readonly basis: number;
  sentIn: number;
  sentOut: number;
}

/** An admission waiting while the key's leases are recalled. */
interface Waiting<W> {
  worker: W;
  id: number;
  inLimit: number | null;
  outLimit: number | null;
  unit: WindowUnit;
  tokens: number;
  /** A multi-limit admission (admitAll): its terms; the other fields but worker/id/tokens unused. */
  terms: readonly RawTerm[] | null;
}

/** The leases of one key in one window. */
class KeyLeases<W> {
  readonly key: LimitKey;
  start: number;
  unit: WindowUnit;
  /** The window's end (epoch ms): the record is void from then on (sweep()). */
  readonly end: number;
  readonly leases = new Map<number, Lease<W>>();
  readonly byWorker = new Map<W, Lease<W>>();
  /** Sum of the leases' input tokens. */
  inLeased = 0;
  /** Sum of the input the holders reported as used from their leases. */
  inLeasedUsed = 0;
  /** Queued for publish(). */
  dirty = false;
  /** Sum of the output allowances left (each counted from 0 up). */
  outLeased = 0;
  /** Limits of the latest admission, to notice when the leases no longer fit. */
  inLimit: number | null = null;
  outLimit: number | null = null;
  /** Admissions held back while a recall is under way (non-null = recalling). */
  waiting: Waiting<W>[] | null = null;
  /** The refusal note each worker holds of the key; see LeaseBook, "Refusal notes". */
  readonly notes = new Map<W, Note>();
  timer: NodeJS.Timeout | null = null;

  constructor(key: LimitKey, c: LimitCounters) {
    this.key = key;
    this.start = c.start;
    this.unit = c.unit;
    this.end = c.end;
  }
}

const NO_LEASE: readonly number[] = [0, 0, 0, 0];

/** The key's input count as if every lease came back unused: what a refusal for good is measured against. */
function basis<W>(rl: KeyLeases<W> | null, c: LimitCounters): number {
  return rl === null ? c.input : c.input - rl.inLeased;
}

/** What requests have used of the key's input (the headers' figure): the unused part of the leases is not used. */
function used<W>(rl: KeyLeases<W>, c: LimitCounters): number {
  return c.input - rl.inLeased + rl.inLeasedUsed;
}

/**
 * The primary's account of budget leased to workers (local mode, docs/internals/rate-limiting.md).
 *
 * A worker whose admission the primary grants may also get a lease: input tokens charged to the
 * key's counter at once (a share of what is free), and an output allowance (a share of the
 * output budget not yet used or promised). The worker then admits on its own while a request's
 * tokens fit in its lease and its unreported output stays below its allowance, and gives the
 * lease back (with what it did not use) when it no longer fits, when the window ends, or when the
 * primary recalls it. Invariants, so that no admission made from a lease is one the primary would
 * have refused: the input counter, leases included, stays <= the input limit, and the output
 * counter plus the allowances left stays < the output limit. When a rejection might be wrong
 * because budget sits in leases, or a correction or overshoot breaks an invariant, the primary
 * recalls the key's leases and decides the waiting admissions once they are back.
 *
 * The counter charges a lease in full, but the x-ratelimit-remaining-* figures count only what
 * requests used: the primary's own answers subtract the unused part of the leases (as their
 * holders last reported it), and publish() tells every holder what everyone else has used, so
 * that its own answers are right too (within what is still on its way).
 *
 * Refusal notes: an admission refused for good (by input with no budget in leases that could
 * make it fit, or by output, which only grows in a window) is answered with a note in the lease's
 * place (a multi-limit admission: one per limit, unless one is a shadow limit): [noteId, the input
 * count with every lease given back, output limit reached (1/0), window end]. The worker refuses
 * from it, without asking, every request that count refuses (refusal-notes.ts); publish() keeps
 * its header figures current as it does a lease's. Input counts only fall by a give-back or a
 * correction; when one brings the count below what a note out was made with, the primary recalls
 * that note (MSG_RECALL, in the same message as lease recalls), so a note never refuses
 * what the primary, as the worker has last heard from it, would admit. A note is never given
 * back: it is void at its window's end.
 */
export class LeaseBook<W> {
  private readonly store: CounterStore;
  private readonly opts: LeaseBookOptions<W>;
  private readonly limits = new Map<string, KeyLeases<W>>();
  private readonly dirty: KeyLeases<W>[] = [];
  private nextId = 1;
  private nextSweepAt: number;

  constructor(store: CounterStore, opts: LeaseBookOptions<W>) {
    if (!(opts.divisor === 0 || opts.divisor >= 1)) throw new RangeError(`lease divisor must be 0 or >= 1, got ${opts.divisor}`);
    this.store = store;
    this.opts = opts;
    this.nextSweepAt = store.now() + SWEEP_INTERVAL_MS;
  }

  /** Keys with a record of leases or notes (tests). */
  get size(): number {
    return this.limits.size;
  }

  /** Decides (answer in replyTo(worker)) now, or once a recall this needs is over. */
  admit(worker: W, id: number, key: LimitKey, inLimit: number | null, outLimit: number | null, unit: WindowUnit, tokens: number): void {
    const now = this.store.now();
    if (now >= this.nextSweepAt) this.sweep(now);
    const c = this.store.current(key, unit, now);
    const rl = this.existing(key, c);
    if (rl !== null && rl.waiting !== null) {
      rl.waiting.push({ worker, id, inLimit, outLimit, unit, tokens, terms: null });
      return;
    }
    if (rl !== null) this.touch(rl);
    this.decide(rl, worker, id, key, inLimit, outLimit, unit, tokens, this.opts.divisor > 0, now);
  }

  /**
   * One admission against several limits (route and tenant), decided here atomically
   * (CounterStore.admitAllInto): one reply per term, in order, each with a lease of its key when
   * admitted and worth one (never for shadow limits), as single admissions get. Waits while a
   * key of it is being recalled; refused by input on a key whose leases hold enough to fit it,
   * it recalls them and waits, as single admissions do.
   */
  admitAll(worker: W, id: number, terms: readonly RawTerm[], tokens: number, mayGrant = this.opts.divisor > 0): void {
    const now = this.store.now(); // one reading: every count of this decision is of one window
    if (now >= this.nextSweepAt) this.sweep(now);
    for (const t of terms) {
      const rl = this.existing(t.key, this.store.current(t.key, t.unit, now));
      if (rl !== null && rl.waiting !== null) {
        rl.waiting.push({ worker, id, inLimit: null, outLimit: null, unit: t.unit, tokens, terms });
        return;
      }
    }
    const decided: number[] = [];
    const admitted = this.store.admitAllInto(decided, terms, tokens, now);
    if (!admitted) {
      for (let i = 0; i < terms.length; i++) {
        const t = terms[i];
        if (t.shadow || decided[i * DECISION_STRIDE] !== STATUS_REJECTED_INPUT || t.inLimit === null) continue;
        const rl = this.limits.get(t.key);
        if (rl === undefined || rl.leases.size === 0) continue;
        if (this.store.current(t.key, t.unit, now).input - rl.inLeased + tokens > t.inLimit) continue;
        this.startRecall(rl, t.key);
        rl.waiting!.push({ worker, id, inLimit: null, outLimit: null, unit: t.unit, tokens, terms });
        return;
      }
    }
    const out = this.opts.replyTo(worker);
    // Refused for good (a recall would have returned above): each limit's reply carries a note,
    // unless a shadow limit is among them (its verdicts are the primary's to count).
    let noting = !admitted && mayGrant;
    for (const t of terms) if (t.shadow) noting = false;
    for (let i = 0; i < terms.length; i++) {
      const t = terms[i];
      const mark = out.length;
      out.push(id);
      for (let j = 0; j < DECISION_STRIDE; j++) out.push(decided[i * DECISION_STRIDE + j]);
      const rl = this.limits.get(t.key) ?? null;
      if (rl !== null) {
        this.touch(rl);
        if (t.inLimit !== null) {
          const u = used(rl, this.store.current(t.key, t.unit, now));
          out[mark + 4] = t.inLimit > u ? t.inLimit - u : 0;
        }
      }
      if (admitted && mayGrant && !t.shadow && (rl === null || !rl.byWorker.has(worker))) {
        if (rl !== null) {
          rl.inLimit = t.inLimit;
          rl.outLimit = t.outLimit;
        }
        this.grant(rl, worker, t.key, t.inLimit, t.outLimit, t.unit, tokens, out, now);
      } else if (noting) {
        this.note(rl, worker, t.key, t.inLimit, t.outLimit, t.unit, out, now);
      } else {
        out.push(...NO_LEASE);
      }
    }
  }

  /** Output tokens of a finished answer; `leaseId` is the lease the worker counted them against (0: none). */
  charge(worker: W, leaseId: number, key: LimitKey, unit: WindowUnit, tokens: number): void {
    this.store.chargeOutputRaw(key, unit, tokens);
    const c = this.store.current(key, unit);
    const rl = this.existing(key, c);
    if (rl === null) return;
    const lease = rl.leases.get(leaseId);
    if (lease !== undefined && lease.worker === worker) {
      lease.outCharged += tokens;
      if (lease.outLeft !== Infinity) {
        const before = lease.outLeft > 0 ? lease.outLeft : 0;
        lease.outLeft -= tokens;
        rl.outLeased -= before - (lease.outLeft > 0 ? lease.outLeft : 0);
      }
    }
    this.touch(rl);
    this.check(rl, c, key);
  }

  /** An input correction reported to the primary (not absorbed by a lease). */
  adjust(key: LimitKey, unit: WindowUnit, delta: number): void {
    this.store.adjustInputRaw(key, unit, delta);
    const c = this.store.current(key, unit);
    const rl = this.existing(key, c);
    if (rl === null) return;
    if (delta < 0) this.checkNotes(rl, c);
    this.touch(rl);
    this.check(rl, c, key);
  }

  /**
   * The input its holder has used from a lease so far (admissions and corrections, absolute):
   * only the headers' figures change, the counter already holds the whole lease.
   */
  leaseUsed(worker: W, leaseId: number, key: LimitKey, unit: WindowUnit, used: number): void {
    const rl = this.existing(key, this.store.current(key, unit));
    const lease = rl?.leases.get(leaseId);
    if (rl === null || lease === undefined || lease.worker !== worker || lease.input === 0) return;
    rl.inLeasedUsed += used - lease.inUsed;
    lease.inUsed = used;
    this.touch(rl);
  }

  /**
   * Queues for each lease holder what everyone else has used of the key's window, when that
   * changed since it was last told: [leaseId, othersInput, othersOutput] into usageTo(holder).
   * The holder's figures are then the limit minus that minus its own use of the lease.
   */
  publish(): void {
    const dirty = this.dirty;
    for (let i = 0; i < dirty.length; i++) {
      const rl = dirty[i];
      rl.dirty = false;
      if (this.limits.get(rl.key) !== rl) continue;
      const c = this.store.current(rl.key, rl.unit);
      if (c.start !== rl.start || c.unit !== rl.unit) continue;
      const inUsed = rl.inLimit === null ? 0 : used(rl, c);
      const outUsed = rl.outLimit === null ? 0 : c.output;
      for (const lease of rl.leases.values()) {
        const othersIn = rl.inLimit === null ? 0 : inUsed - lease.inUsed;
        const othersOut = rl.outLimit === null ? 0 : c.output - lease.outCharged;
        if (othersIn === lease.sentIn && othersOut === lease.sentOut) continue;
        lease.sentIn = othersIn;
        lease.sentOut = othersOut;
        this.opts.usageTo(lease.worker).push(lease.id, othersIn, othersOut);
      }
      // A note's holder uses nothing of the window: it is told what everyone has used.
      for (const [worker, note] of rl.notes) {
        if (inUsed === note.sentIn && outUsed === note.sentOut) continue;
        note.sentIn = inUsed;
        note.sentOut = outUsed;
        this.opts.usageTo(worker).push(note.id, inUsed, outUsed);
      }
    }
    dirty.length = 0;
  }

  /** A lease given back with its unused input tokens; one of an ended window is ignored. */
  giveBack(worker: W, leaseId: number, key: LimitKey, unit: WindowUnit, unusedInput: number): void {
    const c = this.store.current(key, unit);
    const rl = this.existing(key, c);
    const lease = rl?.leases.get(leaseId);
    if (rl === null || lease === undefined || lease.worker !== worker) return;
    if (unusedInput !== 0) this.store.adjustInputRaw(key, unit, -unusedInput);
    this.remove(rl, lease);
    this.checkNotes(rl, c);
    this.touch(rl);
    if (rl.waiting !== null) {
      if (rl.leases.size === 0) this.endRecall(rl, key);
    } else {
      this.check(rl, c, key);
      this.dropIfIdle(key, rl);
    }
  }

  /** A worker went away: its leases are forfeited (their tokens stay charged; nothing over-admits). */
  forgetWorker(worker: W): void {
    for (const [key, rl] of this.limits) {
      rl.notes.delete(worker);
      const lease = rl.byWorker.get(worker);
      if (lease === undefined) {
        this.dropIfIdle(key, rl);
        continue;
      }
      this.forfeit(rl, lease, key);
      this.touch(rl);
      if (rl.waiting !== null && rl.leases.size === 0) this.endRecall(rl, key);
      else this.dropIfIdle(key, rl);
    }
  }

  /** Stops recall timers (the host is detached). */
  close(): void {
    for (const rl of this.limits.values()) if (rl.timer !== null) clearTimeout(rl.timer);
    this.limits.clear();
    this.dirty.length = 0;
  }

  private decide(
    rl: KeyLeases<W> | null, worker: W, id: number, key: LimitKey,
    inLimit: number | null, outLimit: number | null, unit: WindowUnit, tokens: number, mayGrant: boolean, now: number,
  ): void {
    const out = this.opts.replyTo(worker);
    const mark = out.length;
    out.push(id);
    this.store.admitInto(out, key, inLimit, outLimit, unit, tokens, now);
    if (rl !== null) {
      rl.inLimit = inLimit;
      rl.outLimit = outLimit;
      if (inLimit !== null) {
        const u = used(rl, this.store.current(key, unit, now));
        out[mark + 4] = inLimit > u ? inLimit - u : 0;
      }
    }
    const status = out[mark + 1];
    if (status !== STATUS_ALLOWED) {
      // Rejected by input while leases hold enough to fit it: decide once they are back. (An
      // output rejection stands: the output counter only grows, leases or not.)
      if (rl !== null && status === STATUS_REJECTED_INPUT && rl.leases.size > 0
        && inLimit !== null && this.store.current(key, unit, now).input - rl.inLeased + tokens <= inLimit) {
        out.length = mark;
        this.startRecall(rl, key);
        rl.waiting!.push({ worker, id, inLimit, outLimit, unit, tokens, terms: null });
        return;
      }
      if (mayGrant) this.note(rl, worker, key, inLimit, outLimit, unit, out, now);
      else out.push(...NO_LEASE);
      return;
    }
    if (mayGrant && (rl === null || !rl.byWorker.has(worker))) this.grant(rl, worker, key, inLimit, outLimit, unit, tokens, out, now);
    else out.push(...NO_LEASE);
  }

  /**
   * Appends [noteId, input count with the leases given back, output limit reached, windowEnd] of
   * the refusal note of a refusal for good, and keeps which worker holds it.
   */
  private note(
    rl: KeyLeases<W> | null, worker: W, key: LimitKey, inLimit: number | null, outLimit: number | null, unit: WindowUnit, out: number[], now: number,
  ): void {
    const c = this.store.current(key, unit, now);
    if (rl === null) {
      rl = new KeyLeases<W>(key, c);
      rl.inLimit = inLimit;
      rl.outLimit = outLimit;
      this.limits.set(key, rl);
    }
    const input = basis(rl, c);
    const id = this.nextId++;
    // What the answer's figures say was used (publish() tells the holder when that changes).
    rl.notes.set(worker, { id, basis: input, sentIn: inLimit === null ? 0 : used(rl, c), sentOut: outLimit === null ? 0 : c.output });
    out.push(id, input, outLimit !== null && c.output >= outLimit ? 1 : 0, c.end);
  }

  /** Recalls the key's refusal notes made with an input count (leases given back) above what it has fallen to. */
  private checkNotes(rl: KeyLeases<W>, c: LimitCounters): void {
    if (rl.notes.size === 0) return;
    const count = basis(rl, c);
    for (const [worker, note] of rl.notes) {
      if (note.basis <= count) continue;
      this.opts.recall(worker, [note.id]);
      rl.notes.delete(worker);
    }
  }

  /** Appends [leaseId, input, output, windowEnd] of a new lease, or NO_LEASE when too little is free. */
  private grant(
    rl: KeyLeases<W> | null, worker: W, key: LimitKey,
    inLimit: number | null, outLimit: number | null, unit: WindowUnit, tokens: number, out: number[], now: number,
  ): void {
    const c = this.store.current(key, unit, now);
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
      rl = new KeyLeases<W>(key, c);
      rl.inLimit = inLimit;
      rl.outLimit = outLimit;
      this.limits.set(key, rl);
    }
    // What the holder works out from the decision it gets (held-leases.ts); publish() corrects it.
    const n = out.length;
    const lease: Lease<W> = {
      id: this.nextId++, worker, input: input === NO_LIMIT ? 0 : input, outLeft: output === NO_LIMIT ? Infinity : output,
      inUsed: 0, outCharged: 0,
      sentIn: inLimit === null ? 0 : inLimit - out[n - 5], sentOut: outLimit === null ? 0 : outLimit - out[n - 2],
    };
    // Other workers hold leases of the key: tell the new holder at once, so it reports its use
    // at the end of each turn (held-leases.ts).
    if (rl !== null && rl.leases.size > 0) lease.sentIn = NaN;
    c.input += lease.input;
    rl.inLeased += lease.input;
    if (output !== NO_LIMIT) rl.outLeased += output;
    rl.leases.set(lease.id, lease);
    rl.byWorker.set(worker, lease);
    this.touch(rl);
    out.push(lease.id, input, output, c.end);
  }

  /** The key's leases of the current window, or null; leases of an ended window are dropped. */
  private existing(key: LimitKey, c: LimitCounters): KeyLeases<W> | null {
    const rl = this.limits.get(key);
    if (rl === undefined) return null;
    if (rl.start === c.start && rl.unit === c.unit) return rl;
    // A new window: its counters start at 0, the old leases mean nothing.
    this.limits.delete(key);
    if (rl.timer !== null) clearTimeout(rl.timer);
    if (rl.waiting !== null) {
      for (const w of rl.waiting) {
        if (w.terms !== null) this.admitAll(w.worker, w.id, w.terms, w.tokens, false);
        else this.decide(null, w.worker, w.id, key, w.inLimit, w.outLimit, w.unit, w.tokens, false, this.store.now());
      }
    }
    return null;
  }

  /** Recalls when a lease could break an invariant (a correction or overshoot, or a lower limit). */
  private check(rl: KeyLeases<W>, c: LimitCounters, key: LimitKey): void {
    if (rl.waiting !== null || rl.leases.size === 0) return;
    const overIn = rl.inLimit !== null && c.input > rl.inLimit;
    const overOut = rl.outLimit !== null && c.output + rl.outLeased >= rl.outLimit;
    if (overIn || overOut) this.startRecall(rl, key);
  }

  private startRecall(rl: KeyLeases<W>, key: LimitKey): void {
    if (rl.waiting !== null) return;
    rl.waiting = [];
    const byWorker = new Map<W, number[]>();
    for (const lease of rl.leases.values()) {
      const ids = byWorker.get(lease.worker);
      if (ids === undefined) byWorker.set(lease.worker, [lease.id]);
      else ids.push(lease.id);
    }
    for (const [worker, ids] of byWorker) this.opts.recall(worker, ids);
    // A read deadline (timers.ts): leases given back in time while the primary's loop was held
    // past it are read first, not forfeited (which would refuse the waiting admissions). One that
    // runs after its recall ended finds the key's leases dropped (a recall ends with none left).
    rl.timer = setReadDeadline(() => this.recallTimedOut(key, rl), this.opts.recallTimeoutMs);
    rl.timer.unref();
  }

  private recallTimedOut(key: LimitKey, rl: KeyLeases<W>): void {
    rl.timer = null;
    if (this.limits.get(key) !== rl || rl.waiting === null) return;
    const c = this.store.current(key, rl.unit);
    if (this.existing(key, c) === null) return; // the window ended meanwhile; waiting ones were decided
    for (const lease of [...rl.leases.values()]) this.forfeit(rl, lease, key);
    this.endRecall(rl, key);
  }

  /** Decides the admissions that waited for the recall, in arrival order, without new leases. */
  private endRecall(rl: KeyLeases<W>, key: LimitKey): void {
    if (rl.timer !== null) {
      clearTimeout(rl.timer);
      rl.timer = null;
    }
    const waiting = rl.waiting ?? [];
    rl.waiting = null;
    for (const w of waiting) {
      if (w.terms !== null) this.admitAll(w.worker, w.id, w.terms, w.tokens, false);
      else this.decide(this.limits.get(key) ?? null, w.worker, w.id, key, w.inLimit, w.outLimit, w.unit, w.tokens, false, this.store.now());
    }
    this.dropIfIdle(key, rl);
  }

  /** A lease that will not come back: its input stays charged, its whole allowance counts as output. */
  private forfeit(rl: KeyLeases<W>, lease: Lease<W>, key: LimitKey): void {
    if (lease.outLeft !== Infinity && lease.outLeft > 0) this.store.chargeOutputRaw(key, rl.unit, lease.outLeft);
    this.remove(rl, lease);
  }

  private remove(rl: KeyLeases<W>, lease: Lease<W>): void {
    rl.leases.delete(lease.id);
    if (rl.byWorker.get(lease.worker) === lease) rl.byWorker.delete(lease.worker);
    rl.inLeased -= lease.input;
    rl.inLeasedUsed -= lease.inUsed;
    if (lease.outLeft !== Infinity && lease.outLeft > 0) rl.outLeased -= lease.outLeft;
  }

  /**
   * Drops the records of windows that have ended (checked on use, once a SWEEP_INTERVAL_MS): their
   * leases and notes are void in the workers, and a key refused once and never used again (a
   * tenant's) would keep its record. One waiting for a recall is left to the recall's end.
   */
  private sweep(now: number): void {
    this.nextSweepAt = now + SWEEP_INTERVAL_MS;
    for (const [key, rl] of this.limits) {
      if (now < rl.end || rl.waiting !== null) continue;
      if (rl.timer !== null) clearTimeout(rl.timer);
      this.limits.delete(key);
    }
  }

  /** Queues the key for publish(). */
  private touch(rl: KeyLeases<W>): void {
    if (rl.dirty) return;
    rl.dirty = true;
    this.dirty.push(rl);
    if (this.dirty.length === 1) this.opts.changed();
  }

  private dropIfIdle(key: LimitKey, rl: KeyLeases<W>): void {
    if (rl.leases.size === 0 && rl.waiting === null && rl.notes.size === 0 && this.limits.get(key) === rl) this.limits.delete(key);
  }
}
