/**
 * Leases of the local mode (lease-book.ts, held-leases.ts): workers decide most requests on their
 * own, and the instance still never admits more than the limit, nor rejects what fits.
 * Several LocalLimitClients share one limit host over in-order, JSON-copying channels.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { RateLimitSpec } from '../../../src/config/resource-types.js';
import { spec, T0 } from './limit-spec.js';
import type { Decision } from '../../../src/ratelimit/limiter.js';
import { inProcessCluster, type InProcessCluster } from './in-process-cluster.js';

let now = T0;
const clock = (): number => now;

let c: InProcessCluster | null = null;
function cluster(workers: number, divisor = 8 * workers, recallTimeoutMs = 250): InProcessCluster {
  now = T0;
  c = inProcessCluster(workers, clock, { leaseDivisor: divisor, recallTimeoutMs });
  return c;
}
afterEach(async () => {
  await c?.close();
  c = null;
});

const turn = (): Promise<void> => new Promise((r) => setImmediate(r));
const used = (cl: InProcessCluster, route: string, limit: RateLimitSpec): number =>
  limit.inputTokensPerUnit! - cl.store.admit(route, limit, 0).input!.remaining;

describe('local leases', () => {
  it('after the first decision a worker decides on its own: no message, exact headers for one worker', async () => {
    const cl = cluster(1);
    const limit = spec(1000, 5000);
    const first = await cl.clients[0].admit('ns/r', limit, 10);
    expect(first.input).toEqual({ limit: 1000, remaining: 990, resetSeconds: 40 });
    expect(cl.clients[0].leasesHeld).toBe(1);
    const sent = cl.sentToPrimary[0];
    const second = cl.clients[0].admit('ns/r', limit, 10);
    expect(second).not.toBeInstanceOf(Promise); // decided in the worker
    expect(second).toEqual({
      allowed: true, rejectedBy: null, retryAfterSeconds: 40,
      input: { limit: 1000, remaining: 980, resetSeconds: 40 },
      output: { limit: 5000, remaining: 5000, resetSeconds: 40 },
    });
    await turn();
    expect(cl.sentToPrimary[0]).toBe(sent);
    // The lease (1000 - 10) / 8 = 123 tokens was charged up front; given back on close.
    expect(used(cl, 'ns/r', limit)).toBe(10 + 123);
    await cl.clients[0].close();
    await turn();
    expect(used(cl, 'ns/r', limit)).toBe(20);
  });

  it('settle: the correction and the output charge come out of the lease as adjustInput then chargeOutput would, on one clock reading', async () => {
    let reads = 0;
    now = T0;
    c = inProcessCluster(1, () => { reads++; return now; }, { leaseDivisor: 8, recallTimeoutMs: 250 });
    const client = c.clients[0];
    const limit = spec(1000, 5000);
    await client.admit('ns/r', limit, 10);
    expect(client.leasesHeld).toBe(1);
    const sent = c.sentToPrimary[0];
    reads = 0;
    client.settle('ns/r', limit, 5, 40);
    expect(reads).toBe(1);
    const d = client.admit('ns/r', limit, 10) as Decision;
    expect(d.input).toEqual({ limit: 1000, remaining: 1000 - 25, resetSeconds: 40 });
    expect(d.output).toEqual({ limit: 5000, remaining: 5000 - 40, resetSeconds: 40 });
    await turn();
    expect(c.sentToPrimary[0]).toBe(sent); // absorbed by the lease: no message
    // Without a lease of the key both go to the primary.
    client.settle('ns/other', limit, -2, 7);
    await turn();
    expect(c.sentToPrimary[0]).toBe(sent + 1);
    await turn();
    expect(c.store.admit('ns/other', limit, 0).input!.remaining).toBe(1000);
    expect(c.store.admit('ns/other', limit, 0).output!.remaining).toBe(5000 - 7);
  });

  it('a lease never holds more than its share, and none is granted when it would not hold two more requests', async () => {
    const cl = cluster(1, 8);
    const limit = spec(100, null);
    await cl.clients[0].admit('ns/small', limit, 50); // free 50: lease 6 < 2 × 50
    expect(cl.clients[0].leasesHeld).toBe(0);
    await cl.clients[0].admit('ns/ok', limit, 2); // free 98: lease 12 >= 4
    expect(cl.clients[0].leasesHeld).toBe(1);
    expect(used(cl, 'ns/ok', limit)).toBe(2 + 12);
  });

  it('budget held in another worker\'s lease is recalled, so what fits is admitted exactly', async () => {
    const cl = cluster(2, 2); // big leases: half of what is free
    const limit = spec(100, null);
    const [a, b] = cl.clients;
    expect((await a.admit('ns/r', limit, 10)).allowed).toBe(true); // a holds a lease of 45
    expect(a.leasesHeld).toBe(1);
    expect(used(cl, 'ns/r', limit)).toBe(55);
    // 90 more fit in the limit but only 45 are not leased: a's lease comes back, then b is admitted.
    const d = await b.admit('ns/r', limit, 90);
    expect(d.allowed).toBe(true);
    expect(d.input?.remaining).toBe(0);
    expect(a.leasesHeld).toBe(0);
    expect((await a.admit('ns/r', limit, 1)).rejectedBy).toBe('input');
  });

  it('many workers in waves: never more than the limit, and the limit used up exactly', async () => {
    const cl = cluster(4);
    const limit = spec(3001, null);
    let admitted = 0;
    let local = 0;
    await Promise.all(cl.clients.map(async (client, w) => {
      for (let wave = 0; wave < 40; wave++) {
        const answers = Array.from({ length: 10 }, (_, i) => client.admit('ns/r', limit, 1 + ((i + w + wave) % 5)));
        local += answers.filter((x) => !(x instanceof Promise)).length;
        const sizes = Array.from({ length: 10 }, (_, i) => 1 + ((i + w + wave) % 5));
        (await Promise.all(answers)).forEach((d: Decision, i) => {
          if (d.allowed) admitted += sizes[i];
        });
      }
    }));
    for (const client of cl.clients) await client.close();
    await turn();
    expect(admitted).toBe(used(cl, 'ns/r', limit));
    expect(admitted).toBeLessThanOrEqual(3001);
    expect(admitted).toBeGreaterThan(3001 - 5); // demand (4800) exceeds it; less than one prompt is left
    expect(local).toBeGreaterThan(200);
  });

  it('output past a lease\'s allowance goes to the primary at once, and the output limit holds for every worker', async () => {
    const cl = cluster(2, 4);
    const limit = spec(null, 1000);
    const [a, b] = cl.clients;
    await a.admit('ns/r', limit, 5); // a holds an allowance of (1000 - 1) / 4 = 249 output tokens
    await b.admit('ns/r', limit, 5); // b: (999 - 249) / 4 = 187
    expect(a.leasesHeld + b.leasesHeld).toBe(2);
    a.chargeOutput('ns/r', limit, 100); // within the allowance: no message yet
    a.chargeOutput('ns/r', limit, 899); // past it: reported now, the lease goes back
    expect(a.leasesHeld).toBe(0);
    await vi.waitFor(() => expect(b.leasesHeld).toBe(0)); // 999 + b's allowance >= 1000: recalled
    expect(cl.store.admit('ns/r', limit, 0).output?.remaining).toBe(1);
    expect((await b.admit('ns/r', limit, 5)).allowed).toBe(true); // 999 < 1000
    b.chargeOutput('ns/r', limit, 1);
    await turn();
    expect((await a.admit('ns/r', limit, 5)).rejectedBy).toBe('output');
    expect((await b.admit('ns/r', limit, 5)).rejectedBy).toBe('output');
  });

  it('a charge from a worker without a lease that reaches the limit recalls the others\' leases', async () => {
    const cl = cluster(2, 4);
    const limit = spec(null, 1000);
    const [a, b] = cl.clients;
    await a.admit('ns/r', limit, 5);
    expect(a.leasesHeld).toBe(1);
    b.chargeOutput('ns/r', limit, 1000);
    await vi.waitFor(() => expect(a.leasesHeld).toBe(0));
    expect((await a.admit('ns/r', limit, 5)).rejectedBy).toBe('output');
  });

  it('usage held in a lease is reported: output every 50 ms, input without an input limit too', async () => {
    const cl = cluster(1);
    const limit = spec(null, 100_000);
    const [a] = cl.clients;
    await a.admit('ns/r', limit, 7);
    expect(a.admit('ns/r', limit, 3)).not.toBeInstanceOf(Promise);
    a.chargeOutput('ns/r', limit, 40);
    a.adjustInput('ns/r', limit, 2);
    await vi.waitFor(() => {
      const d = cl.store.admit('ns/r', spec(1000, 100_000), 0);
      expect(d.input?.remaining).toBe(1000 - 12);
      expect(d.output?.remaining).toBe(100_000 - 40);
    });
  });

  it('input corrections are absorbed by the lease and settled when it goes back', async () => {
    const cl = cluster(1);
    const limit = spec(1000, null);
    const [a] = cl.clients;
    await a.admit('ns/r', limit, 10);
    a.admit('ns/r', limit, 10);
    a.adjustInput('ns/r', limit, -4);
    a.adjustInput('ns/r', limit, 7);
    await a.close();
    await turn();
    expect(used(cl, 'ns/r', limit)).toBe(23);
  });

  it('a request with other limits (a config edit) gives the lease back and asks the primary', async () => {
    const cl = cluster(1);
    const [a] = cl.clients;
    await a.admit('ns/r', spec(1000, null), 10);
    expect(a.leasesHeld).toBe(1);
    const d = a.admit('ns/r', spec(50, null), 10);
    expect(d).toBeInstanceOf(Promise);
    expect((await d).input).toEqual({ limit: 50, remaining: 30, resetSeconds: 40 });
  });

  it('a lease ends with its window: the next window starts from zero', async () => {
    const cl = cluster(1);
    const limit = spec(1000, null);
    const [a] = cl.clients;
    await a.admit('ns/r', limit, 10);
    a.admit('ns/r', limit, 10);
    now = Date.UTC(2025, 0, 15, 10, 31, 0);
    const d = a.admit('ns/r', limit, 10);
    expect(d).toBeInstanceOf(Promise);
    expect((await d).input).toEqual({ limit: 1000, remaining: 990, resetSeconds: 60 });
  });

  it('a worker that dies keeps its lease charged (never over-admits); decisions do not wait for it', async () => {
    const cl = cluster(2, 2);
    const limit = spec(100, null);
    const [a, b] = cl.clients;
    await a.admit('ns/r', limit, 10); // a: lease 45
    cl.kill(0);
    const d = await b.admit('ns/r', limit, 60); // 10 + 45 + 60 > 100: a's lease is lost, so rejected
    expect(d.rejectedBy).toBe('input');
    expect((await b.admit('ns/r', limit, 40)).allowed).toBe(true);
  });

  it('a worker that does not answer a recall: its lease is forfeited after the timeout, then decided', async () => {
    const cl = cluster(2, 2, 100);
    const limit = spec(100, 100);
    const [a, b] = cl.clients;
    await a.admit('ns/r', limit, 10); // a: 45 input, (100 - 1) / 2 = 49 output
    cl.freeze(0);
    const t = Date.now();
    const d = await b.admit('ns/r', limit, 60);
    expect(Date.now() - t).toBeGreaterThanOrEqual(90);
    expect(d.rejectedBy).toBe('input'); // the lease stays charged
    // Its whole output allowance counts as used: 49 of 100.
    expect(cl.store.admit('ns/r', limit, 0).output?.remaining).toBe(51);
  });
});

describe('local leases and multi-limit admissions (route + tenant)', () => {
  it('an admission with several limits is decided at the primary, after the leases of its keys are back: exact, never refused for budget sitting in a lease', async () => {
    const cl = cluster(2);
    const route = spec(100, null);
    const tenant = spec(1000, null);
    // Worker 0 takes a lease of the route from single-limit requests.
    await cl.clients[0].admit('ns/r', route, 2);
    expect(cl.clients[0].leasesHeld).toBe(1);
    expect(used(cl, 'ns/r', route)).toBeGreaterThan(2); // the lease is charged up front
    // Worker 1: route + tenant for all that is really left (98): fits once the lease is back.
    const terms = [{ key: 'ns/r', limit: route }, { key: 'tenant:key:t', limit: tenant }];
    const ds = await cl.clients[1].admitAll(terms, 98);
    expect(ds.map((d) => d.allowed)).toEqual([true, true]);
    expect(ds[0].input!.remaining).toBe(0);
    expect(cl.clients[0].leasesHeld).toBe(0);
    // Nothing more fits anywhere, and the tenant holds exactly what was admitted.
    expect((await cl.clients[0].admit('ns/r', route, 1)).allowed).toBe(false);
    expect((await cl.clients[1].admitAll(terms, 1)).map((d) => d.allowed)).toEqual([false, true]);
    expect(used(cl, 'tenant:key:t', tenant)).toBe(98);
  });

  it('after the first decision a worker holding leases of every limit decides on its own, all or nothing', async () => {
    const cl = cluster(1);
    const route = spec(1000, null);
    const tenant = spec(100, null);
    const terms = [{ key: 'ns/r', limit: route }, { key: 'tenant:key:t', limit: tenant }];
    const first = await cl.clients[0].admitAll(terms, 2);
    expect(first.map((d) => d.allowed)).toEqual([true, true]);
    expect(cl.clients[0].leasesHeld).toBe(2);
    const sent = cl.sentToPrimary[0];
    const second = cl.clients[0].admitAll(terms, 2);
    expect(second).not.toBeInstanceOf(Promise); // decided in the worker
    expect((second as { input: { remaining: number } | null }[]).map((d) => d.input!.remaining)).toEqual([996, 96]);
    await turn();
    expect(cl.sentToPrimary[0]).toBe(sent);
    // Larger than the tenant's lease: asks the primary, which decides against the real budget.
    const big = await cl.clients[0].admitAll(terms, 96);
    expect(big.map((d) => d.allowed)).toEqual([true, true]);
    expect((await cl.clients[0].admitAll(terms, 1)).map((d) => d.allowed)).toEqual([true, false]);
    await cl.clients[0].close();
    await turn();
    expect(used(cl, 'tenant:key:t', tenant)).toBe(100);
    expect(used(cl, 'ns/r', route)).toBe(100);
  });

  it('concurrent multi-limit admissions from several workers never exceed either limit', async () => {
    const cl = cluster(3);
    const route = spec(1000, null);
    const tenant = spec(301, null);
    const terms = [{ key: 'ns/r', limit: route }, { key: 'tenant:key:t', limit: tenant }];
    // Single-limit traffic on the route too, so leases come and go.
    const all = await Promise.all(Array.from({ length: 300 }, (_, i) => i % 4 === 0
      ? Promise.resolve(cl.clients[i % 3].admit('ns/r', route, 2)).then((d) => ({ multi: false, ok: d.allowed }))
      : Promise.resolve(cl.clients[i % 3].admitAll(terms, 2)).then((ds) => ({ multi: true, ok: ds.every((d) => d.allowed) }))));
    const multiOk = all.filter((a) => a.multi && a.ok).length;
    const singleOk = all.filter((a) => !a.multi && a.ok).length;
    expect(multiOk).toBe(150); // floor(301 / 2) of 225
    expect(singleOk).toBe(75);
    for (const client of cl.clients) await client.close();
    await turn();
    await turn();
    expect(used(cl, 'tenant:key:t', tenant)).toBe(300);
    expect(used(cl, 'ns/r', route)).toBe(450);
  });
});
