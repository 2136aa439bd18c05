/**
 * Simulation of pod choice (docs/benchmarks.md): many model-server pods with a simple queue
 * model and a prefix cache, fed the same request stream under three schedulers: random,
 * least-in-flight (the router before) and the default scorers (least-request + prefix-cache +
 * least-latency, with the router's real PodScorer, PrefixStore and prefix hashing). Time is
 * simulated (event queue), so results do not depend on the machine.
 *
 * Pod model: `SLOTS` requests run at once, the rest wait in FIFO order. A request's time to
 * first token = its wait + prefill of the prompt tokens not in the pod's prefix cache
 * (PREFILL_MS_PER_TOKEN each); it then decodes OUTPUT_TOKENS at DECODE_MS_PER_TOKEN, holding its
 * slot. The prefix cache keeps the last CACHE_GROUPS shared prefixes the pod prefilled (LRU).
 * Requests draw one of GROUPS shared prefixes (system prompts) with Zipf(1) popularity.
 * Pod metrics (waiting, running, TTFT mean) are scraped every second, as the router does.
 *
 * Run: npm run build && node dist/bench/scheduler-sim.js [requests] [load 0..1]
 */
import { pickLeastInflight } from './least-inflight.js';
import { percentile } from './order-stats.js';
import { positiveNumber, readCommandLine, type CommandSpec } from './cli-args.js';
import { PodScorer } from 'inference-router/pick/pod-scorer';
import { prefixBlockHashes } from 'inference-router/pick/prefix-hashes';
import { PrefixStore } from 'inference-router/pick/prefix-store';
import { DEFAULT_SCHEDULER_CONFIG, parseSchedulerConfig } from 'inference-router/pick/scheduler-config';
import { textPrompt } from 'inference-router/tokens/prompt-text';
import type { EndpointState } from 'inference-router/upstream/endpoint-registry';
import { PodHealth } from 'inference-router/upstream/pod-health';
import { PodLoad } from 'inference-router/upstream/pod-load';
import { mulberry32 } from '../test/helpers/mulberry32.js';

const PODS = 16;
const SLOTS = 8;
const GROUPS = 200;
const CACHE_GROUPS = 16;
const PREFIX_TOKENS = 2000;
const SUFFIX_TOKENS = 200;
const OUTPUT_TOKENS = 100;
const PREFILL_MS_PER_TOKEN = 0.25;
const DECODE_MS_PER_TOKEN = 20;
const SCRAPE_MS = 1000;
const CHARS_PER_TOKEN = 4;

const COMMAND: CommandSpec = {
  usage: 'Usage: node dist/bench/scheduler-sim.js [REQUESTS] [LOAD]   (default 20000 requests at load 0.8 of the pods\' capacity)',
  positionals: [0, 2],
};
const { REQUESTS, LOAD } = readCommandLine(COMMAND, (line) => ({
  REQUESTS: positiveNumber('REQUESTS', line.positionals[0] ?? '20000'),
  LOAD: positiveNumber('LOAD', line.positionals[1] ?? '0.8'),
}));

interface Req { id: number; at: number; group: number; start: number; ttft: number; hit: boolean }

function makeRequests(): Req[] {
  const r = mulberry32(42);
  const zipf: number[] = [];
  let total = 0;
  for (let g = 1; g <= GROUPS; g++) { total += 1 / g; zipf.push(total); }
  // Mean service per request ≈ decode time (+ prefill); capacity = PODS × SLOTS / service.
  const serviceMs = OUTPUT_TOKENS * DECODE_MS_PER_TOKEN + (PREFIX_TOKENS + SUFFIX_TOKENS) * PREFILL_MS_PER_TOKEN * 0.5;
  const ratePerMs = (LOAD * PODS * SLOTS) / serviceMs;
  const out: Req[] = [];
  let t = 0;
  for (let i = 0; i < REQUESTS; i++) {
    t += -Math.log(1 - r()) / ratePerMs;
    const x = r() * total;
    let g = 0;
    while (zipf[g] < x) g++;
    out.push({ id: i, at: t, group: g, start: 0, ttft: 0, hit: false });
  }
  return out;
}

class Pod {
  running = 0;
  readonly waiting: Req[] = [];
  readonly cache: number[] = [];
  ttftSum = 0;
  ttftCount = 0;
  readonly state: EndpointState;
  constructor(i: number) {
    this.state = { name: `pod-${i}`, key: `pod-${i}`, inflight: 0, load: new PodLoad(), health: new PodHealth() } as unknown as EndpointState;
  }
}

/** Min-heap of [time, seq, action]. */
class Events {
  private h: [number, number, () => void][] = [];
  private seq = 0;
  push(t: number, f: () => void): void {
    const h = this.h;
    h.push([t, this.seq++, f]);
    let i = h.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (less(h[p], h[i])) break;
      [h[p], h[i]] = [h[i], h[p]];
      i = p;
    }
  }
  pop(): [number, () => void] | null {
    const h = this.h;
    if (h.length === 0) return null;
    const top = h[0];
    const last = h.pop()!;
    if (h.length > 0) {
      h[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < h.length && less(h[l], h[m])) m = l;
        if (r < h.length && less(h[r], h[m])) m = r;
        if (m === i) break;
        [h[m], h[i]] = [h[i], h[m]];
        i = m;
      }
    }
    return [top[0], top[2]];
  }
  get size(): number { return this.h.length; }
}
function less(a: [number, number, unknown], b: [number, number, unknown]): boolean {
  return a[0] < b[0] || (a[0] === b[0] && a[1] < b[1]);
}

