import type { Decision, LateCharge, LimitTerm, TokenLimiter } from './limiter.js';
import { isShadow } from './limiter.js';
import { failureModeBit, withLateCharge } from './failure-mode-marks.js';
import { sameWindow } from './windows.js';

/** A limit of a request and the limiter that holds its counters. */
export interface LimiterTerm extends LimitTerm {
  readonly limiter: TokenLimiter;
}

/**
 * Admits a request against every limit that applies (route and tenant): the decisions, in the
 * order of `terms`. When every term is on one limiter that can decide several keys at once
 * (admitAll: the local primary, one Redis), that one atomic decision. Otherwise (limits on
 * different stores, or a Redis Cluster whose keys are in different slots) see admitInOrder.
 */
export function admitTerms(terms: readonly LimiterTerm[], inputTokens: number): Promise<Decision[]> | Decision[] {
  const l = terms[0].limiter;
  let same = true;
  for (let i = 1; i < terms.length; i++) if (terms[i].limiter !== l) same = false;
  if (same && l.admitAll !== undefined) return l.admitAll(terms, inputTokens);
  return admitInOrder(terms, inputTokens);
}

/**
 * The admission across stores that cannot decide together: the enforced limits one after the
 * other (each admit() charges only when it allows); when one refuses or fails, what the ones
 * before it charged is given back, so a rejected request charges none of them in the end. Never
 * admits past a limit; a concurrent request may see the tokens of one that is being refused for
 * that short while (and be refused with it). Shadow limits are charged once the request is in.
 * The give-back carries the time the admission began (giveBackInput's `admittedAt`): it goes only to
 * limits whose window then is still on, and to a Redis store only if the process that answered it
 * then still answers.
 */
export async function admitInOrder(terms: readonly LimiterTerm[], inputTokens: number): Promise<Decision[]> {
  // No charge of this admission is older: a give-back goes only to a Redis process that has
  // answered since (one that restarted while a later limit was asked never held the charge).
  const startedAt = Date.now();
  const decisions: Decision[] = new Array<Decision>(terms.length);
  const charged: LimiterTerm[] = [];
  /** Bit k: charged[k] was admitted by its failure mode (its give-back goes there). */
  let chargedByFailureMode = 0;
  /** What a store may still charge late of the admissions its `open` failure mode took (Decision.lateCharge). */
  let lateCharges: LateCharge[] | null = null;
  /** The window each of `charged` was charged in (Decision.window; -1: the process clock's). */
  const windows: number[] = [];
  const charge = (t: LimiterTerm, d: Decision): void => {
    chargedByFailureMode |= failureModeBit(d, charged.length);
    lateCharges = withLateCharge(lateCharges, d);
    charged.push(t);
    windows.push(d.window ?? -1);
  };
  let admitted = true;
  try {
    for (let i = 0; i < terms.length && admitted; i++) {
      const t = terms[i];
      if (isShadow(t.limit)) continue;
      const d = await t.limiter.admit(t.key, t.limit, inputTokens);
      decisions[i] = d;
      if (!d.allowed) admitted = false;
      else charge(t, d);
    }
    for (let i = 0; i < terms.length; i++) {
      const t = terms[i];
      if (!isShadow(t.limit)) continue;
      const tokens = admitted ? inputTokens : 0;
      if (t.limiter.admitAll !== undefined) {
        // Alone in admitAll, a shadow limit is charged past its limit too.
        const sd = (await t.limiter.admitAll([t], tokens))[0];
        decisions[i] = sd;
        if (admitted) charge(t, sd);
        continue;
      }
      const d = await t.limiter.admit(t.key, t.limit, tokens);
      decisions[i] = d;
      if (!admitted) continue;
      charge(t, d);
      if (!d.allowed) await t.limiter.adjustInput(t.key, t.limit, inputTokens, d.byFailureMode === true); // shadow: counted past its limit
    }
  } catch (err) {
    await giveBackInput(charged, inputTokens, chargedByFailureMode, startedAt, lateCharges, windows);
    throw err;
  }
  if (!admitted) await giveBackInput(charged, inputTokens, chargedByFailureMode, startedAt, lateCharges, windows);
  for (let i = 0; i < terms.length; i++) {
    // An enforced limit not asked (one before it refused): neither charged nor refused.
    if (decisions[i] === undefined) decisions[i] = { allowed: true, rejectedBy: null, retryAfterSeconds: 1, input: null, output: null };
  }
  return decisions;
}

/**
 * Whether term `i`'s input correction or give-back may still be owed at `now`: a request's input
 * belongs to the window that admitted it, and a later one owes it nothing. With the window its
 * store charged (`windows`, Decision.window) the store decides by its own clock when it applies it:
 * owed here. Else by the process clock: its window at `admittedAt` is still on.
 */
export function owedInWindow(terms: readonly LimiterTerm[], i: number, admittedAt: number, now: number, windows: readonly number[] | null): boolean {
  return (windows !== null && windows[i] >= 0) || sameWindow(terms[i].limit.unit, admittedAt, now);
}

/** Whether any of `terms` may still be owed a give-back at `now` (owedInWindow). */
export function anyInAdmissionWindow(terms: readonly LimiterTerm[], admittedAt: number, now: number, windows: readonly number[] | null = null): boolean {
  for (let i = 0; i < terms.length; i++) if (owedInWindow(terms, i, admittedAt, now, windows)) return true;
  return false;
}

/**
 * Gives back `inputTokens` charged to each of `charged` (a refused admission, or a request that
 * never reached a pod). Bit i of `byFailureMode` set: term i was admitted by its failure mode, and
 * its give-back goes where that charged it (Decision.byFailureMode). With `admittedAt`, only to
 * the terms whose window at that time is still on (owedInWindow: `windows[i]`, the window a store
 * with a clock of its own charged, goes with it and that store decides), and to a Redis store only
 * if the instance answering now charged it (redis/store-limiter.ts). A store that fails here is
 * skipped (nothing to give back to it). `lateCharges` (RequestAdmission.lateCharges): what a store
 * may charge late of an admission its `open` failure mode admitted, undone too.
 */
export async function giveBackInput(
  charged: readonly LimiterTerm[], inputTokens: number, byFailureMode = 0, admittedAt = -1,
  lateCharges: readonly LateCharge[] | null = null, windows: readonly number[] | null = null,
): Promise<void> {
  if (inputTokens === 0) return;
  if (lateCharges !== null) for (let i = 0; i < lateCharges.length; i++) lateCharges[i].giveBack();
  const now = admittedAt >= 0 ? Date.now() : 0;
  for (let i = 0; i < charged.length; i++) {
    const t = charged[i];
    if (admittedAt >= 0 && !owedInWindow(charged, i, admittedAt, now, windows)) continue;
    const window = windows !== null ? windows[i] : -1;
    try { await t.limiter.adjustInput(t.key, t.limit, -inputTokens, ((byFailureMode >> i) & 1) === 1, admittedAt, window); } catch { /* store down: nothing to give back */ }
  }
}
