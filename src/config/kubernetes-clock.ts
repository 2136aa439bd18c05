import { systemClock, type Clock } from '../clock.js';
import type { Timers } from '../timers.js';

/** Time for the Kubernetes source (debounce, retry backoff, watch reconnect delays); injected in tests. */
export interface SourceClock extends Timers {
  now: Clock;
}

export const systemSourceClock: SourceClock = {
  now: systemClock,
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (handle) => clearTimeout(handle as ReturnType<typeof setTimeout>),
};
