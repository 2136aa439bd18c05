/**
 * The primary's sum of a backend pod's counters when the pod leaves the configuration and comes
 * back, and while workers apply a configuration one after the other. Each worker's answer says, by
 * pod, the version of the configuration the pod (last) entered as of the configuration the worker
 * applied (`podEpochs`): a pod removed and re-added has a new epoch, and every process counts it
 * from 0 again. Within one epoch the sum must not go down (Prometheus would read a counter reset
 * and count the whole rest again); at the switch to a new epoch it holds what was counted in that
 * epoch only, which is what Prometheus counts as the increase of a reset.
 */
import { EventEmitter } from 'node:events';
import type { Worker } from 'node:cluster';
import { describe, expect, it } from 'vitest';
import { attachMetricsPrimary, MSG_COLLECT, MSG_DATA, MSG_GET, MSG_HELLO, MSG_TEXT } from '../../../src/observe/metrics-cluster.js';
import type { MetricJson } from '../../../src/observe/metrics-series.js';
import { FakeWorker } from '../../helpers/fake-metrics-worker.js';

/** One worker's answer: connect failures by pod, and the epochs of the pods of the configuration it applied. */
interface Answer {
  failures: Record<string, number>;
  podEpochs: Record<string, number>;
}

function failures(byPod: Record<string, number>): MetricJson[] {
  return [{
    name: 'inference_router_upstream_connect_failures_total', help: 'h', type: 'counter', aggregator: 'sum',
    values: Object.entries(byPod).map(([pod, value]) => ({ labels: { backend_pod: pod, pod }, value })),
  }];
}

async function textOf(w: FakeWorker, id: number): Promise<string> {
  for (let i = 0; i < 500; i++) {
    const m = w.sent.find((s) => s.t === MSG_TEXT && s.id === id);
    if (m) return m.text;
    await new Promise((r) => setTimeout(r, 2));
  }
  throw new Error('no metrics:text answer');
}

/** pod-x's connect failures in an exposition text; undefined when it has no series. */
function x(t: string): number | undefined {
  const line = t.split('\n').find((l) => l.startsWith('inference_router_upstream_connect_failures_total{backend_pod="pod-x"'));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1));
}

/** A primary with workers `n`, all said hello; scrape() asks through the first. */
function primary(n: number, pods: () => ReadonlySet<string>, timeoutMs = 60_000) {
  const cluster = new EventEmitter();
  const detach = attachMetricsPrimary(cluster as never, { timeoutMs, backendPods: pods });
  const workers = Array.from({ length: n }, () => new FakeWorker());
  const emit = (w: FakeWorker, m: unknown) => cluster.emit('message', w as unknown as Worker, m);
  for (const w of workers) emit(w, { t: MSG_HELLO });
  let id = 0;
  const scrape = async (answers: [FakeWorker, Answer][], exitAfter: FakeWorker[] = []): Promise<string> => {
    const a = workers[0];
    a.sent = [];
    emit(a, { t: MSG_GET, id: ++id });
    const collect = a.sent.find((m) => m.t === MSG_COLLECT).id;
    for (const [w, ans] of answers) emit(w, { t: MSG_DATA, id: collect, metrics: failures(ans.failures), podEpochs: ans.podEpochs });
    for (const w of exitAfter) cluster.emit('exit', w as unknown as Worker);
    return textOf(a, id);
  };
  return { workers, scrape, detach };
}

const v1 = { 'pod-a': 1, 'pod-x': 1 };
/** pod-x removed by configuration 2, back in configuration 3. */
const v3 = { 'pod-a': 1, 'pod-x': 3 };

