/**
 * How long the client keeps a command it gave up on, waiting for its reply anyway (the client's
 * own command timeout, connection.ts): a script that Redis ran after the router stopped waiting
 * (Redis stalled past RATE_LIMIT_REDIS_TIMEOUT, then went on) still counted what it did, and only
 * its reply says what (a lease lent, store-limiter.ts). Later replies are lost, and what those calls
 * counted stays counted; so does what a call counted whose connection dropped before its reply.
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
 * Waits at most `timeoutMs` for `call`, then calls `h.fail`; a reply that still comes goes to
 * `h.late`. One timer per script call (a call carries a turn's batch of a limit, not one request).
 */
export function awaitReply<T>(call: Promise<T>, timeoutMs: number, h: ReplyHandlers<T>): void {
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    h.fail(new Error('Command timed out'));
  }, timeoutMs);
  call.then(
    (value) => {
      if (timedOut) {
        h.late(value);
        return;
      }
      clearTimeout(timer);
      h.reply(value);
    },
    (err: unknown) => {
      if (timedOut) return;
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
