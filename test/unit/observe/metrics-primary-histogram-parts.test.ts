/**
 * The primary keeps a histogram family as the worker sent it, its parts (a series per entry), from
 * the answer to the text: through the epochs of backend pods, the stand-ins of late workers, what
 * exited workers counted and the sum. Its text must be the one the same answers give with their
 * histograms as prom-client's JSON (a value per line), the form the primary took them in before.
 * Two primaries are fed the same random history (traffic, configurations that remove and re-add
 * pods, applied by the workers one after the other, workers that are late, exit and are replaced),
 * one with the parts, one with the JSON, and every scrape's text is compared.
 */
import { EventEmitter } from 'node:events';
import type { Worker } from 'node:cluster';
import { describe, expect, it } from 'vitest';
import { attachMetricsPrimary, MSG_COLLECT, MSG_DATA, MSG_GET, MSG_HELLO, MSG_TEXT, type SentMetric } from '../../../src/observe/metrics-cluster.js';
import { histogramJson, type HistogramParts, type MetricJson } from '../../../src/observe/metrics-series.js';
import { nextPodEpochs, type PodEpochs } from '../../../src/observe/backend-pod-epochs.js';
import { mulberry32 } from '../../helpers/mulberry32.js';
import { FakeWorker } from '../../helpers/fake-metrics-worker.js';

const PODS = ['pod-a', 'pod-b', 'pod-c', 'pod-d'];
const ROUTES = ['ns/r1', 'ns/r2'];
const LE = ['0.01', '0.1', '1', '+Inf'];

/** A router worker's counts: by backend pod, a latency histogram by route and a counter; the configuration it applied. */
class WorkerCounts {
  readonly hist = new Map<string, { route: string; pod: string; counts: number[]; sum: number }>();
  readonly failures = new Map<string, number>();
  epochs: PodEpochs;

  constructor(epochs: PodEpochs) {
    this.epochs = epochs;
  }

  /** Applies a configuration: the series of a pod it no longer has, or has at a newer epoch, start again (backend-pod-series.ts). */
  apply(epochs: PodEpochs): void {
    for (const [key, s] of this.hist) if (epochs[s.pod] !== this.epochs[s.pod]) this.hist.delete(key);
    for (const pod of [...this.failures.keys()]) if (epochs[pod] !== this.epochs[pod]) this.failures.delete(pod);
    this.epochs = epochs;
  }

  traffic(rand: () => number): void {
    const pods = Object.keys(this.epochs);
    if (pods.length === 0) return;
    for (let i = 0; i < 1 + Math.floor(rand() * 6); i++) {
      const pod = pods[Math.floor(rand() * pods.length)];
      const route = ROUTES[Math.floor(rand() * ROUTES.length)];
      const key = `${route} ${pod}`;
      let s = this.hist.get(key);
      if (s === undefined) this.hist.set(key, (s = { route, pod, counts: LE.map(() => 0), sum: 0 }));
      const seconds = rand() * 1.5;
      s.counts[LE.findIndex((le) => le === '+Inf' || seconds <= Number(le))]++;
      s.sum += seconds;
      if (rand() < 0.3) this.failures.set(pod, (this.failures.get(pod) ?? 0) + 1);
    }
  }

  /** Its answer, the histogram as parts or as prom-client's JSON (through JSON, as IPC carries it). */
  answer(asParts: boolean): SentMetric[] {
    const parts: HistogramParts = {
      name: 'inference_router_upstream_seconds', help: 'h', type: 'histogram', aggregator: 'sum', le: LE,
      series: [...this.hist.values()].map((s) => ({ labels: { route: s.route, backend_pod: s.pod }, counts: [...s.counts], sum: s.sum, count: s.counts.reduce((a, b) => a + b, 0) })),
    };
    const counter: MetricJson = {
      name: 'inference_router_upstream_connect_failures_total', help: 'h', type: 'counter', aggregator: 'sum',
      values: [...this.failures].map(([pod, value]) => ({ labels: { backend_pod: pod }, value })),
    };
    const gauge: MetricJson = { name: 'inference_router_in_flight', help: 'h', type: 'gauge', aggregator: 'sum', values: [{ labels: {}, value: this.hist.size }] };
    return JSON.parse(JSON.stringify([asParts ? parts : histogramJson(parts), counter, gauge]));
  }
}

