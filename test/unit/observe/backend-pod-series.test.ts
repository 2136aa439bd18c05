import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { SchedulerMetrics } from '../../../src/observe/scheduler-metrics.js';
import { sample } from '../../helpers/metrics-text.js';

describe('series of backend pods that left the configuration', () => {
  it('counters of a pod that left are dropped at the next scrape, and a late count for it is not exported', async () => {
    const registry = new Registry();
    let live = ['pod-a', 'pod-b'];
    let ejected = ['pod-b'];
    const m = new SchedulerMetrics(registry, () => ejected, () => live.map((p): [string, number] => [p, 1]), () => 0, () => live);
    m.connectFailed('pod-a');
    m.connectFailed('pod-b');
    m.connectFailed('pod-b');
    m.timedOut('pod-b');
    m.reset('pod-b');
    m.serverError('pod-b');
    m.ejected('pod-b');
    let t = await registry.metrics();
    expect(sample(t, 'inference_router_upstream_connect_failures_total{backend_pod="pod-b",pod="pod-b"}')).toBe(2);
    expect(sample(t, 'inference_router_pod_ejected{backend_pod="pod-b",pod="pod-b"}')).toBe(1);

    // A rollout: pod-b is replaced by pod-c.
    live = ['pod-a', 'pod-c'];
    ejected = [];
    t = await registry.metrics();
    expect(t).not.toContain('"pod-b"');
    expect(sample(t, 'inference_router_upstream_connect_failures_total{backend_pod="pod-a",pod="pod-a"}')).toBe(1);
    // A request of pod-b's still in flight when it left fails afterwards: not exported.
    m.timedOut('pod-b');
    m.connectFailed('pod-c');
    t = await registry.metrics();
    expect(t).not.toContain('"pod-b"');
    expect(sample(t, 'inference_router_upstream_connect_failures_total{backend_pod="pod-c",pod="pod-c"}')).toBe(1);
  });

  it('a configuration applied drops the counters of the pods that left it, scraped or not in between', async () => {
    const registry = new Registry();
    let live = ['pod-a', 'pod-b'];
    const m = new SchedulerMetrics(registry, () => [], () => [], () => 0, () => live);
    m.connectFailed('pod-b');
    m.connectFailed('pod-b');
    live = ['pod-a'];
    m.configurationApplied();
    // pod-b comes back under the same name before any scrape: it starts from 0.
    live = ['pod-a', 'pod-b'];
    m.configurationApplied();
    m.connectFailed('pod-b');
    expect(sample(await registry.metrics(), 'inference_router_upstream_connect_failures_total{backend_pod="pod-b",pod="pod-b"}')).toBe(1);
  });

  it('a pod scraped whose values are not fresh reads 0, not absent; a pod not scraped has no series', async () => {
    const registry = new Registry();
    let scraped: [string, number][] = [['pod-a', 1], ['pod-a', 1], ['pod-b', 1]];
    new SchedulerMetrics(registry, () => [], () => scraped, () => 0, () => ['pod-a', 'pod-b', 'pod-c']);
    let t = await registry.metrics();
    expect(sample(t, 'inference_router_pod_metrics_fresh{backend_pod="pod-a",pod="pod-a"}')).toBe(2);
    expect(sample(t, 'inference_router_pod_metrics_fresh{backend_pod="pod-b",pod="pod-b"}')).toBe(1);
    scraped = [['pod-a', 1], ['pod-a', 1], ['pod-b', 0]];
    t = await registry.metrics();
    expect(sample(t, 'inference_router_pod_metrics_fresh{backend_pod="pod-b",pod="pod-b"}')).toBe(0);
    expect(t).not.toContain('"pod-c"');
  });
});
