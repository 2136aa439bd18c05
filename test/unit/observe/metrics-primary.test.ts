import { EventEmitter } from 'node:events';
import type { Worker } from 'node:cluster';
import { describe, expect, it } from 'vitest';
import { attachMetricsPrimary, MSG_COLLECT, MSG_DATA, MSG_GET, MSG_HELLO, MSG_TEXT } from '../../../src/observe/metrics-cluster.js';
import type { MetricJson } from '../../../src/observe/metrics-series.js';
import { FakeWorker } from '../../helpers/fake-metrics-worker.js';

const counter = (value: number): MetricJson[] => [{
  name: 'x_total', help: 'h', type: 'counter', aggregator: 'sum', values: [{ labels: { a: '1' }, value }],
}];

async function textOf(w: FakeWorker, id: number): Promise<any> {
  for (let i = 0; i < 500; i++) {
    const m = w.sent.find((s) => s.t === MSG_TEXT && s.id === id);
    if (m) return m;
    await new Promise((r) => setTimeout(r, 2));
  }
  throw new Error('no metrics:text answer');
}

/**
 * A scrape asked by worker `a`: the workers in `answers` answer the collect with their metrics,
 * `exitAfter` (when given) exits then; the text `a` is answered.
 */
function scraper(cluster: EventEmitter, a: FakeWorker) {
  const emit = (w: FakeWorker, m: unknown) => cluster.emit('message', w as unknown as Worker, m);
  return async (id: number, answers: [FakeWorker, MetricJson[]][], exitAfter: FakeWorker | null = null): Promise<string> => {
    a.sent = [];
    emit(a, { t: MSG_GET, id });
    const collect = a.sent.find((m) => m.t === MSG_COLLECT).id;
    for (const [w, metrics] of answers) emit(w, { t: MSG_DATA, id: collect, metrics });
    if (exitAfter !== null) cluster.emit('exit', exitAfter as unknown as Worker);
    return (await textOf(a, id)).text;
  };
}

/** A connect-failures counter answer of one worker, by backend pod. */
function failures(byPod: Record<string, number>): MetricJson[] {
  return [{
    name: 'inference_router_upstream_connect_failures_total', help: 'h', type: 'counter', aggregator: 'sum',
    values: Object.entries(byPod).map(([pod, value]) => ({ labels: { backend_pod: pod, pod }, value })),
  }];
}

/** pod-x's connect failures in an exposition text; undefined when it has no series. */
function x(t: string): number | undefined {
  const line = t.split('\n').find((l) => l.startsWith('inference_router_upstream_connect_failures_total{backend_pod="pod-x"'));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1));
}

