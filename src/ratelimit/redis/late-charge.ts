import type { WindowUnit } from '../../config/resource-types.js';
import { LimitStoreUnavailableError } from '../errors.js';
import type { LateCharge } from '../limiter.js';
import type { Batch } from './batch.js';
import type { MultiBatch } from './multi-batch.js';

/** Who corrects a charge made late: the store, in a call of its own (store-limiter.ts). */
export interface LateChargeUndo {
  /** Adds `delta` input tokens (< 0: takes them back) on every limit of `c`, in the window it was charged in. */
  correctLateCharge(c: InDoubtCharge, delta: number): void;
}

const PENDING = 0;
const CHARGED = 1;
const RETURNED = 2;
const DONE = 3;

/**
 * An admission of a call that failed or timed out, which the `open` failure mode admitted without
 * counting it: Redis may still run the call (it stalled, then went on) and charge it, on every
 * limit of the call (`bases`, `units`). Its request gives it back (never reached a pod: giveBack)
 * before or after the late reply says whether Redis charged it (ranLate); the charge is undone
 * once both happened, only while its window has more than a timeout left (a give-back must not
 * reach the next window). A served request keeps the charge (nothing else counts it), corrected
 * by its answer's input correction (correct) the same way. Made only on
 * the failure path; nothing holds it but its request and the call's late-reply handler.
 */
export class InDoubtCharge implements LateCharge {
  readonly bases: readonly string[];
  readonly units: readonly WindowUnit[];
  readonly tokens: number;
  /** The call's `now` argument (the injected clock's reading, or '' for the Redis server's TIME). */
  readonly now: string;
  private readonly undo: LateChargeUndo;
  private state = PENDING;
  /** The incarnation of each limit's window the late reply showed ('' on a plain Redis): a correction goes only to it. */
  incarnations: readonly string[] = [];
  /** Date.now() before which an undo still lands in the window it was charged in. */
  private undoBefore = 0;
  /** Input corrections of the request's answer made before the late reply came (applied if it charged). */
  private pendingDelta = 0;

  constructor(undo: LateChargeUndo, bases: readonly string[], units: readonly WindowUnit[], tokens: number, now: string) {
    this.undo = undo;
    this.bases = bases;
    this.units = units;
    this.tokens = tokens;
    this.now = now;
  }

  /**
   * The late reply came: Redis charged it (`charged`) or refused it, with `msLeft` of its window, the
   * store's timeout and, on a Cluster, the incarnation of each limit's window (`incarnations`, per limit).
   */
  ranLate(charged: boolean, msLeft: number, timeoutMs: number, incarnations: readonly string[] = []): void {
    if (this.state !== PENDING && this.state !== RETURNED) return;
    this.incarnations = incarnations;
    const returned = this.state === RETURNED;
    this.state = charged ? CHARGED : DONE;
    this.undoBefore = Date.now() + msLeft - timeoutMs;
    if (charged && returned) this.undoNow();
    else if (charged && this.pendingDelta !== 0) this.send(this.pendingDelta);
  }

  giveBack(): void {
    if (this.state === PENDING) this.state = RETURNED;
    else if (this.state === CHARGED) this.undoNow();
  }

  /** The request's answer corrects its input count by `delta`: applied to the charge once it is known to be made. */
  correct(delta: number): void {
    if (this.state === PENDING) this.pendingDelta += delta;
    else if (this.state === CHARGED) this.send(delta);
  }

  private undoNow(): void {
    this.state = DONE;
    this.send(-this.tokens);
  }

  private send(delta: number): void {
    if (Date.now() < this.undoBefore) this.undo.correctLateCharge(this, delta);
  }
}

/**
 * A batch whose call failed in the `open` mode (store `name`): each operation fails, settles first,
 * each admission with an error of its own that carries what Redis may still charge of it.
 */
export function failInDoubt(b: Batch, undo: LateChargeUndo, name: string): InDoubtCharge[] {
  const err = new LimitStoreUnavailableError(name);
  for (const s of b.settles) s.reject(err);
  const bases = [b.base];
  const units = [b.unit];
  const out: InDoubtCharge[] = [];
  for (const a of b.admissions) out.push(rejectInDoubt(a, new InDoubtCharge(undo, bases, units, a.tokens, b.now), name));
  return out;
}

/** The same for a multi-limit batch: each admission was charged on every limit of the call (shadow ones too). */
export function failMultiInDoubt(b: MultiBatch, undo: LateChargeUndo, name: string): InDoubtCharge[] {
  const bases: string[] = [];
  const units: WindowUnit[] = [];
  for (let j = 0; j < b.terms.length; j++) {
    bases.push(b.base(j));
    units.push(b.terms[j].limit.unit);
  }
  const out: InDoubtCharge[] = [];
  for (const a of b.admissions) out.push(rejectInDoubt(a, new InDoubtCharge(undo, bases, units, a.tokens, b.now), name));
  return out;
}

function rejectInDoubt(a: { reject(err: unknown): void }, c: InDoubtCharge, name: string): InDoubtCharge {
  const err = new LimitStoreUnavailableError(name);
  err.lateCharge = c;
  a.reject(err);
  return c;
}
