/**
 * The local limit when the machine's clock steps (an NTP step, a VM resumed): stepped back, the
 * window that holds the new time takes over with what was counted, so nothing is admitted twice and
 * a refusal waits one window at most, not the length of the step. The primary's counters, a
 * worker's leases and its refusal notes under one injected clock (LocalLimitClients and a limit host over in-process channels).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { spec, T0 } from './limit-spec.js';
import type { Decision } from '../../../src/ratelimit/limiter.js';
import { CounterStore } from '../../../src/ratelimit/local/counter-store.js';
import { inProcessCluster, type InProcessCluster } from './in-process-cluster.js';

let now = T0;
const clock = (): number => now;
let c: InProcessCluster | null = null;
afterEach(async () => {
  await c?.close();
  c = null;
});

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

const summary = (d: Decision): [boolean, number, number | undefined] => [d.allowed, d.retryAfterSeconds, d.input?.remaining];

describe('the local limit when the clock steps', () => {
  it('the primary\'s counters: stepped back an hour, a refused minute waits for the minute that holds the new time, not an hour', () => {
    now = T0; // 10:30:20
    const store = new CounterStore(clock);
    const limit = spec(10, null);
    expect(store.admit('ns/a', limit, 10).allowed).toBe(true);
    now = T0 - HOUR; // 09:30:20
    const refused = store.admit('ns/a', limit, 1);
    expect([refused.rejectedBy, refused.retryAfterSeconds, refused.input?.resetSeconds]).toEqual(['input', 40, 40]);
    now = T0 - HOUR + 40_000; // 09:31:00: that window is over
    expect(summary(store.admit('ns/a', limit, 4))).toEqual([true, 60, 6]);
  });

  it('stepped forward a day and back: what the step charged is counted in today\'s window, which resets at its own end', () => {
    now = T0;
    const store = new CounterStore(clock);
    const limit = spec(100, null, 'day');
    expect(store.admit('ns/a', limit, 40).allowed).toBe(true);
    now = T0 + DAY; // the day ended, as if the time had passed
    expect(summary(store.admit('ns/a', limit, 30))).toEqual([true, 48_580, 70]);
    now = T0 + 1_000;
    // The 30 are counted; the reset is today's end (13 h 29 min 39 s), not tomorrow's.
    expect(summary(store.admit('ns/a', limit, 70))).toEqual([true, 48_579, 0]);
    expect(store.admit('ns/a', limit, 1).rejectedBy).toBe('input');
  });

  it('a worker\'s lease and refusal note of a second: stepped back an hour, the worker asks the primary again and is refused for the second that holds the new time', async () => {
    now = T0;
    c = inProcessCluster(1, clock, { leaseDivisor: 8 });
    const [w] = c.clients;
    const limit = spec(80, null, 'second');
    // Small requests: the worker takes a lease and decides from it.
    for (let i = 0; i < 20; i++) expect((await w.admit('ns/r', limit, 4)).allowed).toBe(true);
    const refused = await w.admit('ns/r', limit, 4);
    expect(refused.rejectedBy).toBe('input');
    expect(w.notesHeld + w.leasesHeld).toBeGreaterThan(0);
    now = T0 - HOUR;
    const after = await w.admit('ns/r', limit, 4);
    // Nothing admitted twice in the second that now holds the clock; the wait is that second.
    expect([after.rejectedBy, after.retryAfterSeconds]).toEqual(['input', 1]);
    now = T0 - HOUR + 1_000;
    expect((await w.admit('ns/r', limit, 4)).allowed).toBe(true);
  });
});
