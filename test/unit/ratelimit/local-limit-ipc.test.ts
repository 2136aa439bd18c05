/**
 * The local mode over real IPC.
 * - Conformance: the limit host and client run in this process, joined through a real child
 *   process that reflects every message (ipc-reflector.mjs). The store keeps the suite's
 *   injected clock, which cannot cross a process boundary, while every request and reply
 *   still goes through Node's IPC serialization and the client's batching.
 * - Exactness: a real node:cluster (cluster-hammer.mjs) with 4 workers hammering one route.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { EventEmitter, once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { RateLimitSpec } from '../../../src/config/resource-types.js';
import { CounterStore } from '../../../src/ratelimit/local/counter-store.js';
import { MSG_REQUEST } from '../../../src/ratelimit/local/ipc-protocol.js';
import type { Clock } from '../../../src/clock.js';
import { LimiterOverloadedError, LimiterUnavailableError } from '../../../src/ratelimit/errors.js';
import { LocalLimitClient } from '../../../src/ratelimit/local/limit-client.js';
import { attachLocalLimitHost, type LimitHostCluster, type LimitHostWorker } from '../../../src/ratelimit/local/limit-host.js';
import { compileRatelimit, type CompiledRatelimit } from './compile-ratelimit.js';
import { runLimiterConformance } from './limiter-conformance.js';

const REFLECTOR = fileURLToPath(new URL('./fixtures/ipc-reflector.mjs', import.meta.url));
const HAMMER = fileURLToPath(new URL('./fixtures/cluster-hammer.mjs', import.meta.url));

const children: ChildProcess[] = [];

async function startReflector(env: Record<string, string> = {}): Promise<ChildProcess> {
  const child = fork(REFLECTOR, [], { env: { ...process.env, ...env }, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  children.push(child);
  await once(child, 'spawn');
  return child;
}

/** A host whose "cluster" is the reflector: requests coming back from it are handed to the host. */
function hostOver(child: ChildProcess, store: CounterStore, invalid: string[] = []): () => void {
  const worker: LimitHostWorker = {
    send: (message, sendHandle, callback) => child.send(message, sendHandle, callback),
    isConnected: () => child.connected,
  };
  const fakeCluster = new EventEmitter();
  child.on('message', (message) => fakeCluster.emit('message', worker, message));
  return attachLocalLimitHost(fakeCluster as unknown as LimitHostCluster, store, { onInvalid: (r) => invalid.push(r) });
}

afterAll(() => {
  for (const c of children) if (c.exitCode === null) c.kill();
});

let reflector: ChildProcess | null = null;
runLimiterConformance('LocalLimitClient over IPC', async (clock: Clock) => {
  reflector ??= await startReflector();
  const child = reflector;
  const store = new CounterStore(clock);
  const detach = hostOver(child, store);
  const limiter = new LocalLimitClient({ port: child, timeoutMs: 5_000, clock });
  return {
    limiter,
    cleanup: async () => {
      await limiter.close();
      detach();
      child.removeAllListeners('message');
    },
  };
});

const LIMIT: RateLimitSpec = { inputTokensPerUnit: 10, outputTokensPerUnit: null, unit: 'minute', global: null, mode: 'enforce' };

