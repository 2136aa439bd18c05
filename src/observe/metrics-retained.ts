/**
 * What the primary keeps of workers' counters between scrapes (metrics-cluster.ts), so the
 * instance's counters never go down: a sum that drops reads to Prometheus as a counter reset, and
 * rate() then counts the whole remaining total again as new increase.
 * - A worker that exited (crashed, replaced): its counters and histograms as of its last answer
 *   stay in every later sum (RetiredCounts). Its gauges go: they describe a process that is gone.
 * - A worker that did not answer one scrape in time: its counters and histograms of its last
 *   answer stand in for it (monotonicPart), its gauges are left out.
 * - A worker whose answer has a backend pod at a newer epoch than its last answer, or no longer
 *   has the pod (it applied a configuration that removed it): what its last answer counted for the
 *   pod in the older epoch is kept here too, as an exited worker's, while that epoch is summed.
 * - Except the series of a backend pod at an epoch that is summed no more (backend-pod-epochs.ts):
 *   a pod that left the configuration once no answering worker has it, an older epoch of a pod
 *   once no answering worker has it at that epoch. They go for good (RetiredCounts.settle).
 */
import type { MetricJson, MetricValue } from './metrics-series.js';
import { epochOf, epochsIn, isMonotonic, notePartEpoch, type PartEpochs, type PodAnswer, type PodEpochs, type ShownEpochs } from './backend-pod-epochs.js';

/** The counters and histograms of one worker's answer. */
export function monotonicPart(list: readonly MetricJson[]): MetricJson[] {
  return list.filter(isMonotonic);
}

/**
 * The series of `prev` (a worker's last answer) of pods whose epoch in `next` (its new answer) is
 * another, or that `next` does not have: what the worker counted in an epoch it moved on from.
 */
export function movedOn(prev: PodAnswer, next: PodAnswer): MetricJson[] {
  const out: MetricJson[] = [];
  const moved = new Map<string, boolean>();
  const epochInNext = epochsIn(next);
  const left = (pod: string): boolean => {
    let m = moved.get(pod);
    if (m === undefined) {
      m = epochInNext(pod) !== epochOf(prev.epochs, pod);
      moved.set(pod, m);
    }
    return m;
  };
  for (const m of prev.metrics) {
    if (!isMonotonic(m)) continue;
    const values = m.values.filter((v) => v.labels.backend_pod !== undefined && left(v.labels.backend_pod));
    if (values.length > 0) out.push({ ...m, values });
  }
  return out;
}

function seriesKey(name: string, v: MetricValue, epoch: number): string {
  const labels = Object.keys(v.labels).sort().map((k) => `${k}\u0001${v.labels[k]}`).join('\u0002');
  return `${v.metricName ?? name}\u0000${labels}\u0000${epoch}`;
}

interface RetiredSeries {
  readonly value: MetricValue;
  /** Epoch of its backend pod (backend-pod-epochs.ts); NO_EPOCH for a series of no pod. */
  readonly epoch: number;
}

interface RetiredFamily {
  readonly json: Omit<MetricJson, 'values'>;
  readonly byKey: Map<string, RetiredSeries>;
}

/** The counters and histograms of workers that exited, summed (one more "worker" in each scrape's sum). */
export class RetiredCounts {
  private readonly families = new Map<string, RetiredFamily>();

  /** Adds an exited worker's last answer (or what one counted in an epoch it moved on from), with the epochs of its pods. */
  add(list: readonly MetricJson[], epochs: PodEpochs | null): void {
    for (const m of list) {
      if (!isMonotonic(m)) continue;
      let f = this.families.get(m.name);
      if (f === undefined) {
        f = { json: { name: m.name, help: m.help, type: m.type, aggregator: 'sum' }, byKey: new Map() };
        this.families.set(m.name, f);
      }
      for (const v of m.values) {
        const pod = v.labels.backend_pod;
        const epoch = pod === undefined ? 0 : epochOf(epochs, pod);
        const key = seriesKey(m.name, v, epoch);
        const had = f.byKey.get(key);
        if (had !== undefined) {
          had.value.value += v.value;
          continue;
        }
        const copy: MetricValue = { labels: { ...v.labels }, value: v.value };
        if (v.metricName !== undefined) copy.metricName = v.metricName;
        f.byKey.set(key, { value: copy, epoch });
      }
    }
  }

  /** Notes in `into` the epochs at which a series of each backend pod is kept (one pass). */
  notePartEpochs(into: PartEpochs): void {
    for (const f of this.families.values()) {
      for (const s of f.byKey.values()) if (s.value.labels.backend_pod !== undefined) notePartEpoch(into, s.value.labels.backend_pod, s.epoch);
    }
  }

  /** Drops for good the series of epochs of pods that `shown` will sum no more. */
  settle(shown: ShownEpochs): void {
    for (const f of this.families.values()) {
      for (const [key, s] of f.byKey) {
        const pod = s.value.labels.backend_pod;
        if (pod !== undefined && shown.over(pod, s.epoch)) f.byKey.delete(key);
      }
    }
  }

  /** The sums so far in this scrape (the epochs `shown` sums), as one worker's answer. */
  list(shown: ShownEpochs): MetricJson[] {
    const out: MetricJson[] = [];
    for (const f of this.families.values()) {
      const values: MetricValue[] = [];
      for (const s of f.byKey.values()) {
        const pod = s.value.labels.backend_pod;
        if (pod === undefined || shown.shows(pod, s.epoch)) values.push(s.value);
      }
      out.push({ ...f.json, values });
    }
    return out;
  }
}
