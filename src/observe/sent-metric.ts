/**
 * A metric as a worker sends it to the primary and as the primary keeps it until the sum
 * (metrics-cluster.ts): prom-client's JSON (a value per line of the exposition), or a histogram
 * family's parts (a series per entry, its buckets, sum and count together: HistogramParts). The
 * primary's steps (epochs of backend pods, what exited workers counted, the tenant bound, the sum)
 * see a metric's series through these, whichever form it has: a series of the JSON is one value,
 * of the parts one entry with every line of its label set.
 */
import type { HistogramPart, HistogramParts, LabelValues, MetricJson } from './metrics-series.js';
import { isHistogramParts } from './metrics-series.js';

export type SentMetric = MetricJson | HistogramParts;

/** Calls `fn` with the labels of each series of `m` (a histogram part's without `le`). */
export function forEachSeriesLabels(m: SentMetric, fn: (labels: LabelValues) => void): void {
  if (isHistogramParts(m)) for (const s of m.series) fn(s.labels);
  else for (const v of m.values) fn(v.labels);
}

/** `m` with the series whose labels `keep` passes (`m` itself when all pass; a metric of no series when none does). */
export function keepSeries(m: SentMetric, keep: (labels: LabelValues) => boolean): SentMetric {
  if (isHistogramParts(m)) {
    const series: HistogramPart[] = m.series.filter((s) => keep(s.labels));
    return series.length === m.series.length ? m : { ...m, series };
  }
  const values = m.values.filter((v) => keep(v.labels));
  return values.length === m.values.length ? m : { ...m, values };
}

/** Whether `m` has no series. */
export function hasNoSeries(m: SentMetric): boolean {
  return isHistogramParts(m) ? m.series.length === 0 : m.values.length === 0;
}

/** The lines of the exposition `m` stands for (a histogram part's: a bucket each, its sum and count). */
export function linesOf(m: SentMetric): number {
  return isHistogramParts(m) ? m.series.length * (m.le.length + 2) : m.values.length;
}

/**
 * A label set as one string, the same for the same labels in any order (prom-client's sum groups
 * values so: a label whose value is undefined counts as absent). Names and values are joined by
 * control characters (\u0000, \u0001) that no label name has.
 */
export function labelSetKey(labels: Readonly<Record<string, string | number | undefined>>): string {
  const names = Object.keys(labels);
  if (names.length > 1) names.sort();
  let key = '';
  for (const n of names) {
    const v = labels[n];
    if (v !== undefined) key += `${n}\u0000${v}\u0001`;
  }
  return key;
}
