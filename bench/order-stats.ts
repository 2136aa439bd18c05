/**
 * Medians and percentiles of measured samples, one definition for every bench tool: the median of
 * an even count is the mean of the middle two; a percentile is the nearest rank (the smallest value
 * with at least q of the samples at or below it).
 */

/** Median of the values (unsorted; not changed); NaN when there are none. */
export function median(values: readonly number[]): number {
  if (values.length === 0) return Number.NaN;
  const s = [...values].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 === 1 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
}

/** The q-quantile (0 < q <= 1) of values sorted ascending, by nearest rank; NaN when there are none. */
export function percentile(sorted: ArrayLike<number>, q: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.ceil(q * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1];
}
