/**
 * The x-ratelimit-remaining-* figures with leases (lease-book.ts publish(), held-leases.ts):
 * budget lent to workers is not "used"; what a worker admits from its lease reaches the other
 * workers' figures through the primary within a few event-loop turns.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { RateLimitSpec } from '../../../src/config/resource-types.js';
import type { Decision } from '../../../src/ratelimit/limiter.js';
import { inProcessCluster, type InProcessCluster } from './in-process-cluster.js';
import { REPORT_INTERVAL_MS } from '../../../src/ratelimit/local/held-leases.js';

const T0 = Date.UTC(2025, 0, 15, 10, 30, 20);
const clock = (): number => T0;
const limit: RateLimitSpec = { inputTokensPerUnit: 10_000, outputTokensPerUnit: 50_000, unit: 'minute', global: null, mode: 'enforce' };

let c: InProcessCluster | null = null;
afterEach(async () => {
  await c?.close();
  c = null;
});

function local(d: Decision | Promise<Decision>): Decision {
  expect(d).not.toBeInstanceOf(Promise); // decided from the worker's lease
  return d as Decision;
}

describe('remaining figures with leases', () => {
  it('the primary does not count leased budget as used, and each worker sees the others\' use', async () => {
    c = inProcessCluster(3, clock, { leaseDivisor: 16 });
    const [a, b, x] = c.clients;
    expect((await a.admit('ns/r', limit, 10)).input?.remaining).toBe(9_990);
    expect(a.leasesHeld).toBe(1);
    // b asks the primary: a's lease (624 tokens, unused) is not used.
    expect((await b.admit('ns/r', limit, 10)).input?.remaining).toBe(9_980);
    expect(b.leasesHeld).toBe(1);
    // Both decide from their leases now; each one's use reaches the other through the primary.
    await vi.waitFor(() => expect(local(a.admit('ns/r', limit, 0)).input?.remaining).toBe(9_980));
    expect(local(a.admit('ns/r', limit, 5)).input?.remaining).toBe(9_975);
    await vi.waitFor(() => expect(local(b.admit('ns/r', limit, 0)).input?.remaining).toBe(9_975));
    b.chargeOutput('ns/r', limit, 300);
    expect(local(b.admit('ns/r', limit, 7)).input?.remaining).toBe(9_968);
    await vi.waitFor(() => {
      const d = local(a.admit('ns/r', limit, 0));
      expect(d.input?.remaining).toBe(9_968);
      expect(d.output?.remaining).toBe(50_000 - 300);
    });
    // A worker without a lease of the key is answered by the primary with the same figures.
    a.adjustInput('ns/r', limit, 3); // a correction absorbed by a's lease
    await vi.waitFor(async () => {
      const d = await x.admit('ns/r', limit, 0);
      expect(d.input?.remaining).toBe(9_965);
      expect(d.output?.remaining).toBe(50_000 - 300);
    });
    // The counter itself still holds the leases whole (admissions stay exact).
    expect(c.store.admit('ns/r', limit, 0).input!.remaining).toBeLessThan(9_965 - 1_000);
  });
});

describe('reports of a busy worker', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('coalesce to one message per REPORT_INTERVAL_MS, and what was held back still reaches the others', async () => {
    c = inProcessCluster(2, clock, { leaseDivisor: 16 });
    const [a, b] = c.clients;
    await a.admit('ns/r', limit, 1);
    await b.admit('ns/r', limit, 1);
    // Both leases are shared now (the primary told each of the other's use).
    await vi.waitFor(() => expect(local(a.admit('ns/r', limit, 0)).input?.remaining).toBe(9_998));
    await vi.waitFor(() => expect(local(b.admit('ns/r', limit, 0)).input?.remaining).toBe(9_998));
    // From here on, time stands still unless the test moves it.
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] });
    const turn = (): Promise<void> => new Promise((r) => setImmediate(r));
    await turn();
    vi.advanceTimersByTime(REPORT_INTERVAL_MS); // the last report is long enough ago
    const before = c.sentToPrimary[0];
    // 50 admissions, one per turn, over 0.9 of the interval: the first is reported at the end of
    // its turn, the rest wait.
    for (let i = 0; i < 50; i++) {
      local(a.admit('ns/r', limit, 2));
      await turn();
      vi.advanceTimersByTime((0.9 * REPORT_INTERVAL_MS) / 50);
    }
    expect(c.sentToPrimary[0] - before).toBe(1);
    await turn();
    expect(local(b.admit('ns/r', limit, 0)).input?.remaining).toBe(9_998 - 2);
    // Once the interval has passed, one report carries the other 49.
    vi.advanceTimersByTime(0.1 * REPORT_INTERVAL_MS);
    for (let i = 0; i < 4; i++) await turn();
    expect(c.sentToPrimary[0] - before).toBe(2);
    expect(local(b.admit('ns/r', limit, 0)).input?.remaining).toBe(9_998 - 100);
  });
});
