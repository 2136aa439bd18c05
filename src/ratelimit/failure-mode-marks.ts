import type { Decision, LateCharge } from './limiter.js';

/**
 * The failure-mode bookkeeping of a request's charges, shared by every way of admitting it
 * (request-admission.ts, admit-all.ts): a mask with bit i set when the i-th charge was decided by a
 * failure mode (its give-backs go where that charged it), and the late charges a store may still
 * make (Decision.lateCharge). No allocation unless a decision carries a late charge.
 */

/** The mask bit of decision `d` charged as the `i`-th term: 1 << i when a failure mode decided it, else 0. */
export function failureModeBit(d: Decision, i: number): number {
  return d.byFailureMode === true ? 1 << i : 0;
}

/** `lateCharges` with `d`'s late charge added, if it has one (the list made on the first). */
export function withLateCharge(lateCharges: LateCharge[] | null, d: Decision): LateCharge[] | null {
  if (d.lateCharge === undefined) return lateCharges;
  if (lateCharges === null) return [d.lateCharge];
  lateCharges.push(d.lateCharge);
  return lateCharges;
}