describe('attachMetricsPrimary', () => {
  it('adds the primary\'s own series (ownSeries, read at each scrape) once, whatever the number of workers', async () => {
    const cluster = new EventEmitter();
    let failed = 1;
    const own = (): MetricJson[] => [{ name: 'own_failures_total', help: 'h', type: 'counter', aggregator: 'sum', values: [{ labels: { resource: 'pods' }, value: failed }] }];
    const detach = attachMetricsPrimary(cluster as never, { timeoutMs: 60_000, ownSeries: own });
    const [a, b] = [new FakeWorker(), new FakeWorker()];
    for (const w of [a, b]) cluster.emit('message', w as unknown as Worker, { t: MSG_HELLO });
    const scrape = scraper(cluster, a);
    const first = await scrape(1, [[a, counter(1)], [b, counter(2)]]);
    expect(first).toContain('own_failures_total{resource="pods"} 1\n');
    expect(first).toContain('x_total{a="1"} 3\n');
    failed = 4;
    expect(await scrape(2, [[a, counter(1)], [b, counter(2)]])).toContain('own_failures_total{resource="pods"} 4\n');
    detach();
  });

  it('asks only workers that said hello, sums their answers, answers the asking worker', async () => {
    const cluster = new EventEmitter();
    const detach = attachMetricsPrimary(cluster as never, { timeoutMs: 60_000 });
    const [a, b, silent] = [new FakeWorker(), new FakeWorker(), new FakeWorker()];
    const emit = (w: FakeWorker, m: unknown) => cluster.emit('message', w as unknown as Worker, m);
    emit(a, { t: MSG_HELLO });
    emit(b, { t: MSG_HELLO });
    // Other modules' messages and prom-client's are ignored.
    emit(a, { t: 'rl:q', a: [] });
    emit(a, { type: 'prom-client:getMetricsRes', requestId: 0, metrics: [] });
    emit(a, { t: MSG_GET, id: 7 });
    const collectA = a.sent.find((m) => m.t === MSG_COLLECT);
    const collectB = b.sent.find((m) => m.t === MSG_COLLECT);
    expect(collectA).toBeDefined();
    expect(collectB?.id).toBe(collectA.id);
    expect(silent.sent).toEqual([]);
    emit(a, { t: MSG_DATA, id: collectA.id, metrics: counter(2) });
    emit(a, { t: MSG_DATA, id: collectA.id, metrics: counter(100) }); // a duplicate answer is ignored
    emit(b, { t: MSG_DATA, id: collectA.id, metrics: counter(3) });
    const answer = await textOf(a, 7);
    expect(answer.text).toMatch(/^x_total\{a="1"\} 5$/m);
    expect(answer.text).toMatch(/^inference_router_metrics_scrape_workers\{state="answered"\} 2$/m);
    expect(b.sent.some((m) => m.t === MSG_TEXT)).toBe(false);
    detach();
  });

  it('answers with what arrived after the timeout, and settles at once when a worker exits', async () => {
    const cluster = new EventEmitter();
    const detach = attachMetricsPrimary(cluster as never, { timeoutMs: 30 });
    const [a, b] = [new FakeWorker(), new FakeWorker()];
    const emit = (w: FakeWorker, m: unknown) => cluster.emit('message', w as unknown as Worker, m);
    emit(a, { t: MSG_HELLO });
    emit(b, { t: MSG_HELLO });

    emit(a, { t: MSG_GET, id: 1 });
    let id = a.sent.find((m) => m.t === MSG_COLLECT).id;
    emit(a, { t: MSG_DATA, id, metrics: counter(4) });
    const late = await textOf(a, 1); // b never answers
    expect(late.text).toMatch(/^x_total\{a="1"\} 4$/m);
    expect(late.text).toMatch(/^inference_router_metrics_scrape_workers\{state="missing"\} 1$/m);

    a.sent = [];
    emit(a, { t: MSG_GET, id: 2 });
    id = a.sent.find((m) => m.t === MSG_COLLECT).id;
    emit(a, { t: MSG_DATA, id, metrics: counter(6) });
    cluster.emit('exit', b as unknown as Worker);
    const answer = await textOf(a, 2);
    // missing 0: the exit settled b's share (the timeout would have counted it missing).
    expect(answer.text).toMatch(/^inference_router_metrics_scrape_workers\{state="missing"\} 0$/m);
    expect(answer.text).toMatch(/^x_total\{a="1"\} 6$/m);
    detach();
  });

  it('counters never go down: a worker missing a scrape counts with its last answer, one that exits keeps it in every later sum, once', async () => {
    const cluster = new EventEmitter();
    const detach = attachMetricsPrimary(cluster as never, { timeoutMs: 30 });
    const [a, b] = [new FakeWorker(), new FakeWorker()];
    const emit = (w: FakeWorker, m: unknown) => cluster.emit('message', w as unknown as Worker, m);
    const gauge = (value: number): MetricJson => ({ name: 'g', help: 'h', type: 'gauge', aggregator: 'sum', values: [{ labels: {}, value }] });
    const scrape = scraper(cluster, a);
    emit(a, { t: MSG_HELLO });
    emit(b, { t: MSG_HELLO });

    expect(await scrape(1, [[a, [...counter(4), gauge(1)]], [b, [...counter(10), gauge(2)]]])).toMatch(/^x_total\{a="1"\} 14$/m);
    // b misses the next scrape: its last counters stand in, its gauge is left out.
    const slow = await scrape(2, [[a, [...counter(5), gauge(1)]]]);
    expect(slow).toMatch(/^x_total\{a="1"\} 15$/m);
    expect(slow).toMatch(/^g 1$/m);
    expect(slow).toMatch(/^inference_router_metrics_scrape_workers\{state="missing"\} 1$/m);
    // b answers, then exits before the scrape is answered: counted once.
    expect(await scrape(3, [[b, [...counter(11), gauge(2)]]], b)).toMatch(/^x_total\{a="1"\} 16$/m); // a missing: its last 5
    // Later scrapes keep b's last counters (its gauge goes); its replacement counts from 0.
    const c = new FakeWorker();
    emit(c, { t: MSG_HELLO });
    const after = await scrape(4, [[a, [...counter(6), gauge(1)]], [c, [...counter(1), gauge(3)]]]);
    expect(after).toMatch(/^x_total\{a="1"\} 18$/m);
    expect(after).toMatch(/^g 4$/m);
    detach();
  });

  it('a worker whose channel closed before the primary saw its exit keeps its counters in the sum', async () => {
    const cluster = new EventEmitter();
    const detach = attachMetricsPrimary(cluster as never, { timeoutMs: 60_000 });
    const [a, b, c] = [new FakeWorker(), new FakeWorker(), new FakeWorker()];
    const emit = (w: FakeWorker, m: unknown) => cluster.emit('message', w as unknown as Worker, m);
    for (const w of [a, b, c]) emit(w, { t: MSG_HELLO });
    a.sent = [];
    emit(a, { t: MSG_GET, id: 1 });
    const id = a.sent.find((m) => m.t === MSG_COLLECT).id;
    emit(a, { t: MSG_DATA, id, metrics: counter(1) });
    emit(b, { t: MSG_DATA, id, metrics: counter(10) });
    emit(c, { t: MSG_DATA, id, metrics: counter(100) });
    expect((await textOf(a, 1)).text).toMatch(/^x_total\{a="1"\} 111$/m);
    // b died: its IPC channel is closed, its exit not yet seen. c's send fails.
    b.connected = false;
    c.send = (m: unknown, _h: unknown, cb?: (err: Error | null) => void): boolean => {
      cb?.(new Error('channel closed'));
      return false;
    };
    a.sent = [];
    emit(a, { t: MSG_GET, id: 2 });
    const id2 = a.sent.find((m) => m.t === MSG_COLLECT).id;
    emit(a, { t: MSG_DATA, id: id2, metrics: counter(2) });
    const t = (await textOf(a, 2)).text;
    expect(t).toMatch(/^x_total\{a="1"\} 112$/m);
    expect(t).toMatch(/^inference_router_metrics_scrape_workers\{state="answered"\} 1$/m);
    // Then the exits arrive: still counted once.
    cluster.emit('exit', b as unknown as Worker);
    cluster.emit('exit', c as unknown as Worker);
    a.sent = [];
    emit(a, { t: MSG_GET, id: 3 });
    const id3 = a.sent.find((m) => m.t === MSG_COLLECT).id;
    emit(a, { t: MSG_DATA, id: id3, metrics: counter(3) });
    expect((await textOf(a, 3)).text).toMatch(/^x_total\{a="1"\} 113$/m);
    detach();
  });

  it('the counters an exited worker kept for a backend pod go once the pod left the configuration and no live worker reports it', async () => {
    const cluster = new EventEmitter();
    let pods = new Set(['pod-a', 'pod-x']);
    const detach = attachMetricsPrimary(cluster as never, { timeoutMs: 60_000, backendPods: () => pods });
    const [a, b] = [new FakeWorker(), new FakeWorker()];
    const emit = (w: FakeWorker, m: unknown) => cluster.emit('message', w as unknown as Worker, m);
    const scrape = scraper(cluster, a);
    emit(a, { t: MSG_HELLO });
    emit(b, { t: MSG_HELLO });
    expect(x(await scrape(1, [[a, failures({ 'pod-a': 1, 'pod-x': 1 })], [b, failures({ 'pod-x': 3 })]], b))).toBe(4);
    // b exited: its 3 are kept while pod-x is configured.
    expect(x(await scrape(2, [[a, failures({ 'pod-a': 1, 'pod-x': 2 })]]))).toBe(5);
    // pod-x leaves the configuration; a has not applied it yet and still reports pod-x: the sum must not drop.
    pods = new Set(['pod-a']);
    expect(x(await scrape(3, [[a, failures({ 'pod-a': 1, 'pod-x': 2 })]]))).toBe(5);
    // a applied it: pod-x's series is gone, b's retained part with it, and it does not come back.
    expect(x(await scrape(4, [[a, failures({ 'pod-a': 2 })]]))).toBeUndefined();
    const later = await scrape(5, [[a, failures({ 'pod-a': 2 })]]);
    expect(x(later)).toBeUndefined();
    expect(later).toMatch(/^inference_router_upstream_connect_failures_total\{backend_pod="pod-a",pod="pod-a"\} 2$/m);
    detach();
  });

  it('a backend pod that left: a late worker\'s last answer does not keep part of its sum (a drop Prometheus reads as a reset)', async () => {
    const cluster = new EventEmitter();
    let pods = new Set(['pod-a', 'pod-x']);
    const detach = attachMetricsPrimary(cluster as never, { timeoutMs: 20, backendPods: () => pods });
    const [a, b] = [new FakeWorker(), new FakeWorker()];
    const emit = (w: FakeWorker, m: unknown) => cluster.emit('message', w as unknown as Worker, m);
    const scrape = scraper(cluster, a);
    emit(a, { t: MSG_HELLO });
    emit(b, { t: MSG_HELLO });
    expect(x(await scrape(1, [[a, failures({ 'pod-a': 1, 'pod-x': 30 })], [b, failures({ 'pod-x': 50 })]]))).toBe(80);
    // pod-x leaves; a applied it and answers without it, b is late: its last answer stands in.
    // Its 50 alone would read as a counter reset (80 -> 50, rate() counting 50 new failures).
    pods = new Set(['pod-a']);
    const after = await scrape(2, [[a, failures({ 'pod-a': 1 })]]);
    expect(x(after)).toBeUndefined();
    expect(after).toMatch(/^inference_router_upstream_connect_failures_total\{backend_pod="pod-a",pod="pod-a"\} 1$/m);
    detach();
  });
});
