/**
 * Shared passive health across processes, with the real primary hub, the real worker share and
 * the real worker scheduler: messages are handed over as the cluster IPC channel delivers them
 * (in order on each channel, but a worker's report and the primary's messages cross in flight).
 */
import { describe, expect, it } from 'vitest';
import { OutlierDetector } from '../../../src/pick/outlier-detector.js';
import { PodHealthHub } from '../../../src/pick/pod-health-hub.js';
import { PodHealthShare, type EjectionShare, type HealthReport } from '../../../src/pick/pod-health-share.js';
import { Scheduler } from '../../../src/pick/scheduler.js';
import { DEFAULT_SCHEDULER_CONFIG } from '../../../src/pick/scheduler-config.js';
import { EndpointState } from '../../../src/upstream/endpoint-registry.js';

const OUTLIER = { consecutiveFailures: 3, consecutive5xx: 3, baseEjectionMs: 1_000, maxEjectionMs: 8_000 };

/** The primary's hub and one worker (id 1): its scheduler and share over one pod, on one clock. */
function instance() {
  const clock = { now: 10_000 };
  const hub = new PodHealthHub(OUTLIER, () => clock.now, () => {});
  const pod = new EndpointState('pod-a', '127.0.0.1', 1, { connections: 1 });
  /** Reports the worker sent, not yet read by the primary. */
  const toPrimary: HealthReport[] = [];
  const share = new PodHealthShare(() => [pod], () => clock.now, (m) => toPrimary.push(m), 1, () => {});
  const scheduler = new Scheduler({
    settings: { outlier: OUTLIER, podMetricsIntervalMs: 1_000, config: DEFAULT_SCHEDULER_CONFIG },
    clock: () => clock.now,
    metrics: null,
    log: () => {},
    news: () => share.soon(),
  });
  /** Another worker (id 2) reports `n` failures of the pod; the primary's answer. */
  const otherFails = (n: number): EjectionShare | null => hub.report(2, [[pod.key, 'pod-a', 0, n, 0, 0]]);
  /** The primary reads what the worker sent; the ejections and returns it shares. */
  const primaryReads = (): (EjectionShare | null)[] => toPrimary.splice(0).map((m) => hub.report(1, m.outcomes));
  const ejected = (): boolean => OutlierDetector.ejected(pod, clock.now);
  const close = (): Promise<void> => { pod.pool.close(); return Promise.resolve(); };
  return { clock, hub, pod, share, scheduler, toPrimary, otherFails, primaryReads, ejected, close };
}

const turn = (): Promise<void> => new Promise((r) => setImmediate(r));

describe('shared passive health: a worker never applies an older state over what it knows', () => {
  it('answers this worker had not reported when it heard of an ejection (to requests sent before) do not end it at the primary', async () => {
    const i = instance();
    // Other workers' failures eject the pod at 10000 ...
    const ejection = i.otherFails(3)!;
    expect(ejection.pods[0]![2]).toBe(1_000);
    // ... while this worker, not knowing yet, sent a request at 10001, answered at 10005: a clean
    // pod in its view, so the answer waits for the next interval's report.
    i.clock.now = 10_005;
    i.scheduler.answered(i.pod, 4, 200, false, 10_001);
    // The ejection arrives: answers to requests this worker sent before do not end it here ...
    i.clock.now = 10_006;
    i.share.apply(ejection);
    expect(i.ejected()).toBe(true);
    // ... nor at the primary, when the interval's report goes out.
    i.clock.now = 10_500;
    i.share.flush();
    for (const share of i.primaryReads()) expect(share).toBeNull();
    expect(i.hub.ejected().map((r) => r[0])).toEqual([i.pod.key]);
    await i.close();
  });

  it('the periodic repeat of an ejection, sent before the primary read this worker\'s answer that ended it, does not eject the pod again', async () => {
    const i = instance();
    i.share.apply(i.otherFails(3)!);
    expect(i.ejected()).toBe(true);
    // Near the end of the ejection the primary repeats it (10 ms left) to every worker ...
    i.clock.now = 10_990;
    const repeat = i.hub.ejected();
    expect(repeat.map((r) => r[2])).toEqual([10]);
    // ... while this worker's ejection ends, it tries the pod (sent at 11001) and has its answer.
    i.clock.now = 11_002;
    i.scheduler.answered(i.pod, 1, 200, false, 11_001);
    expect(i.ejected()).toBe(false);
    await turn();
    expect(i.toPrimary).toHaveLength(1); // the return, in flight to the primary
    // The repeat arrives: it is older than the answer.
    i.clock.now = 11_003;
    i.share.applyRows(repeat);
    expect(i.ejected()).toBe(false);
    // An answer to a request sent at 11002 still counts (the pod was not ejected again at 11003).
    expect(i.pod.health.ejections).toBe(0);
    const [back] = i.primaryReads();
    expect(back?.pods.map((r) => r[2])).toEqual([0]);
    await i.close();
  });

  it('a worker that set the pod aside on its own just before the primary did takes the primary\'s ejection as new: no answer the primary takes as old news puts the pod back', async () => {
    const i = instance();
    // This worker's own failures eject the pod at 10000 in this worker ...
    i.scheduler.connectFailed(i.pod);
    i.scheduler.connectFailed(i.pod);
    i.scheduler.connectFailed(i.pod);
    expect(i.ejected()).toBe(true);
    await turn();
    // ... and at 10002 in the primary, when it reads them.
    i.clock.now = 10_002;
    const [ejection] = i.primaryReads();
    expect(ejection?.pods[0]![2]).toBe(1_000);
    i.clock.now = 10_003;
    i.share.apply(ejection!);
    // A request sent at 10001 (every pod of its server set aside) is answered: before the primary's
    // ejection, so old news to the primary; to this worker as well, which keeps the pod aside
    // rather than putting it back until the primary's next periodic repeat.
    i.clock.now = 10_050;
    i.scheduler.answered(i.pod, 1, 200, false, 10_001);
    expect(i.ejected()).toBe(true);
    await turn();
    for (const share of i.primaryReads()) expect(share).toBeNull();
    expect(i.hub.ejected().map((r) => r[0])).toEqual([i.pod.key]);
    await i.close();
  });
});
