import { setReadDeadline } from '../../timers.js';

/**
 * How long a reply is still read after the router stopped waiting for it, from the call: a script
 * that Redis ran after the router stopped waiting (Redis stalled past RATE_LIMIT_REDIS_TIMEOUT,
 * then went on) still counted what it did, and only its reply says what (a lease lent,
 * store-limiter.ts). Later replies are dropped (awaitReply), and what those calls counted stays
 * counted; so does what a call counted whose connection dropped before its reply. The client's own
 * command timeout (connection.ts) is as long, for the commands that are not script calls
 * (script-command.ts: those keep no timer of the client's).
 */
export const LATE_REPLY_MS = 10_000;

/** What to do with a script call's reply: in time, not at all, or after the caller stopped waiting. */
export interface ReplyHandlers<T> {
  /** The reply came within the timeout. */
  reply(value: T): void;
  /** The call failed, or did not answer within the timeout (`Command timed out`). */
  fail(err: unknown): void;
  /** The reply came after the timeout, when fail() had already been called: Redis ran the call after all. */
  late(value: T): void;
}

/**
 * Waits at most `timeoutMs` for `call`, then calls `h.fail`; a reply that still comes within
 * LATE_REPLY_MS of the call goes to `h.late`. A reply that came within the timeout while the event
 * loop was busy past it is read as in time. One timer per script call (a call carries a turn's
 * batch of a limit, not one request).
 */
export function awaitReply<T>(call: Promise<T>, timeoutMs: number, h: ReplyHandlers<T>): void {
  /** A reply or a failure came, or the wait timed out (then a reply that still comes is late). */
  let settled = false;
  /** Once timed out: until when (Date.now()) a reply is still read. */
  let lateUntil = 0;
  const timer = setReadDeadline(() => {
    if (settled) return;
    settled = true;
    lateUntil = Date.now() + LATE_REPLY_MS - timeoutMs;
    h.fail(new Error('Command timed out'));
  }, timeoutMs);
  call.then(
    (value) => {
      // Settled before a reply: only by the timeout (a call that failed has no reply).
      if (settled) {
        if (Date.now() <= lateUntil) h.late(value);
        return;
      }
      settled = true;
      clearTimeout(timer);
      h.reply(value);
    },
    (err: unknown) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      h.fail(err);
    },
  );
}

/** Whether `call` answered within `timeoutMs` (false: it failed, or did not answer in time). */
export function answeredWithin(call: Promise<unknown>, timeoutMs: number): Promise<boolean> {
  return new Promise((resolve) => {
    awaitReply(call, timeoutMs, { reply: () => resolve(true), fail: () => resolve(false), late: () => {} });
  });
}
