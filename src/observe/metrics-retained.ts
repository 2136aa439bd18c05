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
import { histogramJson, isHistogramParts, type HistogramPart, type HistogramParts, type LabelValues, type MetricJson, type MetricValue } from './metrics-series.js';
import { epochOf, epochsIn, isMonotonic, notePartEpoch, type PartEpochs, type PodAnswer, type PodEpochs, type ShownEpochs } from './backend-pod-epochs.js';
import { addToSeriesSum, hasNoSeries, keepSeries, labelSetKey, sameBuckets, seriesSum, type SentMetric, type SeriesSum } from './sent-metric.js';

/** The counters and histograms of one worker's answer. */
export function monotonicPart(list: readonly SentMetric[]): SentMetric[] {
  return list.filter(isMonotonic);
}

/**
 * The series of `prev` (a worker's last answer) of pods whose epoch in `next` (its new answer) is
 * another, or that `next` does not have: what the worker counted in an epoch it moved on from.
 */
export function movedOn(prev: PodAnswer, next: PodAnswer): SentMetric[] {
  const out: SentMetric[] = [];
  const moved = new Map<string, boolean>();
  const epochInNext = epochsIn(next);
  const left = (labels: LabelValues): boolean => {
    const pod = labels.backend_pod;
    if (pod === undefined) return false;
    let m = moved.get(pod);
    if (m === undefined) {
      m = epochInNext(pod) !== epochOf(prev.epochs, pod);
      moved.set(pod, m);
    }
    return m;
  };
  for (const m of prev.metrics) {
    if (!isMonotonic(m)) continue;
    const kept = keepSeries(m, left);
    if (!hasNoSeries(kept)) out.push(kept);
  }
  return out;
}

/** A series kept: a value of prom-client's JSON, or a histogram's (its buckets, sum and count), with the epoch of its pod. */
interface RetiredSeries<S> {
  readonly series: S;
  /** Epoch of its backend pod (backend-pod-epochs.ts); NO_EPOCH for a series of no pod. */
  readonly epoch: number;
}

/** A metric kept as values (prom-client's JSON), keyed by line name, labels and epoch. */
interface ValuesFamily {
  readonly json: Omit<MetricJson, 'values'>;
  readonly byKey: Map<string, RetiredSeries<MetricValue>>;
}

/** A histogram kept as its parts, keyed by labels and epoch. */
interface PartsFamily {
  readonly json: Omit<HistogramParts, 'series'>;
  readonly byKey: Map<string, RetiredSeries<SeriesSum>>;
}

function isPartsFamily(f: ValuesFamily | PartsFamily): f is PartsFamily {
  return 'le' in f.json;
}

function epochKey(labels: LabelValues, epoch: number): string {
  return `${labelSetKey(labels)}\u0000${epoch}`;
}

/** The counters and histograms of workers that exited, summed (one more "worker" in each scrape's sum). */
export class RetiredCounts {
  private readonly families = new Map<string, ValuesFamily | PartsFamily>();

  /** Adds an exited worker's last answer (or what one counted in an epoch it moved on from), with the epochs of its pods. */
  add(list: readonly SentMetric[], epochs: PodEpochs | null): void {
    for (const m of list) {
      if (!isMonotonic(m)) continue;
      let f = this.families.get(m.name);
      if (f === undefined) {
        f = isHistogramParts(m)
          ? { json: { name: m.name, help: m.help, type: m.type, aggregator: 'sum', le: m.le }, byKey: new Map() }
          : { json: { name: m.name, help: m.help, type: m.type, aggregator: 'sum' }, byKey: new Map() };
        this.families.set(m.name, f);
      }
      if (isPartsFamily(f) && isHistogramParts(m) && sameBuckets(f.json.le, m.le)) addParts(f, m.series, epochs);
      else addValues(this.asValues(f), isHistogramParts(m) ? histogramJson(m).values : m.values, epochs);
    }
  }

