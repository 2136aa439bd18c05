import { describe, expect, it } from 'vitest';
import { PodScorer } from '../../../src/pick/pod-scorer.js';
import { PrefixStore } from '../../../src/pick/prefix-store.js';
import { prefixBlockHashes } from '../../../src/pick/prefix-hashes.js';
import { DEFAULT_SCHEDULER_CONFIG, parseSchedulerConfig, type SchedulerConfig } from '../../../src/pick/scheduler-config.js';
import { PodHealth } from '../../../src/upstream/pod-health.js';
import { PodLoad } from '../../../src/upstream/pod-load.js';
import type { EndpointState } from '../../../src/upstream/endpoint-registry.js';
import { textPrompt } from '../../../src/tokens/prompt-text.js';

const NOW = 1_000;
function pod(name: string, o: { inflight?: number; waiting?: number; kv?: number; ttft?: number; others?: number; ejected?: boolean } = {}): EndpointState {
  const load = new PodLoad();
  if (o.waiting !== undefined || o.kv !== undefined || o.ttft !== undefined) {
    load.waiting = o.waiting ?? NaN;
    load.kvUsage = o.kv ?? NaN;
    load.ttftMs = o.ttft ?? NaN;
    load.scrapedUntil = NOW + 1;
  }
  if (o.others !== undefined) { load.otherInflight = o.others; load.sharedUntil = NOW + 1; }
  const health = new PodHealth();
  if (o.ejected) health.ejectedUntil = NOW + 1;
  return { name, key: name, inflight: o.inflight ?? 0, load, health } as unknown as EndpointState;
}

const cfg = (yaml: string): SchedulerConfig => parseSchedulerConfig(yaml, 'test');
const NO_HASHES = new Uint32Array(0);

function pickMany(s: PodScorer, pods: EndpointState[], times = 200): Map<string, number> {
  const seen = new Map<string, number>();
  for (let i = 0; i < times; i++) {
    const p = s.pick(pods, null, NOW, null, NO_HASHES, 0, Math.random)!;
    seen.set(p.name, (seen.get(p.name) ?? 0) + 1);
  }
  return seen;
}

