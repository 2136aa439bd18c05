/**
 * The x-ratelimit-remaining-* figures with leases (lease-book.ts publish(), held-leases.ts):
 * budget lent to workers is not "used"; what a worker admits from its lease reaches the other
 * workers' figures through the primary within a few event-loop turns.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { RateLimitSpec } from '../../../src/config/resource-types.js';
import type { Decision } from '../../../src/ratelimit/limiter.js';
import { inProcessCluster, type InProcessCluster } from './in-process-cluster.js';

const T0 = Date.UTC(2025, 0, 15, 10, 30, 20);
const clock = (): number => T0;
const limit: RateLimitSpec = { inputTokensPerUnit: 10_000, outputTokensPerUnit: 50_000, unit: 'minute', global: null };

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
