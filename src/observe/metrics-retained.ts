/**
 * What the primary keeps of workers' counters between scrapes (metrics-cluster.ts), so the
 * instance's counters never go down: a sum that drops reads to Prometheus as a counter reset, and
 * rate() then counts the whole remaining total again as new increase.
 * - A worker that exited (crashed, replaced): its counters and histograms as of its last answer
 *   stay in every later sum (RetiredCounts). Its gauges go: they describe a process that is gone.
 * - A worker that did not answer one scrape in time: its counters and histograms of its last
 *   answer stand in for it (monotonicPart), its gauges are left out.
 * - Except the series of a backend pod that left the configuration (backend-pod-series.ts): an
 *   exited worker's part of them goes once no live worker reports the pod either, as the live
 *   workers' own series of it went (RetiredCounts.dropBackendPods).
 */
import type { MetricJson, MetricValue } from './metrics-series.js';

/** Counters and histograms summed across workers: the series that must not go down. */
function isMonotonic(m: MetricJson): boolean {
  return (m.type === 'counter' || m.type === 'histogram') && (m.aggregator ?? 'sum') === 'sum';
}

/** The counters and histograms of one worker's answer. */
export function monotonicPart(list: readonly MetricJson[]): MetricJson[] {
  return list.filter(isMonotonic);
}

function seriesKey(name: string, v: MetricValue): string {
  const labels = Object.keys(v.labels).sort().map((k) => `${k}\u0001${v.labels[k]}`).join('\u0002');
  return `${v.metricName ?? name}\u0000${labels}`;
}

interface RetiredFamily {
  readonly json: MetricJson;
  readonly byKey: Map<string, MetricValue>;
}

/** The counters and histograms of workers that exited, summed (one more "worker" in each scrape's sum). */
export class RetiredCounts {
  private readonly families = new Map<string, RetiredFamily>();

  /** Adds an exited worker's last answer. */
  add(list: readonly MetricJson[]): void {
    for (const m of list) {
      if (!isMonotonic(m)) continue;
      let f = this.families.get(m.name);
      if (f === undefined) {
        f = { json: { name: m.name, help: m.help, type: m.type, aggregator: 'sum', values: [] }, byKey: new Map() };
        this.families.set(m.name, f);
      }
      for (const v of m.values) {
        const key = seriesKey(m.name, v);
        const had = f.byKey.get(key);
        if (had !== undefined) {
          had.value += v.value;
          continue;
        }
        const copy: MetricValue = { labels: { ...v.labels }, value: v.value };
        if (v.metricName !== undefined) copy.metricName = v.metricName;
        f.byKey.set(key, copy);
        f.json.values.push(copy);
      }
    }
  }

  /**
   * Drops the series of backend pods (label backend_pod) not in `live`, the pods of the
   * configuration now, and not in any of `reported` (the live workers' answers to this scrape):
   * a worker that has not applied the new configuration yet still reports them, and while it does
   * the exited workers' part stays in the sum (else the sum would drop, a counter reset to Prometheus).
   */
  dropBackendPods(live: ReadonlySet<string>, reported: readonly (readonly MetricJson[])[]): void {
    const gone = new Set<string>();
    for (const f of this.families.values()) {
      for (const v of f.json.values) {
        const pod = v.labels.backend_pod;
        if (pod !== undefined && !live.has(pod)) gone.add(pod);
      }
    }
    if (gone.size === 0) return;
    for (const list of reported) {
      for (const m of list) for (const v of m.values) if (v.labels.backend_pod !== undefined) gone.delete(v.labels.backend_pod);
    }
    if (gone.size === 0) return;
    for (const f of this.families.values()) {
      for (const [key, v] of f.byKey) if (v.labels.backend_pod !== undefined && gone.has(v.labels.backend_pod)) f.byKey.delete(key);
      f.json.values = [...f.byKey.values()];
    }
  }

  /** The sums so far, as one worker's answer (empty when no worker exited after answering). */
  get list(): MetricJson[] {
    return [...this.families.values()].map((f) => f.json);
  }
}
