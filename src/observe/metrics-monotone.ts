/**
 * The last step of the primary's /metrics (metrics-cluster.ts): no counter or histogram series of
 * the exposition goes down by a rounding step from one scrape to the next.
 *
 * The sums are floating-point: a histogram's `_sum` (seconds) added up over the workers' answers,
 * their stand-ins and the retired part comes out a unit in the last place lower when the terms
 * are added in another order (the answers arrive in another order, a worker's part moved into the
 * retired sum when it exited). Prometheus reads any drop of a counter as a reset and counts the
 * whole total again as new increase: `rate(x_sum)` spikes. A value below the one shown last by
 * no more than a rounding step is shown as that last value; any real drop (a series that ended
 * and came back from 0, documented in metrics.md) goes through as it is.
 */

/** Relative size of a drop taken for rounding: sums of a few hundred terms differ far less, resets far more. */
const ROUNDING = 1e-9;

export class MonotoneSeries {
  /** Value shown last, as text and number, by series (name and labels as written). */
  private last = new Map<string, { text: string; value: number }>();

  /** `text` (an exposition), with each counter and histogram line at least what it showed last unless it dropped for real. */
  apply(text: string): string {
    const seen = new Map<string, { text: string; value: number }>();
    const lines = text.split('\n');
    let monotone = false;
    for (let i = 0; i < lines.length; i++) {
      const line = lines[i];
      if (line.startsWith('#')) {
        if (line.startsWith('# TYPE ')) monotone = line.endsWith(' counter') || line.endsWith(' histogram');
        continue;
      }
      if (!monotone || line.length === 0) continue;
      const space = line.lastIndexOf(' ');
      if (space <= 0) continue;
      const series = line.slice(0, space);
      const valueText = line.slice(space + 1);
      const value = Number(valueText);
      const before = this.last.get(series);
      if (before !== undefined && value < before.value && before.value - value <= Math.abs(before.value) * ROUNDING) {
        lines[i] = `${series} ${before.text}`;
        seen.set(series, before);
      } else {
        seen.set(series, { text: valueText, value });
      }
    }
    // Only the series of this scrape are kept: one that ends and comes back starts afresh.
    this.last = seen;
    return lines.join('\n');
  }
}
