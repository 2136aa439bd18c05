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

/** Whether two histogram families have the same buckets (their `le`, in order): their parts can be summed as such. */
export function sameBuckets(a: readonly string[], b: readonly string[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** A histogram series being summed: its bucket counts, sum and count added to in place. */
export interface SeriesSum {
  readonly labels: LabelValues;
  readonly counts: number[];
  sum: number;
  count: number;
}

/**
 * A sum of `s` alone (its counts copied), with `labels`. Started from 0 as prom-client's sum is: a
 * sum that was not finite in a worker comes as null over IPC, and counts as 0.
 */
export function seriesSum(s: HistogramPart, labels: LabelValues = s.labels): SeriesSum {
  return { labels, counts: Array.from(s.counts), sum: 0 + s.sum, count: 0 + s.count };
}

/** Adds `s` (the same buckets) to `into`. */
export function addToSeriesSum(into: SeriesSum, s: HistogramPart): void {
  for (let i = 0; i < into.counts.length; i++) into.counts[i] += s.counts[i];
  into.sum += s.sum;
  into.count += s.count;
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
