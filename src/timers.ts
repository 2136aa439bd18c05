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
