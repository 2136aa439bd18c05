/**
 * What the primary keeps of workers' counters between scrapes (metrics-cluster.ts), so the
 * instance's counters never go down: a sum that drops reads to Prometheus as a counter reset, and
 * rate() then counts the whole remaining total again as new increase.
 * - A worker that exited (crashed, replaced): its counters and histograms as of its last answer
 *   stay in every later sum (RetiredCounts). Its gauges go: they describe a process that is gone.
 * - A worker that did not answer one scrape in time: its counters and histograms of its last
 *   answer stand in for it (monotonicPart), its gauges are left out.
 * - Except the series of a backend pod that left the configuration (backend-pod-series.ts): an
 *   exited or late worker's part of them goes once no live worker's answer reports the pod either,
 *   as the live workers' own series of it went (RetiredCounts.dropBackendPods).
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
   * configuration now, and not in any of `answered` (the live workers' answers to this scrape): a
   * worker that has not applied the new configuration yet still reports them, and while it does
   * the other parts stay in the sum (else the sum would drop, a counter reset to Prometheus).
   * Dropped from the exited workers' sums here and from `standIns` (the last answers of workers
   * that did not answer this scrape) in the lists returned: a late worker's part alone would be
   * such a drop too, and its next answer, to a collect sent after the configuration, has applied it.
   */
  dropBackendPods(live: ReadonlySet<string>, answered: readonly (readonly MetricJson[])[], standIns: MetricJson[][]): MetricJson[][] {
    const gone = new Set<string>();
    const leftPods = (list: readonly MetricJson[]): void => {
      for (const m of list) {
        for (const v of m.values) {
          const pod = v.labels.backend_pod;
          if (pod !== undefined && !live.has(pod)) gone.add(pod);
        }
      }
    };
    for (const f of this.families.values()) leftPods([f.json]);
    for (const list of standIns) leftPods(list);
    if (gone.size === 0) return standIns;
    for (const list of answered) {
      for (const m of list) for (const v of m.values) if (v.labels.backend_pod !== undefined) gone.delete(v.labels.backend_pod);
    }
    if (gone.size === 0) return standIns;
    const kept = (v: MetricValue): boolean => v.labels.backend_pod === undefined || !gone.has(v.labels.backend_pod);
    for (const f of this.families.values()) {
      for (const [key, v] of f.byKey) if (!kept(v)) f.byKey.delete(key);
      f.json.values = [...f.byKey.values()];
    }
    // New lists: the answers kept as `last` are not changed.
    return standIns.map((list) => list.map((m) => (m.values.every(kept) ? m : { ...m, values: m.values.filter(kept) })));
  }

  /** The sums so far, as one worker's answer (empty when no worker exited after answering). */
  get list(): MetricJson[] {
    return [...this.families.values()].map((f) => f.json);
  }
}