type Choose = (pods: Pod[], req: Req, now: number) => Pod;

function simulate(name: string, choose: Choose, after?: (pod: Pod, req: Req) => void): { name: string; mean: number; p99: number; hit: number } {
  const reqs = makeRequests();
  const pods = Array.from({ length: PODS }, (_, i) => new Pod(i));
  const ev = new Events();
  let now = 0;
  const start = (pod: Pod, req: Req): void => {
    pod.running++;
    req.start = now;
    const ci = pod.cache.indexOf(req.group);
    req.hit = ci !== -1;
    if (ci !== -1) pod.cache.splice(ci, 1);
    pod.cache.push(req.group);
    if (pod.cache.length > CACHE_GROUPS) pod.cache.shift();
    const prefill = ((req.hit ? 0 : PREFIX_TOKENS) + SUFFIX_TOKENS) * PREFILL_MS_PER_TOKEN;
    req.ttft = now + prefill - req.at;
    pod.ttftSum += req.ttft;
    pod.ttftCount++;
    ev.push(now + prefill, () => after?.(pod, req));
    ev.push(now + prefill + OUTPUT_TOKENS * DECODE_MS_PER_TOKEN, () => {
      pod.running--;
      pod.state.inflight--;
      const next = pod.waiting.shift();
      if (next !== undefined) start(pod, next);
    });
  };
  for (const req of reqs) {
    ev.push(req.at, () => {
      const pod = choose(pods, req, now);
      pod.state.inflight++;
      if (pod.running < SLOTS) start(pod, req);
      else pod.waiting.push(req);
    });
  }
  // Scrapes: waiting, running, TTFT mean over the interval (as pod-metrics-scraper.ts shares them).
  const scrape = (): void => {
    for (const p of pods) {
      const l = p.state.load;
      l.waiting = p.waiting.length;
      l.running = p.running;
      if (p.ttftCount > 0) l.ttftMs = p.ttftSum / p.ttftCount;
      p.ttftSum = 0;
      p.ttftCount = 0;
      l.scrapedUntil = now + 3 * SCRAPE_MS;
    }
    if (ev.size > 0) ev.push(now + SCRAPE_MS, scrape);
  };
  ev.push(0, scrape);
  for (let e = ev.pop(); e !== null; e = ev.pop()) {
    now = e[0];
    e[1]();
  }
  const ttfts = reqs.map((r) => r.ttft).sort((a, b) => a - b);
  return {
    name,
    mean: ttfts.reduce((s, x) => s + x, 0) / ttfts.length,
    p99: percentile(ttfts, 0.99),
    hit: reqs.filter((r) => r.hit).length / reqs.length,
  };
}

const groupText = Array.from({ length: GROUPS }, (_, g) => `System prompt ${g}: `.padEnd(PREFIX_TOKENS * CHARS_PER_TOKEN, `rule ${g}; `));
const random = mulberry32(7);

const results = [
  simulate('random', (pods) => pods[Math.floor(random() * pods.length)]),
  simulate('least-in-flight', (pods) => {
    const states = pods.map((p) => p.state);
    const s = pickLeastInflight(states, null, random, 0)!;
    return pods[states.indexOf(s)];
  }),
  (() => {
    const config = process.env.SIM_SCHEDULER_CONFIG ? parseSchedulerConfig(process.env.SIM_SCHEDULER_CONFIG, 'SIM_SCHEDULER_CONFIG') : DEFAULT_SCHEDULER_CONFIG;
    const scorer = new PodScorer(config);
    const store = new PrefixStore(DEFAULT_SCHEDULER_CONFIG.prefixCapacity);
    const hashes = new Uint32Array(DEFAULT_SCHEDULER_CONFIG.prefixMaxBlocks);
    let states: EndpointState[] = [];
    let byState = new Map<EndpointState, Pod>();
    return simulate('default scorers (least-request + prefix-cache + least-latency)', (pods, req, now) => {
      if (states.length === 0) {
        states = pods.map((p) => p.state);
        byState = new Map(pods.map((p) => [p.state, p]));
      }
      const prompt = textPrompt(`${groupText[req.group]} user question ${req.id}`.padEnd((PREFIX_TOKENS + SUFFIX_TOKENS) * CHARS_PER_TOKEN, '?'));
      const n = prefixBlockHashes(prompt, DEFAULT_SCHEDULER_CONFIG.prefixBlockChars, hashes);
      const s = scorer.pick(states, null, now, store, hashes, n, random)!;
      store.record(hashes, n, s);
      return byState.get(s)!;
    }, (pod, req) => {
      const l = pod.state.load;
      l.observedMs = l.observedMs !== l.observedMs ? req.ttft : l.observedMs + 0.2 * (req.ttft - l.observedMs);
    });
  })(),
];

console.log(`${REQUESTS} requests, ${PODS} pods × ${SLOTS} slots, load ${LOAD}, ${GROUPS} shared prefixes (Zipf), pod cache ${CACHE_GROUPS} prefixes`);
console.log('| scheduler | TTFT mean (ms) | TTFT p99 (ms) | prefix cache hits |');
console.log('|---|---:|---:|---:|');
for (const r of results) console.log(`| ${r.name} | ${r.mean.toFixed(0)} | ${r.p99.toFixed(0)} | ${(r.hit * 100).toFixed(1)}% |`);
