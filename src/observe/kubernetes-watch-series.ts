/**
 * The primary's own series in Kubernetes mode: the state of the list/watch of each kind it
 * follows (config/kubernetes-source.ts). The primary watches the API server, not the workers, so
 * these are added to the scrape's sum by the primary (metrics-cluster.ts, `ownSeries`), once.
 */
import type { MetricJson } from './metrics-series.js';

/** One kind's list/watch (KubernetesSource.watchStates()). */
export interface WatchSeriesState {
  readonly resource: string;
  readonly healthy: boolean;
  readonly failures: number;
}

export const WATCH_FAILURES = 'inference_router_kubernetes_watch_failures_total';
export const WATCH_HEALTHY = 'inference_router_kubernetes_watch_healthy';

export function kubernetesWatchSeries(states: readonly WatchSeriesState[]): MetricJson[] {
  return [
    {
      name: WATCH_FAILURES,
      help: 'Failed list or watch requests to the Kubernetes API server (refused or unreachable, an HTTP error, a broken or silent stream, a list not answered in time), by resource (modelroutes, modelservers, pods).',
      type: 'counter',
      values: states.map((s) => ({ labels: { resource: s.resource }, value: s.failures })),
      aggregator: 'sum',
    },
    {
      name: WATCH_HEALTHY,
      help: 'Whether the router follows the resource: 1 while its watch is established and no failure came after it, 0 before the first one, while list/watch requests fail and are retried, and while a reconnect or relist is held back, by resource.',
      type: 'gauge',
      values: states.map((s) => ({ labels: { resource: s.resource }, value: s.healthy ? 1 : 0 })),
      aggregator: 'sum',
    },
  ];
}
