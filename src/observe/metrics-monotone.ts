/**
 * A step of the primary's /metrics, taken as the sum is written (aggregate-in-turns.ts): no counter
 * or histogram series of the exposition goes down by a rounding step from one scrape to the next.
 *
 * The sums are floating-point: a histogram's `_sum` (seconds) added up over the workers' answers,
 * their stand-ins and the retired part comes out a unit in the last place lower when the terms
 * are added in another order (the answers arrive in another order, a worker's part moved into the
 * retired sum when it exited). Prometheus reads any drop of a counter as a reset and counts the
 * whole total again as new increase: `rate(x_sum)` spikes. A value below the one shown last by
 * no more than a rounding step is shown as that last value; any real drop (a series that ended
 * and came back from 0, documented in metrics.md) goes through as it is. Of a histogram family sent
 * as its parts, only the `_sum` is watched: its bucket counts and count, sums of whole numbers,
 * are exact in any order.
 */

/** Relative size of a drop taken for rounding: sums of a few hundred terms differ far less, resets far more. */
const ROUNDING = 1e-9;

/** A value shown, as written and as a number. */
interface Shown {
  readonly text: string;
  readonly value: number;
}

/**
 * The values shown by series, scrape after scrape: begin() a scrape's text, shown() for each
 * counter and histogram line it watches (of a histogram sent as parts, the `_sum` alone), end()
 * once it is written.
 */
export class MonotoneSeries {
  /** Value shown last, by series (name and labels as written). */
  private last = new Map<string, Shown>();
  private seen = new Map<string, Shown>();

  /** A scrape's text begins: a series not shown again by end() starts afresh when it comes back. */
  begin(): void {
    this.seen = new Map();
  }

  /** The text to write for `series` (name and labels as written), of value `value` written `text`: the last one shown when this one is below it by a rounding step. */
  shown(series: string, value: number, text: string): string {
    const before = this.last.get(series);
    // A last value not finite (+Inf) holds no later one: any drop from it is real.
    if (before !== undefined && Number.isFinite(before.value) && value < before.value && before.value - value <= Math.abs(before.value) * ROUNDING) {
      this.seen.set(series, before);
      return before.text;
    }
    this.seen.set(series, { text, value });
    return text;
  }

  /** The scrape's text is written: only its series are kept. */
  end(): void {
    this.last = this.seen;
    this.seen = new Map();
  }
}