describe('LocalLimitClient failures', () => {
  it('fails a decision the primary does not answer in time with LimiterUnavailableError', async () => {
    const silent = await startReflector({ REFLECT_SILENT: '1' });
    const client = new LocalLimitClient({ port: silent, timeoutMs: 50 });
    const err = await Promise.resolve(client.admit('ns/a', LIMIT, 1)).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(LimiterUnavailableError);
    expect((err as Error).message).toMatch(/did not answer .* within 50 ms/);
    expect(client.inFlight).toBe(0);
    await client.close();
  });

  it('refunds a decision that timed out but was admitted by the primary', async () => {
    const slow = await startReflector({ REFLECT_DELAY_MS: '150' });
    const store = new CounterStore(() => Date.UTC(2025, 0, 15, 10, 30, 20));
    const detach = hostOver(slow, store);
    const client = new LocalLimitClient({ port: slow, timeoutMs: 20 });
    await expect(client.admit('ns/late', LIMIT, 6)).rejects.toBeInstanceOf(LimiterUnavailableError);
    // The late answer comes back allowed; the client sends adjustInput(-6): the store returns to 10.
    await vi.waitFor(() => expect(store.admit('ns/late', LIMIT, 0).input?.remaining).toBe(10), { timeout: 5_000, interval: 20 });
    await client.close();
    detach();
  });

  it('does not refund a late admission into the window after the one it was asked in', async () => {
    const slow = await startReflector({ REFLECT_DELAY_MS: '150' });
    let now = Date.UTC(2025, 0, 15, 10, 30, 59, 900);
    const clock = (): number => now;
    const store = new CounterStore(clock);
    const detach = hostOver(slow, store);
    const client = new LocalLimitClient({ port: slow, timeoutMs: 20, clock });
    await expect(client.admit('ns/late-window', LIMIT, 6)).rejects.toBeInstanceOf(LimiterUnavailableError);
    // The primary admits it in this minute (the reflector delays each way 150 ms)…
    await vi.waitFor(() => expect(store.admit('ns/late-window', LIMIT, 0).input?.remaining).toBe(4), { timeout: 5_000, interval: 5 });
    // …and the minute ends before its answer reaches the worker; the next minute charges 5 of its own.
    now = Date.UTC(2025, 0, 15, 10, 31, 0, 100);
    expect(store.admit('ns/late-window', LIMIT, 5).input?.remaining).toBe(5);
    await new Promise((r) => setTimeout(r, 600)); // the answer came (150 ms) and a give-back would have (150 ms)
    expect(store.admit('ns/late-window', LIMIT, 0).input?.remaining).toBe(5);
    await client.close();
    detach();
  });

  it('bounds the decisions in flight', async () => {
    const silent = await startReflector({ REFLECT_SILENT: '1' });
    const client = new LocalLimitClient({ port: silent, timeoutMs: 10_000, maxPending: 3 });
    const inFlight = [1, 2, 3].map(() => Promise.resolve(client.admit('ns/a', LIMIT, 1)).catch((e: unknown) => e));
    await expect(client.admit('ns/a', LIMIT, 1)).rejects.toBeInstanceOf(LimiterOverloadedError);
    await client.close();
    for (const e of await Promise.all(inFlight)) expect(e).toBeInstanceOf(LimiterUnavailableError);
  });

  it('fails pending decisions at once when the channel closes', async () => {
    const silent = await startReflector({ REFLECT_SILENT: '1' });
    const client = new LocalLimitClient({ port: silent, timeoutMs: 60_000 });
    const pending = client.admit('ns/a', LIMIT, 1);
    await new Promise((r) => setImmediate(r)); // let the batch go out
    silent.disconnect();
    await expect(pending).rejects.toThrow(/IPC channel to the cluster primary closed/);
    await expect(client.admit('ns/a', LIMIT, 1)).rejects.toBeInstanceOf(LimiterUnavailableError);
    await client.close();
  });

  it('needs an IPC channel', () => {
    expect(() => new LocalLimitClient({ port: new EventEmitter() as never })).toThrow(/needs an IPC channel/);
  });

  it('the host reports malformed requests and answers a malformed admit as invalid', async () => {
    const child = await startReflector();
    const invalid: string[] = [];
    const detach = hostOver(child, new CounterStore(() => Date.UTC(2025, 0, 15)), invalid);
    const replies: unknown[] = [];
    child.on('message', (m) => {
      if ((m as { t?: string }).t === 'rl:r') replies.push(m);
    });
    child.send({ t: MSG_REQUEST, a: [0, 7, 'ns/a', 10, -1, 'fortnight', 1] });
    child.send({ t: MSG_REQUEST, a: 'nope' });
    child.send({ t: 'other:thing', a: [] });
    await vi.waitFor(() => expect(replies).toHaveLength(1), { timeout: 5_000, interval: 10 });
    expect((replies[0] as { a: number[] }).a.slice(0, 2)).toEqual([7, -2]);
    expect(invalid).toHaveLength(2);
    expect(invalid[0]).toMatch(/invalid rate limit op 0 for route ns\/a/);
    expect(invalid[1]).toMatch(/malformed rate limit request/);
    detach();
  });
});

