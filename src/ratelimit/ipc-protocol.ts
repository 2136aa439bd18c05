import { DECISION_STRIDE } from './decision-codec.js';

/**
 * Wire format between LocalLimitClient (workers) and the local limit host (cluster primary).
 * Every message is `{ t, a }` with `t` starting with `rl:` (other modules share the channel with
 * other prefixes) and `a` one flat array, cheap to serialize:
 *
 * - MSG_REQUEST, worker -> primary: ops of REQUEST_STRIDE entries, handled in order:
 *   [op, id, route, inputLimit, outputLimit, unit, amount]
 *   OP_ADMIT (amount = input tokens, answered), OP_CHARGE_OUTPUT (amount = output tokens) and
 *   OP_ADJUST_INPUT (amount = delta) are not answered (id 0). Limits use NO_LIMIT (-1) for null.
 * - MSG_REPLY, primary -> worker: answers of REPLY_STRIDE entries: [id, ...encoded decision]
 *   (decision-codec.ts), or [id, REPLY_INVALID, 0, ...] when the op was malformed.
 *
 * Ordering: one IPC channel delivers messages in order, so a charge sent before an admit is
 * applied before it.
 */
export const MSG_PREFIX = 'rl:';
export const MSG_REQUEST = 'rl:q';
export const MSG_REPLY = 'rl:r';

export const OP_ADMIT = 0;
export const OP_CHARGE_OUTPUT = 1;
export const OP_ADJUST_INPUT = 2;

export const REQUEST_STRIDE = 7;
export const REPLY_STRIDE = 1 + DECISION_STRIDE;
/** Decision status slot value of a reply to a malformed op. */
export const REPLY_INVALID = -2;

export interface LimitRequestMessage {
  t: typeof MSG_REQUEST;
  a: (number | string)[];
}

export interface LimitReplyMessage {
  t: typeof MSG_REPLY;
  a: number[];
}

/** The message's `t` when it is a rate limit message (`rl:` prefix), else null. */
export function limitMessageType(message: unknown): string | null {
  if (typeof message !== 'object' || message === null) return null;
  const t = (message as { t?: unknown }).t;
  return typeof t === 'string' && t.startsWith(MSG_PREFIX) ? t : null;
}
