import { systemClock, type Clock } from '../clock.js';

/** Time for the Kubernetes source (debounce, retry backoff, watch reconnect delays); injected in tests. */
export interface SourceClock {
  now: Clock;
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

export const systemSourceClock: SourceClock = {
  now: systemClock,
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (handle) => clearTimeout(handle as ReturnType<typeof setTimeout>),
};
