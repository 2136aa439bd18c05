import { describe, expect, it } from 'vitest';
import type { RateLimitSpec } from '../../../src/config/resource-types.js';
import { CounterStore } from '../../../src/ratelimit/local/counter-store.js';
import { runLimiterConformance } from './limiter-conformance.js';

runLimiterConformance('CounterStore (in process)', async (clock) => {
  const limiter = new CounterStore(clock);
  return { limiter, cleanup: () => limiter.close() };
});

const LIMIT: RateLimitSpec = { inputTokensPerUnit: 10, outputTokensPerUnit: 100, unit: 'minute', global: null, mode: 'enforce' };
const T0 = Date.UTC(2025, 0, 15, 10, 30, 20);

describe('CounterStore specifics', () => {
  it('answers synchronously', () => {
    const store = new CounterStore(() => T0);
    const d = store.admit('ns/a', LIMIT, 4);
    expect(d).not.toBeInstanceOf(Promise);
    expect(d.allowed).toBe(true);
  });

  it('keeps one entry per route and drops routes whose window ended', () => {
    let now = T0;
    const store = new CounterStore(() => now);
    for (let i = 0; i < 50; i++) store.admit(`ns/r${i}`, LIMIT, 1);
    // The same route across many windows stays one entry.
    const perSecond: RateLimitSpec = { ...LIMIT, unit: 'second' };
    for (let i = 0; i < 10; i++) {
      now += 1_000;
      expect(store.admit('ns/again', perSecond, 10).allowed).toBe(true);
    }
    expect(store.size).toBe(51);
    now += 60_000; // first use after the sweep interval drops ended windows
    store.admit('ns/r0', LIMIT, 1);
    expect(store.size).toBe(1);
  });

  it('a clock stepping back counts on, in the window of the time it reads, from what was counted (never admits more)', () => {
    let now = T0;
    const store = new CounterStore(() => now);
    store.admit('ns/a', LIMIT, 10);
    now = T0 - 120_000;
    expect(store.admit('ns/a', LIMIT, 1).rejectedBy).toBe('input');
  });

  it('changing the unit starts the new unit window', () => {
    const store = new CounterStore(() => T0);
    store.admit('ns/a', LIMIT, 10);
    const hourly = store.admit('ns/a', { ...LIMIT, unit: 'hour' }, 10);
    expect(hourly.allowed).toBe(true);
    expect(hourly.input?.resetSeconds).toBe(29 * 60 + 40);
  });

  it('a unit changed back within its window counts on from what that window held (as Redis keys counters by unit)', () => {
    let now = T0;
    const store = new CounterStore(() => now);
    const perMinute: RateLimitSpec = { ...LIMIT, inputTokensPerUnit: 40 };
    const perSecond: RateLimitSpec = { ...perMinute, unit: 'second' };
    expect([16, 16, 16].map((t) => store.admit('ns/a', perMinute, t).allowed)).toEqual([true, true, false]);
    now += 1_500;
    expect(store.admit('ns/a', perSecond, 16).allowed).toBe(true); // the second's own window
    now += 1_500;
    const back = store.admit('ns/a', perMinute, 16);
    expect(back.allowed).toBe(false); // 32 of the minute's 40 were used
    expect(back.input?.remaining).toBe(8);
    expect(store.admit('ns/a', perMinute, 8).allowed).toBe(true);
    // Once the minute is over, the unit changed back starts from 0 again, and nothing is left of the other windows.
    now = T0 + 60_000;
    expect(store.admit('ns/a', perSecond, 40).allowed).toBe(true);
    expect(store.admit('ns/a', perMinute, 40).allowed).toBe(true);
    now += 120_000; // past the sweep interval: the key's windows all ended
    store.admit('ns/b', perMinute, 1);
    expect(store.size).toBe(1);
  });

  it('rejects amounts that are not non-negative integers', () => {
    const store = new CounterStore(() => T0);
    expect(() => store.admit('ns/a', LIMIT, -1)).toThrow(/input tokens must be a non-negative integer/);
    expect(() => store.admit('ns/a', LIMIT, 1.5)).toThrow(RangeError);
    expect(() => store.chargeOutput('ns/a', LIMIT, Number.NaN)).toThrow(/output tokens/);
    expect(() => store.adjustInput('ns/a', LIMIT, 0.5)).toThrow(/integer/);
  });
});
