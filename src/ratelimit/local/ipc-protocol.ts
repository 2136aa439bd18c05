import { DECISION_STRIDE } from '../decision-codec.js';

/**
 * Wire format between LocalLimitClient (workers) and the local limit host (cluster primary).
 * Every message is `{ t, a }` with `t` starting with `rl:` (other modules share the channel with
 * other prefixes) and `a` one flat array, cheap to serialize:
 *
 * - MSG_REQUEST, worker -> primary: ops of REQUEST_STRIDE entries, handled in order:
 *   [op, id, key, inputLimit, outputLimit, unit, amount]
 *   OP_ADMIT: id = request id, amount = input tokens; answered.
 *   OP_CHARGE_OUTPUT: id = the lease the charge was counted against (0: none), amount = tokens.
 *   OP_ADJUST_INPUT: id = lease id or 0, amount = delta (may be negative).
 *   OP_RETURN_LEASE: id = lease id, amount = input tokens of the lease left unused (negative when
 *   corrections used more than the lease held).
 *   OP_LEASE_USED: id = lease id, amount = input used from the lease so far (absolute; admissions
 *   and corrections); changes only the headers' figures, the counter holds the whole lease.
 *   OP_ADMIT_TERM / OP_ADMIT_TERM_SHADOW: one limit of a multi-limit admission (route and tenant;
 *   the shadow one never blocks), id = request id, amount 0; then OP_ADMIT_ALL: id = request id,
 *   key '', amount = input tokens; decided at the primary, atomically, and answered with one reply
 *   per term, in order, with the same id and no lease.
 *   Limits use NO_LIMIT (-1) for null; ops other than OP_ADMIT and OP_ADMIT_TERM* send NO_LIMIT.
 * - MSG_REPLY, primary -> worker: answers of REPLY_STRIDE entries:
 *   [id, ...encoded decision (decision-codec.ts), leaseId, leaseInput, leaseOutput, windowEndMs]
 *   leaseId 0 = no lease granted; leaseInput / leaseOutput NO_LIMIT = unlimited in that direction.
 *   A refusal made for good carries a refusal note in those fields instead (of a multi-limit
 *   admission: in each term's; lease-book.ts): [noteId, input count with every lease given back, 1 when the output limit is
 *   reached else 0, windowEndMs]; noteId 0 = none.
 *   A malformed op is answered [id, REPLY_INVALID, 0, ...].
 * - MSG_RECALL, primary -> worker: `a` = lease ids the worker must give back now (OP_RETURN_LEASE),
 *   and ids of refusal notes it must drop (nothing is sent back for those).
 * - MSG_USAGE, primary -> worker: triples [leaseId, othersInput, othersOutput]: what everyone but
 *   the lease's holder has used of the key's window (for the x-ratelimit-remaining-* headers);
 *   for a refusal note's id, what everyone has used.
 *
 * Ordering: one IPC channel delivers messages in order, so a charge sent before an admit is
 * applied before it, and a lease's charges arrive before its return.
 */
export const MSG_PREFIX = 'rl:';
export const MSG_REQUEST = 'rl:q';
export const MSG_REPLY = 'rl:r';
export const MSG_RECALL = 'rl:c';
export const MSG_USAGE = 'rl:u';

export const OP_ADMIT = 0;
export const OP_CHARGE_OUTPUT = 1;
export const OP_ADJUST_INPUT = 2;
export const OP_RETURN_LEASE = 3;
export const OP_LEASE_USED = 4;
export const OP_ADMIT_TERM = 5;
export const OP_ADMIT_TERM_SHADOW = 6;
export const OP_ADMIT_ALL = 7;

export const REQUEST_STRIDE = 7;
/** Lease fields after the decision in a reply: [leaseId, leaseInput, leaseOutput, windowEndMs]. */
export const LEASE_STRIDE = 4;
export const REPLY_STRIDE = 1 + DECISION_STRIDE + LEASE_STRIDE;
/** Entries per lease in a MSG_USAGE message: [leaseId, othersInput, othersOutput]. */
export const USAGE_STRIDE = 3;
/** Decision status slot value of a reply to a malformed op. */
export const REPLY_INVALID = -2;

export interface LimitRequestMessage {
  t: typeof MSG_REQUEST;
  a: (number | string)[];
}

export interface LimitReplyMessage {
  t: typeof MSG_REPLY | typeof MSG_RECALL | typeof MSG_USAGE;
  a: number[];
}

/** The message's `t` when it is a rate limit message (`rl:` prefix), else null. */
export function limitMessageType(message: unknown): string | null {
  if (typeof message !== 'object' || message === null) return null;
  const t = (message as { t?: unknown }).t;
  return typeof t === 'string' && t.startsWith(MSG_PREFIX) ? t : null;
}
