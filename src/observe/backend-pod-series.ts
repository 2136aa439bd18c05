/**
 * Series about one backend pod (docs/metrics.md, "Backend pod labels"). Their pod is named by
 * `backend_pod`: Prometheus gives every scraped series a `pod` target label (the router's own pod,
 * with a ServiceMonitor or pod discovery) and renames a `pod` label of the series to `exported_pod`
 * unless honorLabels is on, which left dashboards and alerts on `pod` reading the router's pod.
 * `pod` still carries the same value for queries written before `backend_pod` (deprecated; it goes
 * in a later release).
 *
 * A pod's series last as long as it is in the configuration: its counters are dropped when the
 * process applies a configuration without it (and at each scrape), as its gauges (read from the
 * live pods) are. A counter series that
 * ends is what rate() and increase() handle for a pod that went away; kept, every rollout, which
 * replaces the pods' names, would add series exported for ever.
 */
import { CounterSeries, type LabelValues, type MetricJson, type MetricValue, type RegistrableMetric } from './metrics-series.js';

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

/**
 * A counter family by backend pod. `livePods` (read at scrape time): the pods of the configuration
 * this process applied; the series of any other pod are dropped then, before they are read, so a
 * late count for a pod that left (a request of it still in flight) is not exported either. When it
 * gives null, every series is kept.
 */
export class BackendPodCounters implements RegistrableMetric {
  readonly type = 'counter';
  readonly aggregator = 'sum';
  private readonly byPod = new Map<string, CounterSeries>();

  constructor(readonly name: string, readonly help: string, private readonly livePods: () => Iterable<string> | null) {}

  /** The counter of pod `name` (created on first use). */
  of(name: string): CounterSeries {
    let s = this.byPod.get(name);
    if (s === undefined) {
      s = new CounterSeries(backendPodLabels(name));
      this.byPod.set(name, s);
    }
    return s;
  }

  /** Drops the series of pods not live now (also done by each scrape: a router nobody scrapes keeps no pods that left). */
  prune(): void {
    const pods = this.byPod.size > 0 ? this.livePods() : null;
    if (pods === null) return;
    const live = new Set(pods);
    for (const name of this.byPod.keys()) if (!live.has(name)) this.byPod.delete(name);
  }

  async get(): Promise<MetricJson> {
    this.prune();
    const values: MetricValue[] = [];
    for (const s of this.byPod.values()) values.push({ labels: s.labels, value: s.value });
    return { name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator };
  }

  reset(): void {
    for (const s of this.byPod.values()) s.value = 0;
  }
}
