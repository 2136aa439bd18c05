/**
 * The event-loop delay sampler behind prom-client's `nodejs_eventloop_lag_*` summaries, made to
 * sleep while the worker serves nothing.
 *
 * prom-client creates one `perf_hooks.monitorEventLoopDelay` histogram per process and enables it
 * for good: a native timer that fires every EVENT_LOOP_SAMPLE_MS, and on an idle worker the one
 * thing that still wakes it ten times a second (docs/internals/performance-changes.md, "Idle wake-ups"). Here that
 * histogram is handed to prom-client behind a gate: it samples from the first request after a
 * quiet spell until a check, every `idleAfterMs` while sampling, finds that no request finished
 * since the one before (so it stops between one and two `idleAfterMs` after the last request),
 * then stays off until the next request.
 * With no samples (an idle worker) the summaries read 0, not the empty histogram's sentinels.
 * A single answer that streams for longer than `idleAfterMs` with nothing else finishing is not
 * sampled after that delay.
 */
import { createRequire } from 'node:module';
import type { IntervalHistogram } from 'node:perf_hooks';

/** The part of the histogram prom-client reads. */
export type DelayHistogram = Pick<IntervalHistogram, 'enable' | 'disable' | 'reset' | 'percentile' | 'min' | 'max' | 'mean' | 'stddev' | 'count'>;

export interface GateTimers {
  setTimeout(fn: () => void, ms: number): { unref(): unknown };
}

const NODE_TIMERS: GateTimers = { setTimeout: (fn, ms) => setTimeout(fn, ms) };

/** Samples only while requests finish; `touch()` once per request. */
export class SamplingGate {
  private active = false;
  private seen = false;
  private readonly check = (): void => {
    if (this.seen) this.arm();
    else {
      this.active = false;
      this.hist.disable();
    }
  };

  constructor(
    private readonly hist: DelayHistogram,
    private readonly idleAfterMs: number,
    private readonly timers: GateTimers = NODE_TIMERS,
  ) {}

  /** A request finished: samples from now until a check finds none since the check before. */
  touch(): void {
    if (this.active) {
      this.seen = true;
      return;
    }
    this.active = true;
    this.hist.enable();
    this.arm();
  }

  get sampling(): boolean {
    return this.active;
  }

  private arm(): void {
    this.seen = false;
    this.timers.setTimeout(this.check, this.idleAfterMs).unref();
  }
}

/** What prom-client sees: the histogram without its own enable/disable, and 0 with no samples. */
export function gatedView(hist: DelayHistogram): DelayHistogram {
  const none = (): boolean => hist.count === 0;
  return {
    enable: () => true,
    disable: () => true,
    reset: () => hist.reset(),
    percentile: (p: number) => (none() ? 0 : hist.percentile(p)),
    get min() { return none() ? 0 : hist.min; },
    get max() { return none() ? 0 : hist.max; },
    get mean() { return none() ? 0 : hist.mean; },
    get stddev() { return none() ? 0 : hist.stddev; },
    get count() { return hist.count; },
  } as DelayHistogram;
}

interface PerfHooksModule { monitorEventLoopDelay: (opts?: { resolution?: number }) => IntervalHistogram }

/**
 * Runs `register` (prom-client's collectDefaultMetrics) with perf_hooks.monitorEventLoopDelay
 * answering a gated view of one real histogram, and returns the gate (null when `register` did
 * not ask for a histogram). perf_hooks is as it was afterwards, also when `register` throws.
 */
export function withGatedDelaySampler(idleAfterMs: number, register: () => void, timers: GateTimers = NODE_TIMERS): SamplingGate | null {
  const perfHooks = createRequire(import.meta.url)('node:perf_hooks') as PerfHooksModule;
  const original = perfHooks.monitorEventLoopDelay;
  let gate: SamplingGate | null = null;
  perfHooks.monitorEventLoopDelay = (opts) => {
    const hist = original(opts);
    gate = new SamplingGate(hist, idleAfterMs, timers);
    return gatedView(hist) as IntervalHistogram;
  };
  try {
    register();
  } finally {
    perfHooks.monitorEventLoopDelay = original;
  }
  return gate;
}
