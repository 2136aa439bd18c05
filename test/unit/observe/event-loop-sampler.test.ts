import { monitorEventLoopDelay } from 'node:perf_hooks';
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { gatedView, SamplingGate, withGatedDelaySampler, type DelayHistogram, type GateTimers } from '../../../src/observe/event-loop-sampler.js';

/** Timers run by hand: `advance(ms)` fires what is due. */
class ManualTimers implements GateTimers {
  now = 0;
  private due: { at: number; fn: () => void }[] = [];
  setTimeout(fn: () => void, ms: number): { unref(): unknown } {
    this.due.push({ at: this.now + ms, fn });
    return { unref: () => undefined };
  }
  advance(ms: number): void {
    const end = this.now + ms;
    for (;;) {
      this.due.sort((a, b) => a.at - b.at);
      const next = this.due[0];
      if (next === undefined || next.at > end) break;
      this.due.shift();
      this.now = next.at;
      next.fn();
    }
    this.now = end;
  }
  get pending(): number {
    return this.due.length;
  }
}

/** A histogram that records enable/disable calls. */
function fakeHistogram(count = 0): DelayHistogram & { enabled: boolean; toggles: number } {
  return {
    enabled: false,
    toggles: 0,
    enable() { this.enabled = true; this.toggles++; return true; },
    disable() { this.enabled = false; this.toggles++; return true; },
    reset() { /* nothing */ },
    percentile: (p: number) => p * 1000,
    min: 2000, max: 9000, mean: 4000, stddev: 100, count,
  } as DelayHistogram & { enabled: boolean; toggles: number };
}

describe('SamplingGate', () => {
  it('samples from the first request until the idle delay passes without another', () => {
    const timers = new ManualTimers();
    const hist = fakeHistogram();
    const gate = new SamplingGate(hist, 5000, timers);
    expect(hist.enabled).toBe(false);
    expect(timers.pending).toBe(0); // nothing armed before a request

    gate.touch();
    expect(hist.enabled).toBe(true);
    timers.advance(3000);
    gate.touch(); // within the delay: keeps sampling, no second timer
    expect(timers.pending).toBe(1);
    timers.advance(2000); // the first check finds a request since: re-armed
    expect(hist.enabled).toBe(true);
    timers.advance(4999);
    expect(hist.enabled).toBe(true);
    timers.advance(1); // a whole delay with no request
    expect(hist.enabled).toBe(false);
    expect(gate.sampling).toBe(false);
    expect(timers.pending).toBe(0); // an idle worker has no timer of the gate's left

    gate.touch(); // the next request starts it again
    expect(hist.enabled).toBe(true);
    expect(hist.toggles).toBe(3);
  });
});

describe('gatedView', () => {
  it('reads 0 with no samples instead of the empty histogram sentinels, and leaves enabling to the gate', () => {
    const empty = gatedView(fakeHistogram(0));
    expect([empty.min, empty.max, empty.mean, empty.stddev, empty.percentile(99)]).toEqual([0, 0, 0, 0, 0]);
    const real = monitorEventLoopDelay({ resolution: 10 });
    const view = gatedView(real);
    expect(view.min).toBe(0); // a real empty histogram's min is a huge sentinel
    expect(real.min).toBeGreaterThan(1e15);
    view.enable();
    expect(real.count).toBe(0);
    const some = gatedView(fakeHistogram(3));
    expect([some.min, some.max, some.mean, some.percentile(50)]).toEqual([2000, 9000, 4000, 50_000]);
  });
});

describe('withGatedDelaySampler', () => {
  const perfHooks = createRequire(import.meta.url)('node:perf_hooks') as { monitorEventLoopDelay: unknown };

  it('hands the registration a gated histogram and restores perf_hooks afterwards', async () => {
    const original = perfHooks.monitorEventLoopDelay;
    let handed: DelayHistogram | null = null;
    const timers = new ManualTimers();
    const gate = withGatedDelaySampler(5000, () => {
      const ph = createRequire(import.meta.url)('perf_hooks') as { monitorEventLoopDelay: (o: { resolution: number }) => DelayHistogram };
      handed = ph.monitorEventLoopDelay({ resolution: 10 });
      handed.enable(); // as prom-client does: must not start sampling by itself
    }, timers);
    expect(perfHooks.monitorEventLoopDelay).toBe(original);
    expect(gate).not.toBeNull();
    expect(gate!.sampling).toBe(false);
    await new Promise((r) => setTimeout(r, 60));
    expect(handed!.count).toBe(0);
    gate!.touch();
    await new Promise((r) => setTimeout(r, 80));
    expect(handed!.count).toBeGreaterThan(0);
    expect(handed!.max).toBeGreaterThan(0);
    timers.advance(5000);
    handed!.reset();
    await new Promise((r) => setTimeout(r, 60));
    expect(handed!.count).toBe(0); // stopped again
  });

  it('restores perf_hooks when the registration throws, and gives no gate when no histogram was asked for', () => {
    const original = perfHooks.monitorEventLoopDelay;
    expect(() => withGatedDelaySampler(5000, () => { throw new Error('boom'); })).toThrow('boom');
    expect(perfHooks.monitorEventLoopDelay).toBe(original);
    expect(withGatedDelaySampler(5000, () => undefined)).toBeNull();
  });
});
