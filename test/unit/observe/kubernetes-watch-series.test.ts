import { describe, expect, test } from 'vitest';
import { AggregatorRegistry } from 'prom-client';
import { kubernetesWatchSeries } from '../../../src/observe/kubernetes-watch-series.js';

describe('kubernetesWatchSeries', () => {
  test('a failures counter and a healthy gauge (1 or 0) per resource, in the exposition as the primary adds them', async () => {
    const series = kubernetesWatchSeries([
      { resource: 'modelroutes', healthy: true, failures: 0 },
      { resource: 'modelservers', healthy: true, failures: 2 },
      { resource: 'pods', healthy: false, failures: 5 },
    ]);
    const text = await AggregatorRegistry.aggregate([series] as never).metrics();
    expect(text).toContain('# TYPE inference_router_kubernetes_watch_failures_total counter');
    expect(text).toContain('# TYPE inference_router_kubernetes_watch_healthy gauge');
    for (const line of [
      'inference_router_kubernetes_watch_failures_total{resource="modelroutes"} 0',
      'inference_router_kubernetes_watch_failures_total{resource="modelservers"} 2',
      'inference_router_kubernetes_watch_failures_total{resource="pods"} 5',
      'inference_router_kubernetes_watch_healthy{resource="modelroutes"} 1',
      'inference_router_kubernetes_watch_healthy{resource="modelservers"} 1',
      'inference_router_kubernetes_watch_healthy{resource="pods"} 0',
    ]) expect(text.split('\n')).toContain(line);
  });
});