describe('local mode exactness across a real node:cluster', () => {
  let compiled: CompiledRatelimit;
  beforeAll(async () => {
    compiled = await compileRatelimit();
  });
  afterAll(async () => {
    await compiled?.remove();
  });

  interface HammerResult {
    results: { worker: number; admitted: number; admittedTokens: number; rejected: number; minRejectedTokens: number | null; local: number }[];
    left: number;
    invalid: string[];
    /** Set (and nothing else) when a worker failed. */
    error?: string;
  }

  async function hammer(env: Record<string, string>): Promise<HammerResult> {
    const child = fork(HAMMER, [], {
      env: { ...process.env, RL_DIST: compiled.dir, RL_WORKERS: '4', ...env },
      stdio: ['ignore', 'pipe', 'inherit', 'ipc'],
    });
    children.push(child);
    let out = '';
    child.stdout!.on('data', (b: Buffer) => (out += b.toString()));
    const [code] = (await once(child, 'exit')) as [number | null];
    let r: HammerResult | null = null;
    try {
      r = JSON.parse(out.trim().split('\n').pop() ?? '') as HammerResult;
    } catch {
      // no result line: the checks below show the output
    }
    expect(r?.error, `cluster-hammer output: ${out}`).toBeUndefined();
    expect(code, `cluster-hammer output: ${out}`).toBe(0);
    expect(r, `cluster-hammer output: ${out}`).not.toBeNull();
    return r!;
  }

  const modes: { name: string; env: { RL_WAVE?: string } }[] = [
    { name: 'all at once', env: {} },
    { name: 'in waves of 25 (leases decide most requests in the workers)', env: { RL_WAVE: '25' } },
  ];
  describe.each(modes)('$name', ({ env: wave }) => {
    const leased = (r: HammerResult): number => r.results.reduce((s, w) => s + w.local, 0);

    it('4 workers, demand 8000 x 1 token, limit 5000: exactly 5000 admitted in total', async () => {
      const r = await hammer({ RL_REQUESTS: '2000', RL_TOKENS: '1', RL_LIMIT: '5000', ...wave });
      expect(r.results).toHaveLength(4);
      const total = r.results.reduce((s, w) => s + w.admittedTokens, 0);
      expect(total).toBe(5000);
      expect(r.results.reduce((s, w) => s + w.rejected, 0)).toBe(3000);
      expect(r.left).toBe(0);
      expect(r.invalid).toEqual([]);
      if (wave.RL_WAVE !== undefined) expect(leased(r)).toBeGreaterThan(1000);
    });

    it('4 workers, mixed prompt sizes: never more than the limit, and the store agrees with the workers', async () => {
      const r = await hammer({ RL_REQUESTS: '3000', RL_TOKENS: 'mixed', RL_LIMIT: '20011', ...wave });
      const total = r.results.reduce((s, w) => s + w.admittedTokens, 0);
      expect(total).toBeLessThanOrEqual(20011);
      expect(total + r.left).toBe(20011);
      // Never a request refused that fits (docs/rate-limiting.md, "Local mode"): each refused
      // prompt was larger than what requests had left of the limit then, which is at least what
      // is left at the end. So the remainder is smaller than the smallest prompt refused —
      // whichever worker was refused, and whatever leases the others held at that moment.
      const smallestRefused = Math.min(...r.results.map((w) => w.minRejectedTokens ?? Infinity));
      expect(smallestRefused).toBeLessThanOrEqual(7); // demand (~48000) far exceeds the limit
      expect(r.left).toBeLessThan(smallestRefused);
      for (const w of r.results) expect(w.admitted + w.rejected).toBe(3000);
      if (wave.RL_WAVE !== undefined) expect(leased(r)).toBeGreaterThan(1000);
    });

    it('4 workers, demand below the limit: everything is admitted', async () => {
      const r = await hammer({ RL_REQUESTS: '500', RL_TOKENS: '2', RL_LIMIT: '5000', ...wave });
      expect(r.results.reduce((s, w) => s + w.admittedTokens, 0)).toBe(4000);
      expect(r.left).toBe(1000);
      if (wave.RL_WAVE !== undefined) expect(leased(r)).toBeGreaterThan(500);
    });
  });
});
