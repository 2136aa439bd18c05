/**
 * The local limit when the machine's clock steps (an NTP step, a VM resumed): stepped back, the
 * windows between are lived again: the one that holds the new time takes over with what was
 * counted, each later one starts at 0, and the window stepped back from counts on from what it held
 * when the clock comes back to it; no window admits more than the limit, and a refusal waits one
 * window at most, not the length of the step. The primary's counters, a
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

  it('stepped back a second just after a month began: February lived again with March\'s counts, then March counts on from them (not twice the budget)', () => {
    const march = Date.UTC(2025, 2, 1, 0, 0, 0, 500);
    now = march;
    const store = new CounterStore(clock);
    const limit = spec(1000, null, 'month');
    expect(store.admit('ns/a', limit, 1000).allowed).toBe(true);
    now = march - 1000; // February 28, 23:59:59.5
    expect([store.admit('ns/a', limit, 1).rejectedBy, store.admit('ns/a', limit, 1).retryAfterSeconds]).toEqual(['input', 1]);
    now = march + 1;
    const again = store.admit('ns/a', limit, 1000);
    expect([again.rejectedBy, again.input?.remaining]).toEqual(['input', 0]);
    now = Date.UTC(2025, 3, 1); // April: a new window
    expect(store.admit('ns/a', limit, 1000).allowed).toBe(true);
  });

  it('stepped back an hour: each second lived again admits its limit (the first after what was counted), and the second stepped back from counts on from what it held', () => {
    now = T0 + 500; // 10:30:20.5
    const store = new CounterStore(clock);
    const limit = spec(8, null, 'second');
    expect(store.admit('ns/a', limit, 6).allowed).toBe(true);
    now = T0 - HOUR + 500;
    expect(store.admit('ns/a', limit, 4).rejectedBy).toBe('input'); // 6 counted: 2 left
    now = T0 - HOUR + 1_500; // the next second lived again
    expect(summary(store.admit('ns/a', limit, 8))).toEqual([true, 1, 0]);
    now = T0 + 700; // back in 10:30:20 after the hour: its 6
    expect(summary(store.admit('ns/a', limit, 2))).toEqual([true, 1, 0]);
    expect(store.admit('ns/a', limit, 1).rejectedBy).toBe('input');
    now = T0 + 1_000;
    expect(store.admit('ns/a', limit, 8).allowed).toBe(true);
  });

  it('a minute lease taken just after the minute began, the clock stepped back a second: the lease and the primary together admit no more than the limit', async () => {
    const t = Date.UTC(2025, 0, 15, 10, 31, 0, 500);
    now = t;
    c = inProcessCluster(2, clock, { leaseDivisor: 4 });
    const [a, b] = c.clients;
    const limit = spec(800, null, 'minute');
    let admitted = 0;
    for (let i = 0; i < 3; i++) if ((await a.admit('ns/r', limit, 4)).allowed) admitted += 4;
    expect(a.leasesHeld).toBe(1);
    now = t - 1000; // 10:30:59.5: the primary lives 10:30 again
    if ((await b.admit('ns/r', limit, 1)).allowed) admitted += 1;
    now = t + 100; // 10:31:00.6
    for (let i = 0; i < 400; i++) if ((await b.admit('ns/r', limit, 4)).allowed) admitted += 4;
    for (let i = 0; i < 400; i++) if ((await a.admit('ns/r', limit, 4)).allowed) admitted += 4;
    // 10:31's own admissions (the 12 before the step among them) stay within its 800; the one in
    // 10:30 lived again is that minute's.
    expect(admitted - 1).toBeLessThanOrEqual(800);
    expect(admitted).toBeGreaterThan(700);
  });

  it('a February lease, the clock stepped back two days into January and forward again: February admits no more than its limit', async () => {
    const feb = Date.UTC(2027, 1, 1, 0, 0, 30);
    now = feb;
    c = inProcessCluster(2, clock, { leaseDivisor: 4 });
    const [a, b] = c.clients;
    const limit = spec(800, null, 'month');
    let inFebruary = 0;
    for (let i = 0; i < 3; i++) if ((await a.admit('ns/r', limit, 4)).allowed) inFebruary += 4;
    now = Date.UTC(2027, 0, 30, 0, 0, 30); // January lived again
    await b.admit('ns/r', limit, 1);
    now = Date.UTC(2027, 1, 1, 0, 0, 31);
    for (let i = 0; i < 400; i++) if ((await b.admit('ns/r', limit, 4)).allowed) inFebruary += 4;
    for (let i = 0; i < 400; i++) if ((await a.admit('ns/r', limit, 4)).allowed) inFebruary += 4;
    expect(inFebruary).toBeLessThanOrEqual(800);
    expect(inFebruary).toBeGreaterThan(700);
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