/** A primary fed one form; scrape() asks through its first live worker. */
function primary(asParts: boolean, pods: () => ReadonlySet<string>) {
  const cluster = new EventEmitter();
  const detach = attachMetricsPrimary(cluster as never, { timeoutMs: 5, backendPods: pods });
  const emit = (w: FakeWorker, m: unknown) => cluster.emit('message', w as unknown as Worker, m);
  let id = 0;
  return {
    detach,
    hello(w: FakeWorker): void {
      emit(w, { t: MSG_HELLO });
    },
    exit(w: FakeWorker): void {
      cluster.emit('exit', w as unknown as Worker);
    },
    async scrape(workers: FakeWorker[], counts: WorkerCounts[], late: boolean[]): Promise<string> {
      const a = workers[0];
      a.sent = [];
      const mine = ++id;
      emit(a, { t: MSG_GET, id: mine });
      const collect = a.sent.find((m) => m.t === MSG_COLLECT).id;
      workers.forEach((w, i) => {
        if (!late[i]) emit(w, { t: MSG_DATA, id: collect, metrics: counts[i].answer(asParts), podEpochs: counts[i].epochs });
      });
      for (let i = 0; i < 2000; i++) {
        const m = a.sent.find((s) => s.t === MSG_TEXT && s.id === mine);
        if (m) return m.text;
        await new Promise((r) => setTimeout(r, 1));
      }
      throw new Error('no metrics:text answer');
    },
  };
}

describe('the primary with histogram families as their parts', () => {
  it('gives every scrape the text it gives with the same histograms as prom-client\'s JSON', async () => {
    for (const seed of [1, 2, 3, 4, 5, 6]) {
      const rand = mulberry32(seed);
      let version = 1;
      let configured = new Set(PODS.slice(0, 3));
      let latest = nextPodEpochs(null, configured, version);
      const pods = (): ReadonlySet<string> => configured;
      const [withParts, withJson] = [primary(true, pods), primary(false, pods)];
      // The same fake worker objects stand for one worker in both primaries (each primary keys its own state by them).
      let workers = Array.from({ length: 3 }, () => new FakeWorker());
      let counts = workers.map(() => new WorkerCounts(latest));
      for (const w of workers) for (const p of [withParts, withJson]) p.hello(w);
      let histogramLines = 0;
      for (let step = 0; step < 120; step++) {
        const r = rand();
        if (r < 0.35) counts[Math.floor(rand() * counts.length)].traffic(rand);
        else if (r < 0.45) {
          // A configuration that removes a pod or adds one (a removed pod re-added gets a new epoch).
          const pod = PODS[Math.floor(rand() * PODS.length)];
          configured = new Set(configured);
          if (configured.has(pod) && configured.size > 1) configured.delete(pod);
          else configured.add(pod);
          latest = nextPodEpochs(latest, configured, ++version);
        } else if (r < 0.6) counts[Math.floor(rand() * counts.length)].apply(latest);
        else if (r < 0.66) {
          // A worker exits (its last answer is kept) and a new one takes its place.
          const i = 1 + Math.floor(rand() * (workers.length - 1));
          for (const p of [withParts, withJson]) p.exit(workers[i]);
          workers = workers.map((w, k) => (k === i ? new FakeWorker() : w));
          counts = counts.map((c, k) => (k === i ? new WorkerCounts(latest) : c));
          for (const p of [withParts, withJson]) p.hello(workers[i]);
        } else {
          const late = workers.map((_, i) => i > 0 && rand() < 0.2);
          const [a, b] = [await withParts.scrape(workers, counts, late), await withJson.scrape(workers, counts, late)];
          expect(a, `seed ${seed}, step ${step}`).toBe(b);
          histogramLines = Math.max(histogramLines, a.split('\n').filter((l) => l.startsWith('inference_router_upstream_seconds_bucket')).length);
        }
      }
      expect(histogramLines).toBeGreaterThan(10);
      withParts.detach();
      withJson.detach();
    }
  });
});
