import { EventEmitter } from 'node:events';
import type { Worker } from 'node:cluster';
import { describe, expect, it } from 'vitest';
import { attachMetricsPrimary, MSG_COLLECT, MSG_DATA, MSG_GET, MSG_HELLO, MSG_TEXT } from '../../../src/observe/metrics-cluster.js';
import type { HistogramParts, MetricJson } from '../../../src/observe/metrics-series.js';
import { FakeWorker } from '../../helpers/fake-metrics-worker.js';

const gauge = (n: string): MetricJson => ({ name: n, help: 'h', type: 'gauge', aggregator: 'sum', values: [{ labels: {}, value: 1 }] });
const counter = (v: number): MetricJson => ({ name: 'c_total', help: 'h', type: 'counter', aggregator: 'sum', values: [{ labels: { route: 'r' }, value: v }] });
const hist = (n: number): HistogramParts => ({ name: 'h_seconds', help: 'h', type: 'histogram', aggregator: 'sum', le: ['1', '+Inf'], series: [{ labels: { route: 'r' }, counts: [n, 0], sum: n, count: n }] });
const answer = (v: number) => [gauge('g1'), gauge('g2'), gauge('g3'), counter(v), hist(v)];

/**
 * A worker that exits while a scrape it answered is being summed (in turns of the event loop):
 * its counts go to what the primary keeps of exited workers (metrics-retained.ts), which that sum
 * must not see, or they would be counted twice there and the next scrape would drop.
 */
describe('a worker exits while a finished scrape is being summed', () => {
  it('its counts are not summed twice', async () => {
    const cluster = new EventEmitter();
    const detach = attachMetricsPrimary(cluster as never, { timeoutMs: 50 });
    const emit = (w: FakeWorker, m: unknown) => cluster.emit('message', w as unknown as Worker, m);
    const [w0, w1, w2] = [new FakeWorker(), new FakeWorker(), new FakeWorker()];
    const values = new Map([[w0, 100], [w1, 10], [w2, 1]]);
    for (const w of [w0, w1, w2]) emit(w, { t: MSG_HELLO });
    let rid = 0;
    const scrape = async (asker: FakeWorker, live: FakeWorker[], after?: () => void): Promise<string> => {
      const mine = ++rid;
      asker.sent = [];
      emit(asker, { t: MSG_GET, id: mine });
      const collect = asker.sent.find((m) => m.t === MSG_COLLECT).id;
      for (const w of live) emit(w, { t: MSG_DATA, id: collect, metrics: JSON.parse(JSON.stringify(answer(values.get(w)!))) });
      after?.(); // the scrape is finished (all answered): its sum runs in turns from here
      for (let i = 0; i < 200; i++) {
        const m = asker.sent.find((s) => s.t === MSG_TEXT && s.id === mine);
        if (m) return m.text ?? m.error;
        await new Promise((r) => setTimeout(r, 1));
      }
      throw new Error('no text');
    };
    await scrape(w2, [w0, w1, w2]);
    cluster.emit('exit', w0 as unknown as Worker); // retired now has c_total and h_seconds
    const t1 = await scrape(w2, [w1, w2], () => cluster.emit('exit', w1 as unknown as Worker));
    const t2 = await scrape(w2, [w2]);
    const pick = (t: string) => t.split('\n').filter((l) => l.startsWith('c_total') || l.startsWith('h_seconds_count')).join(' | ');
    expect(pick(t1)).toBe('c_total{route="r"} 111 | h_seconds_count{route="r"} 111');
    expect(pick(t1)).toBe(pick(t2));
    detach();
  });
});
