/**
 * Series about one backend pod (docs/metrics.md, "Backend pod labels"). Their pod is named by
 * `backend_pod`: Prometheus gives every scraped series a `pod` target label (the router's own pod,
 * with a ServiceMonitor or pod discovery) and renames a `pod` label of the series to `exported_pod`
 * unless honorLabels is on, which left dashboards and alerts on `pod` reading the router's pod.
 * `pod` still carries the same value for queries written before `backend_pod` (deprecated; it goes
 * in a later release).
 */
import type { CounterSeries, LabelValues, MetricJson, MetricValue, RegistrableMetric } from './metrics-series.js';
import { CounterSeries as Series } from './metrics-series.js';

/** The labels of a series of backend pod `name`. */
export function backendPodLabels(name: string): LabelValues {
  return { backend_pod: name, pod: name };
}

/** One value per backend pod, summed by pod name (two endpoints of one name are one pod to a reader). */
export function sumByBackendPod<T>(items: Iterable<T>, name: (item: T) => string, value: (item: T) => number): MetricValue[] {
  const byPod = new Map<string, number>();
  for (const e of items) {
    const n = name(e);
    byPod.set(n, (byPod.get(n) ?? 0) + value(e));
  }
  return [...byPod].map(([pod, v]) => ({ labels: backendPodLabels(pod), value: v }));
}

/** A counter family by backend pod. */
export class BackendPodCounters implements RegistrableMetric {
  readonly type = 'counter';
  readonly aggregator = 'sum';
  private readonly byPod = new Map<string, CounterSeries>();

  constructor(readonly name: string, readonly help: string) {}

  /** The counter of pod `name` (created on first use). */
  of(name: string): CounterSeries {
    let s = this.byPod.get(name);
    if (s === undefined) {
      s = new Series(backendPodLabels(name));
      this.byPod.set(name, s);
    }
    return s;
  }

  async get(): Promise<MetricJson> {
    const values: MetricValue[] = [];
    for (const s of this.byPod.values()) values.push({ labels: s.labels, value: s.value });
    return { name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator };
  }

  reset(): void {
    for (const s of this.byPod.values()) s.value = 0;
  }
}