  /**
   * `f` kept as values: a histogram family's parts made into prom-client's JSON once a list of it
   * comes in another form or with other buckets (never between the router's own workers, which
   * send every histogram family one way; kept exact if it ever happens).
   */
  private asValues(f: ValuesFamily | PartsFamily): ValuesFamily {
    if (!isPartsFamily(f)) return f;
    const { le, ...json } = f.json;
    const values: ValuesFamily = { json, byKey: new Map() };
    for (const s of f.byKey.values()) addValues(values, histogramJson({ ...f.json, series: [s.series] }).values, null, s.epoch);
    this.families.set(json.name, values);
    return values;
  }

  /** Notes in `into` the epochs at which a series of each backend pod is kept (one pass). */
  notePartEpochs(into: PartEpochs): void {
    for (const f of this.families.values()) {
      for (const s of (f.byKey as Map<string, RetiredSeries<{ labels: LabelValues }>>).values()) {
        if (s.series.labels.backend_pod !== undefined) notePartEpoch(into, s.series.labels.backend_pod, s.epoch);
      }
    }
  }

  /** Drops for good the series of epochs of pods that `shown` will sum no more. */
  settle(shown: ShownEpochs): void {
    for (const f of this.families.values()) {
      for (const [key, s] of f.byKey as Map<string, RetiredSeries<{ labels: LabelValues }>>) {
        const pod = s.series.labels.backend_pod;
        if (pod !== undefined && shown.over(pod, s.epoch)) f.byKey.delete(key);
      }
    }
  }

  /**
   * The sums so far in this scrape (the epochs `shown` sums), as one worker's answer: copies, as
   * the sum reads them over turns of the event loop, during which add() may add a worker that
   * exited to what is kept here (counted twice in that scrape, its answer too).
   */
  list(shown: ShownEpochs): SentMetric[] {
    const out: SentMetric[] = [];
    const showing = (s: RetiredSeries<{ labels: LabelValues }>): boolean => {
      const pod = s.series.labels.backend_pod;
      return pod === undefined || shown.shows(pod, s.epoch);
    };
    for (const f of this.families.values()) {
      if (isPartsFamily(f)) {
        const series: HistogramPart[] = [];
        for (const s of f.byKey.values()) if (showing(s)) series.push(seriesSum(s.series));
        out.push({ ...f.json, series });
      } else {
        const values: MetricValue[] = [];
        for (const s of f.byKey.values()) if (showing(s)) values.push({ ...s.series });
        out.push({ ...f.json, values });
      }
    }
    return out;
  }
}

function addParts(f: PartsFamily, series: readonly HistogramPart[], epochs: PodEpochs | null): void {
  for (const p of series) {
    const pod = p.labels.backend_pod;
    const epoch = pod === undefined ? 0 : epochOf(epochs, pod);
    const key = epochKey(p.labels, epoch);
    const had = f.byKey.get(key);
    if (had !== undefined) addToSeriesSum(had.series, p);
    else f.byKey.set(key, { series: seriesSum(p, { ...p.labels }), epoch });
  }
}

/** Adds `values` to `f`; `epochGiven`, when set, is every value's epoch (else read from `epochs` by its pod). */
function addValues(f: ValuesFamily, values: readonly MetricValue[], epochs: PodEpochs | null, epochGiven?: number): void {
  for (const v of values) {
    const pod = v.labels.backend_pod;
    const epoch = epochGiven ?? (pod === undefined ? 0 : epochOf(epochs, pod));
    const key = `${v.metricName ?? f.json.name}\u0000${epochKey(v.labels, epoch)}`;
    const had = f.byKey.get(key);
    if (had !== undefined) {
      had.series.value += v.value;
      continue;
    }
    const copy: MetricValue = { labels: { ...v.labels }, value: v.value };
    if (v.metricName !== undefined) copy.metricName = v.metricName;
    f.byKey.set(key, { series: copy, epoch });
  }
}