describe('attachMetricsPrimary: a backend pod removed and re-added (pod epochs)', () => {
  it('re-added between two scrapes: what an exited worker counted before goes, the sum restarts from what was counted since', async () => {
    const pods = new Set(['pod-a', 'pod-x']); // the same at both scrapes
    const { workers: [a, b], scrape, detach } = primary(2, () => pods);
    expect(x(await scrape([[a, { failures: { 'pod-x': 2 }, podEpochs: v1 }], [b, { failures: { 'pod-x': 3 }, podEpochs: v1 }]], [b]))).toBe(5);
    // a applied configurations 2 and 3: its pod-x counter was dropped and counted 1 since.
    // Kept, b's 3 (counted before the removal) would make it 4: a reset to Prometheus, 4 counted as new.
    expect(x(await scrape([[a, { failures: { 'pod-x': 1 }, podEpochs: v3 }]]))).toBe(1);
    expect(x(await scrape([[a, { failures: { 'pod-x': 4 }, podEpochs: v3 }]]))).toBe(4);
    detach();
  });

  it('re-added with no count since: the series goes rather than show what was counted before', async () => {
    const pods = new Set(['pod-a', 'pod-x']);
    const { workers: [a, b], scrape, detach } = primary(2, () => pods);
    expect(x(await scrape([[a, { failures: { 'pod-a': 1 }, podEpochs: v1 }], [b, { failures: { 'pod-x': 3 }, podEpochs: v1 }]], [b]))).toBe(3);
    expect(x(await scrape([[a, { failures: { 'pod-a': 1 }, podEpochs: v3 }]]))).toBeUndefined();
    detach();
  });

  it('while workers apply the re-add one after the other the sum does not go down, then restarts once from what was counted since', async () => {
    const pods = new Set(['pod-a', 'pod-x']);
    const { workers: [a, b, c], scrape, detach } = primary(3, () => pods);
    expect(x(await scrape([
      [a, { failures: { 'pod-x': 2 }, podEpochs: v1 }], [b, { failures: { 'pod-x': 3 }, podEpochs: v1 }], [c, { failures: { 'pod-x': 10 }, podEpochs: v1 }],
    ], [b]))).toBe(15);
    // a applied the re-add (1 since), c not yet: the old epoch is still counted by c, and a's 2 of it stay.
    expect(x(await scrape([[a, { failures: { 'pod-x': 1 }, podEpochs: v3 }], [c, { failures: { 'pod-x': 10 }, podEpochs: v1 }]]))).toBe(15);
    expect(x(await scrape([[a, { failures: { 'pod-x': 1 }, podEpochs: v3 }], [c, { failures: { 'pod-x': 12 }, podEpochs: v1 }]]))).toBe(17);
    // c applied it too: the new epoch's counts alone (a reset to Prometheus that counts 3).
    expect(x(await scrape([[a, { failures: { 'pod-x': 1 }, podEpochs: v3 }], [c, { failures: { 'pod-x': 2 }, podEpochs: v3 }]]))).toBe(3);
    expect(x(await scrape([[a, { failures: { 'pod-x': 5 }, podEpochs: v3 }], [c, { failures: { 'pod-x': 2 }, podEpochs: v3 }]]))).toBe(7);
    detach();
  });

  it('removed for good while workers apply it one after the other: the sum does not go down before it goes', async () => {
    let pods = new Set(['pod-a', 'pod-x']);
    const { workers: [a, b, c], scrape, detach } = primary(3, () => pods);
    expect(x(await scrape([
      [a, { failures: { 'pod-x': 2 }, podEpochs: v1 }], [b, { failures: { 'pod-x': 3 }, podEpochs: v1 }], [c, { failures: { 'pod-x': 10 }, podEpochs: v1 }],
    ], [b]))).toBe(15);
    pods = new Set(['pod-a']);
    // a applied the removal, c not yet.
    expect(x(await scrape([[a, { failures: { 'pod-a': 1 }, podEpochs: { 'pod-a': 1 } }], [c, { failures: { 'pod-x': 10 }, podEpochs: v1 }]]))).toBe(15);
    expect(x(await scrape([[a, { failures: { 'pod-a': 1 }, podEpochs: { 'pod-a': 1 } }], [c, { failures: { 'pod-a': 1 }, podEpochs: { 'pod-a': 1 } }]]))).toBeUndefined();
    expect(x(await scrape([[a, { failures: { 'pod-a': 1 }, podEpochs: { 'pod-a': 1 } }], [c, { failures: { 'pod-a': 1 }, podEpochs: { 'pod-a': 1 } }]]))).toBeUndefined();
    detach();
  });

  it('a late worker that counted the pod before it was re-added does not bring that count back, even when no worker answers', async () => {
    const pods = new Set(['pod-a', 'pod-x']);
    const { workers: [a, c], scrape, detach } = primary(2, () => pods, 20);
    expect(x(await scrape([[a, { failures: { 'pod-a': 1 }, podEpochs: v1 }], [c, { failures: { 'pod-x': 10 }, podEpochs: v1 }]]))).toBe(10);
    // a answers with the re-add applied (nothing counted since), c is late: its last answer is of the epoch before.
    expect(x(await scrape([[a, { failures: { 'pod-a': 1 }, podEpochs: v3 }]]))).toBeUndefined();
    // Then neither answers in time.
    expect(x(await scrape([]))).toBeUndefined();
    detach();
  });
});
