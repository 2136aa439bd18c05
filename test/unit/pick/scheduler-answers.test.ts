import { Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import { SchedulerMetrics } from '../../../src/observe/scheduler-metrics.js';
import { OutlierDetector } from '../../../src/pick/outlier-detector.js';
import { Scheduler } from '../../../src/pick/scheduler.js';
import { DEFAULT_SCHEDULER_CONFIG } from '../../../src/pick/scheduler-config.js';
import { EndpointState } from '../../../src/upstream/endpoint-registry.js';

const pods: EndpointState[] = [];
afterEach(async () => {
  await Promise.all(pods.splice(0).map((p) => p.pool.close()));
});

function scheduler(consecutive5xx = 3, news?: () => void) {
  let now = 1_000;
  const lines: string[] = [];
  const registry = new Registry();
  const metrics = new SchedulerMetrics(registry, () => []);
  const s = new Scheduler({
    settings: {
      outlier: { consecutiveFailures: 3, consecutive5xx, baseEjectionMs: 1_000, maxEjectionMs: 8_000 },
      podMetricsIntervalMs: 1_000,
      config: DEFAULT_SCHEDULER_CONFIG,
    },
    clock: () => now,
    metrics,
    log: (_level, m) => lines.push(m),
    news,
  });
  const pod = new EndpointState('pod-a', '127.0.0.1', 1, { connections: 1 });
  pods.push(pod);
  const counter = async (name: string): Promise<number> => {
    const m = (await registry.getMetricsAsJSON()).find((x) => x.name === name) as { values: { value: number }[] } | undefined;
    return m?.values.reduce((a, v) => a + v.value, 0) ?? 0;
  };
  return { s, pod, lines, counter, at: (t: number) => { now = t; }, now: () => now };
}

describe('Scheduler: the pod\'s answers and passive health', () => {
  it('5xx answers in a row eject the pod (counted, logged); the latency average does not learn from them', async () => {
    const { s, pod, lines, counter, now } = scheduler(3);
    s.answered(pod, 40, 200, false, now());
    s.answered(pod, 1, 500, false, now());
    s.answered(pod, 1, 502, false, now());
    expect(OutlierDetector.ejected(pod, now())).toBe(false);
    s.answered(pod, 1, 504, false, now());
    expect(OutlierDetector.ejected(pod, now())).toBe(true);
    expect(pod.load.observedMs).toBe(40);
    expect(lines).toEqual(['pod pod-a ejected for 1000ms after 3 5xx answer(s) in a row (ejection 1 in a row)']);
    expect(await counter('inference_router_pod_ejections_total')).toBe(1);
    expect(await counter('inference_router_upstream_5xx_failures_total')).toBe(3);
  });

  it('4xx, 501 and a 503 with retry-after are answers: they end the run; a 503 without retry-after counts', async () => {
    const { s, pod, counter, now } = scheduler(3);
    for (const [status, retryAfter] of [[404, false], [429, true], [501, false], [503, true], [200, false]] as const) {
      s.answered(pod, 1, 500, false, now());
      s.answered(pod, 1, 503, false, now());
      s.answered(pod, 1, status, retryAfter, now());
      expect(pod.health.consecutive5xx).toBe(0);
      expect(OutlierDetector.ejected(pod, now())).toBe(false);
    }
    expect(await counter('inference_router_upstream_5xx_failures_total')).toBe(10);
    s.answered(pod, 1, 503, false, now());
    s.answered(pod, 1, 503, false, now());
    s.answered(pod, 1, 503, false, now());
    expect(OutlierDetector.ejected(pod, now())).toBe(true);
  });

  it('an answer that is not a 5xx failure puts the pod back; a 5xx answer on probation ejects it again, for longer', () => {
    const { s, pod, lines, at, now } = scheduler(2);
    s.answered(pod, 1, 500, false, now());
    s.answered(pod, 1, 500, false, now());
    at(2_000);
    s.answered(pod, 1, 500, false, now());
    expect(pod.health.ejectedUntil).toBe(4_000);
    at(4_000);
    s.answered(pod, 1, 200, false, now());
    expect(pod.health).toMatchObject({ ejectedUntil: 0, ejections: 0, consecutive5xx: 0 });
    expect(lines).toEqual([
      'pod pod-a ejected for 1000ms after 2 5xx answer(s) in a row (ejection 1 in a row)',
      'pod pod-a ejected for 2000ms after 1 5xx answer(s) in a row (ejection 2 in a row)',
      'pod pod-a answered again: back in rotation',
    ]);
  });

  it('ROUTER_OUTLIER_CONSECUTIVE_5XX 0: 5xx answers count in the metric only: they eject nothing, and end no run of resets nor an ejection', async () => {
    const { s, pod, counter, now, at } = scheduler(0);
    for (let i = 0; i < 50; i++) s.answered(pod, 1, 500, false, now());
    expect(OutlierDetector.ejected(pod, now())).toBe(false);
    expect(pod.health).toMatchObject({ consecutiveFailures: 0, consecutive5xx: 0, report5xx: 0 });
    s.connectFailed(pod);
    s.connectFailed(pod);
    s.answered(pod, 1, 500, false, now()); // no success: the run of connect failures goes on
    expect(pod.health.consecutiveFailures).toBe(2);
    s.connectFailed(pod); // the third in a row: ejected
    expect(OutlierDetector.ejected(pod, now())).toBe(true);
    at(now() + 1_001);
    s.answered(pod, 1, 500, false, now()); // on probation, a 500 does not put it back
    expect(pod.health.ejections).toBe(1);
    s.answered(pod, 1, 200, false, now()); // an answer does
    expect(pod.health).toMatchObject({ consecutiveFailures: 0, ejections: 0 });
    expect(await counter('inference_router_upstream_5xx_failures_total')).toBe(52);
  });

  it('shared: a 5xx failure is reported to the instance at once, and an answer clears what was to report', () => {
    let news = 0;
    const { s, pod, now } = scheduler(5, () => news++);
    s.answered(pod, 1, 200, false, now());
    expect(news).toBe(0);
    s.answered(pod, 1, 500, false, now());
    s.answered(pod, 1, 500, false, now());
    expect(news).toBe(2);
    expect(pod.health).toMatchObject({ reportSuccess: true, reportFailures: 0, report5xx: 2 });
    s.answered(pod, 1, 200, false, now());
    expect(news).toBe(3); // the first answer of a failing pod
    expect(pod.health).toMatchObject({ reportSuccess: true, report5xx: 0, consecutive5xx: 0 });
  });

  it('a connection the pod broke before its answer ended counts with the connect failures: the run ejects, the reset is counted', async () => {
    const { s, pod, lines, counter, now } = scheduler(3);
    s.lost(pod);
    s.answered(pod, 1, 200, false, now()); // an answer ends the run
    s.lost(pod);
    s.connectFailed(pod);
    expect(OutlierDetector.ejected(pod, now())).toBe(false);
    s.timedOut(pod);
    expect(OutlierDetector.ejected(pod, now())).toBe(true);
    expect(lines).toEqual(['pod pod-a ejected for 1000ms after 3 connect failure(s)/timeout(s)/reset(s) in a row (ejection 1 in a row)']);
    expect(await counter('inference_router_upstream_resets_total')).toBe(2);
    expect(await counter('inference_router_upstream_connect_failures_total')).toBe(1);
    expect(await counter('inference_router_upstream_5xx_failures_total')).toBe(0);
  });

  it('an answer to a request sent before the ejection is neither counted nor reported; one sent after ends it', () => {
    let news = 0;
    const { s, pod, lines, at } = scheduler(2, () => news++);
    at(1_000);
    s.answered(pod, 1, 500, false, 990);
    at(1_010);
    s.answered(pod, 1, 500, false, 1_000); // ejected at 1010
    expect(pod.health).toMatchObject({ ejectedAt: 1_010, ejectedUntil: 2_010, report5xx: 2, reportSuccess: false });
    at(1_300);
    s.answered(pod, 300, 200, false, 1_000); // sent before the ejection
    s.answered(pod, 290, 200, false, 1_010); // sent in its millisecond
    expect(OutlierDetector.ejected(pod, 1_300)).toBe(true);
    expect(pod.health).toMatchObject({ reportSuccess: false, reportSentAt: 0, report5xx: 2 });
    expect(news).toBe(2);
    at(2_500);
    s.answered(pod, 1, 200, false, 2_400); // sent after it came back: back for good, and the primary hears when
    expect(pod.health).toMatchObject({ ejections: 0, ejectedUntil: 0, reportSuccess: true, reportSentAt: 2_400, report5xx: 0 });
    expect(lines).toEqual([]); // shared: the primary logs
    expect(news).toBe(3);
  });

  it('pickedAt: the clock of the last pick, which the request of an attempt goes out with', () => {
    const { s, pod, at } = scheduler(3);
    at(1_234);
    expect(s.pick({ key: 'k', endpoints: [pod] } as never, null, null)).toBe(pod);
    expect(s.pickedAt).toBe(1_234);
  });
});
