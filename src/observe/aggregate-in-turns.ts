/**
 * The workers' metrics summed into one exposition text, as prom-client's
 * AggregatorRegistry.aggregate(lists).metrics() gives it, one metric at a time with a turn of the
 * event loop between two. The primary answers its workers' heartbeats and its other messages in
 * those turns: summed whole, a scrape of many series (thousands of routes with traffic, about 60
 * series each) held its event loop for seconds, its workers' heartbeats went unanswered and every
 * worker's /readyz answered 503 (docs/metrics.md, "Series per route").
 */
import { AggregatorRegistry } from 'prom-client';
import type { MetricJson } from './metrics-series.js';

/** The text of `lists` (one per worker) summed; the same text as aggregating them at once. */
export async function aggregateInTurns(lists: readonly (readonly MetricJson[])[]): Promise<string> {
  // Each metric's parts, one per list that has it, in the order the names first appear (as aggregate orders them).
  const byName = new Map<string, MetricJson[][]>();
  for (const list of lists) {
    for (const m of list) {
      const parts = byName.get(m.name);
      if (parts === undefined) byName.set(m.name, [[m]]);
      else parts.push([m]);
    }
  }
  const texts: string[] = [];
  for (const parts of byName.values()) {
    if (texts.length > 0) await new Promise<void>((resolve) => setImmediate(resolve));
    // A registry's text is its metrics' joined by a blank line, then a newline: each one's text
    // alone ends with that newline, so joining them by one more gives the text of all at once. A
    // metric the sum leaves out (prom-client's `omit` aggregator) gives a registry of none: "\n".
    const text = await AggregatorRegistry.aggregate(parts as never).metrics();
    if (text !== '\n') texts.push(text);
  }
  return texts.length === 0 ? await AggregatorRegistry.aggregate([]).metrics() : texts.join('\n');
}

/**
 * Sums made one after another, each in turns (aggregateInTurns), with at most one waiting. Summed
 * in turns, a scrape no longer holds the primary, so scrapes could overlap: each would hold its
 * workers' lists and take longer beside the others, and one taking longer than the scrape
 * interval would pile up without end. A scrape that comes while one sum runs and another waits is
 * refused at once (null).
 */
export class SumsOneAtATime {
  private tail: Promise<void> = Promise.resolve();
  private queued = 0;

  sum(lists: readonly (readonly MetricJson[])[]): Promise<string> | null {
    if (this.queued >= 2) return null;
    this.queued++;
    const text = this.tail.then(() => aggregateInTurns(lists));
    this.tail = text.then(() => undefined, () => undefined).then(() => {
      this.queued--;
    });
    return text;
  }
}