describe('PodScorer', () => {
  it('never picks a pod that left the configuration (retired), not even when every other is ejected', () => {
    const s = new PodScorer(DEFAULT_SCHEDULER_CONFIG);
    const gone = Object.assign(pod('gone'), { retired: true });
    expect([...pickMany(s, [gone, pod('b')]).keys()]).toEqual(['b']);
    expect([...pickMany(s, [gone, pod('b', { ejected: true })]).keys()]).toEqual(['b']);
    expect(s.pick([gone], null, NOW, null, NO_HASHES, 0, Math.random)).toBeNull();
  });

  it('least-request counts in flight of every worker plus the pod queue', () => {
    const s = new PodScorer(cfg('scorers: { least-request: 1 }'));
    expect(s.pick([pod('a', { inflight: 1, others: 5 }), pod('b', { inflight: 3 })], null, NOW, null, NO_HASHES, 0, Math.random)!.name).toBe('b');
    expect(s.decider).toBe('least-request');
    expect(s.pick([pod('a', { inflight: 1, waiting: 4 }), pod('b', { inflight: 3 })], null, NOW, null, NO_HASHES, 0, Math.random)!.name).toBe('b');
  });

  it('the queue filter leaves out a pod with a long queue while another is below the threshold', () => {
    const s = new PodScorer(cfg('scorers: { kv-cache: 1 }\nqueueFilter: { maxWaiting: 5 }'));
    // kv-cache alone would choose a; its queue keeps it out.
    expect([...pickMany(s, [pod('a', { waiting: 50, kv: 0 }), pod('b', { waiting: 2, kv: 0.9 })]).keys()]).toEqual(['b']);
    // All above: nobody is left out.
    expect([...pickMany(s, [pod('a', { waiting: 50, kv: 0 }), pod('b', { waiting: 60, kv: 0.9 })]).keys()]).toEqual(['a']);
  });

  it('kv-cache prefers the emptier cache; least-latency the faster pod; unknown KV use is neutral', () => {
    const kv = new PodScorer(cfg('scorers: { kv-cache: 1 }'));
    expect(kv.pick([pod('a', { kv: 0.95 }), pod('b', { kv: 0.1 })], null, NOW, null, NO_HASHES, 0, Math.random)!.name).toBe('b');
    expect(kv.decider).toBe('kv-cache');
    const lat = new PodScorer(cfg('scorers: { least-latency: 1 }'));
    expect(lat.pick([pod('a', { ttft: 400 }), pod('b', { ttft: 100 })], null, NOW, null, NO_HASHES, 0, Math.random)!.name).toBe('b');
    // a reports no TTFT: the latencies this worker saw decide (b's reported 100 ms is not compared with them).
    const [a, b] = [pod('a', { kv: 0 }), pod('b', { ttft: 100 })];
    a.load.observedMs = 20;
    b.load.observedMs = 900;
    expect(lat.pick([a, b], null, NOW, null, NO_HASHES, 0, Math.random)!.name).toBe('a');
    // A pod never seen scores as the fastest (so it gets tried).
    b.load.observedMs = NaN;
    expect(pickMany(lat, [a, b]).size).toBe(2);
    // Stale values count as unknown: a tie, both win sometimes.
    const stale = [pod('a', { kv: 0.95 }), pod('b', { kv: 0.1 })];
    expect(pickMany(kv, stale).size).toBe(1);
    for (const p of stale) p.load.scrapedUntil = NOW;
    expect(pickMany(kv, stale).size).toBe(2);
  });

  it('prefix-cache: a prompt sharing blocks with one a pod served goes to it; an unrelated one does not', () => {
    const s = new PodScorer(DEFAULT_SCHEDULER_CONFIG);
    const store = new PrefixStore(1000);
    const a = pod('a');
    const b = pod('b');
    const h = new Uint32Array(64);
    const shared = 'You are a helpful assistant. '.repeat(100);
    const n1 = prefixBlockHashes(textPrompt(`${shared} question one`), 256, h);
    store.record(h, n1, b);
    const n2 = prefixBlockHashes(textPrompt(`${shared} question two`), 256, h);
    expect(n2).toBeGreaterThan(5);
    for (let i = 0; i < 50; i++) expect(s.pick([a, b], null, NOW, store, h, n2, Math.random)).toBe(b);
    expect(s.decider).toBe('prefix-cache');
    const n3 = prefixBlockHashes(textPrompt('Something else entirely. '.repeat(100)), 256, h);
    expect(pickMany({ pick: (p: EndpointState[]) => s.pick(p, null, NOW, store, h, n3, Math.random) } as unknown as PodScorer, [a, b]).size).toBe(2);
    expect(a.load.prefixMatch + b.load.prefixMatch).toBe(0); // scratch cleared
  });

  it('skips excluded and ejected pods; all ejected: tries them anyway', () => {
    const s = new PodScorer(DEFAULT_SCHEDULER_CONFIG);
    const a = pod('a', { ejected: true });
    const b = pod('b', { inflight: 9 });
    expect(s.pick([a, b], null, NOW, null, NO_HASHES, 0, Math.random)).toBe(b);
    expect(s.pick([a, b], [b], NOW, null, NO_HASHES, 0, Math.random)).toBe(a);
    expect(s.pick([a, b], [a, b], NOW, null, NO_HASHES, 0, Math.random)).toBeNull();
  });

  it('all ejected: the pod whose ejection ends first, whatever the scorers say', () => {
    const s = new PodScorer(DEFAULT_SCHEDULER_CONFIG);
    const later = pod('later', { ejected: true });
    later.health.ejectedUntil = NOW + 60_000;
    const sooner = pod('sooner', { inflight: 50, ejected: true });
    sooner.health.ejectedUntil = NOW + 1_000;
    expect([...pickMany(s, [later, sooner]).keys()]).toEqual(['sooner']);
    expect(s.decider).toBe('single');
  });
});

describe('parseSchedulerConfig', () => {
  it('defaults: least-request + prefix-cache + least-latency', () => {
    expect(parseSchedulerConfig('', 'f')).toBe(DEFAULT_SCHEDULER_CONFIG);
    expect(DEFAULT_SCHEDULER_CONFIG.weights).toEqual({ 'least-request': 1.5, 'least-latency': 0.25, 'prefix-cache': 1, 'kv-cache': 0 });
  });

  it('reads weights (absent = off) and limits', () => {
    const c = parseSchedulerConfig('scorers: { least-request: 2, kv-cache: 0.5 }\nqueueFilter: { maxWaiting: 3 }\nprefixCache: { blockChars: 64, maxBlocks: 8, capacity: 100 }', 'f');
    expect(c).toEqual({ weights: { 'least-request': 2, 'least-latency': 0, 'prefix-cache': 0, 'kv-cache': 0.5 }, maxWaiting: 3, prefixBlockChars: 64, prefixMaxBlocks: 8, prefixCapacity: 100 });
  });

  it.each([
    ['scorers: { random: 1 }', /f: scorers.random: unknown field/],
    ['scorers: { least-request: 0 }', /at least one scorer needs a weight above 0/],
    ['scorers: { least-request: -1 }', /scorers.least-request: expected a number from 0 to 1000, got -1/],
    ['queueFilter: { maxWaiting: 1.5 }', /queueFilter.maxWaiting: expected an integer/],
    ['prefixCache: { blockChars: 1 }', /prefixCache.blockChars: expected an integer from 16/],
    ['weights: {}', /f: weights: unknown field/],
    ['[1, 2]', /\(top level\): expected a mapping/],
    ['a: [', /not valid YAML/],
  ])('refuses %j', (yaml, message) => {
    expect(() => parseSchedulerConfig(yaml, 'f')).toThrow(message);
  });
});
