/**
 * A worker whose registry could not be read answers the collect with an error (and no metrics, no
 * pod epochs). Its counters must count as those of a worker that did not answer in time: its last
 * answer stands in. Taken as an answer, it would drop its counters of that scrape (a counter reset
 * to Prometheus), and its backend pods' counts, seen as "moved on" from their epoch, would be kept
 * with the exited workers' and then counted a second time by its next answer.
 */
import { EventEmitter } from 'node:events';
import type { Worker } from 'node:cluster';
import { describe, expect, it } from 'vitest';
import { attachMetricsPrimary, MSG_COLLECT, MSG_DATA, MSG_GET, MSG_HELLO, MSG_TEXT } from '../../../src/observe/metrics-cluster.js';
import type { MetricJson } from '../../../src/observe/metrics-series.js';
import { FakeWorker } from '../../helpers/fake-metrics-worker.js';

/** Requests (a series of no pod) and pod-x's connect failures of one worker. */
function answer(requests: number, podX: number): MetricJson[] {
  return [
    { name: 'inference_router_requests_total', help: 'h', type: 'counter', aggregator: 'sum', values: [{ labels: { route: 'r' }, value: requests }] },
    { name: 'inference_router_upstream_connect_failures_total', help: 'h', type: 'counter', aggregator: 'sum', values: [{ labels: { backend_pod: 'pod-x', pod: 'pod-x' }, value: podX }] },
  ];
}

async function textOf(w: FakeWorker, id: number): Promise<string> {
  for (let i = 0; i < 500; i++) {
    const m = w.sent.find((s) => s.t === MSG_TEXT && s.id === id);
    if (m) return m.text;
    await new Promise((r) => setTimeout(r, 2));
  }
  throw new Error('no metrics:text answer');
}

function value(t: string, prefix: string): number | undefined {
  const line = t.split('\n').find((l) => l.startsWith(prefix));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1));
}

const podX = (t: string) => value(t, 'inference_router_upstream_connect_failures_total{backend_pod="pod-x"');
const requests = (t: string) => value(t, 'inference_router_requests_total{route="r"}');
const missing = (t: string) => value(t, 'inference_router_metrics_scrape_workers{state="missing"}');

describe('attachMetricsPrimary: a worker whose registry could not be read', () => {
  it('counts with its last answer (missing), and its next answer is not added to what it counted before', async () => {
    const cluster = new EventEmitter();
    const detach = attachMetricsPrimary(cluster as never, { timeoutMs: 60_000, backendPods: () => new Set(['pod-x']) });
    const [a, b] = [new FakeWorker(), new FakeWorker()];
    const emit = (w: FakeWorker, m: unknown) => cluster.emit('message', w as unknown as Worker, m);
    for (const w of [a, b]) emit(w, { t: MSG_HELLO });
    let id = 0;
    const epochs = { 'pod-x': 1 };
    const scrape = async (bAnswer: (collect: number) => unknown, aCounts: [number, number]): Promise<string> => {
      a.sent = [];
      emit(a, { t: MSG_GET, id: ++id });
      const collect = a.sent.find((m) => m.t === MSG_COLLECT).id;
      emit(a, { t: MSG_DATA, id: collect, metrics: answer(...aCounts), podEpochs: epochs });
      emit(b, bAnswer(collect));
      return textOf(a, id);
    };
    const first = await scrape((collect) => ({ t: MSG_DATA, id: collect, metrics: answer(10, 3), podEpochs: epochs }), [1, 2]);
    expect([requests(first), podX(first)]).toEqual([11, 5]);
    // What WorkerMetricsLink sends when getMetricsAsJSON() fails.
    const failed = await scrape((collect) => ({ t: MSG_DATA, id: collect, metrics: [], error: 'collect failed' }), [1, 2]);
    expect([requests(failed), podX(failed), missing(failed)]).toEqual([11, 5, 1]);
    const next = await scrape((collect) => ({ t: MSG_DATA, id: collect, metrics: answer(12, 4), podEpochs: epochs }), [1, 2]);
    expect([requests(next), podX(next), missing(next)]).toEqual([13, 6, 0]);
    detach();
  });
});
