/** What closeWhenSent needs of the worker. */
export interface SentWatch {
  /** Requests still in flight: the connections stay open while there are any. */
  readonly inflight: () => number;
  /** Bytes the kernel still holds to send on the client connections; null where it cannot be read. */
  readonly unsent: () => number | null;
  /** Without `unsent`: true when an answer may have ended with bytes left in uWS's buffer. */
  readonly tailMayBeBuffered: () => boolean;
  /** Closes every client connection. */
  readonly close: () => void;
  /** Gives up at this time (Date.now()'s clock). */
  readonly deadline: number;
  readonly now?: () => number;
}

/** How long between two looks at the send queues: the first ten quickly, then less often. */
const FIRST_LOOKS = 10;
const QUICK_LOOK_MS = 20;
const LOOK_MS = 100;

/**
 * Closes the client connections once nothing is in flight and every answer has gone out, or gives
 * up at the deadline; resolves true when it closed them. "Gone out": the send queues were seen
 * empty twice, a wait apart, since uWS refills a queue from its own buffer (which it reports
 * nothing on, and which the close would drop) whenever the kernel has room; where the queues
 * cannot be read, when no answer may have ended with bytes left in that buffer. It looks at once,
 * then every 20 ms, then every 100 ms after the first ten looks (a look reads /proc's TCP tables).
 */
export async function closeWhenSent(w: SentWatch): Promise<boolean> {
  const now = w.now ?? Date.now;
  let emptyLooks = 0;
  for (let look = 0; ; look++) {
    if (w.inflight() === 0) {
      const unsent = w.unsent();
      if (unsent === null) {
        if (!w.tailMayBeBuffered()) break;
      } else {
        emptyLooks = unsent === 0 ? emptyLooks + 1 : 0;
        if (emptyLooks >= 2) break;
      }
    }
    const left = w.deadline - now();
    if (left <= 0) return false;
    await new Promise((r) => setTimeout(r, Math.min(left, look < FIRST_LOOKS ? QUICK_LOOK_MS : LOOK_MS)));
  }
  w.close();
  return true;
}
