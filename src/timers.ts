/**
 * Injected one-shot timers, so code that waits or retries is testable without sleeping (a test
 * passes timers it advances by hand). The Node ones are unref'd: a pending retry or poll never
 * keeps a process alive on its own.
 */
export interface Timers {
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

export const nodeTimers: Timers = {
  setTimeout: (fn, ms) => setTimeout(fn, ms).unref(),
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
};

/**
 * A timeout for an answer read from a socket: `fn` runs `ms` from now, in the turn of the event
 * loop after the timer came due, once that turn has read the sockets. A timer that came due while
 * the loop was busy (a long task, a collection, a CPU taken by other processes) would otherwise run
 * before an answer that arrived in time meanwhile is read. clearTimeout on the returned timer stops
 * it until it comes due; after that `fn` still runs, and checks for itself whether it is wanted.
 */
export function setReadDeadline(fn: () => void, ms: number): NodeJS.Timeout {
  return setTimeout(setImmediate, ms, fn);
}

/** Resolves once `cond` holds, checked every `everyMs`; rejects when it throws. */
export function until(cond: () => boolean, timers: Timers, everyMs = 20): Promise<void> {
  return new Promise((resolve, reject) => {
    const check = (): void => {
      try {
        if (cond()) resolve();
        else timers.setTimeout(check, everyMs);
      } catch (err) {
        reject(err as Error);
      }
    };
    check();
  });
}
