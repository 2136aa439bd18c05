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

/**
 * Values of one metric summed in one turn at most, about: a metric with more (a histogram by route
 * with thousands of routes in use: 20 values a route) is summed in parts of whole label sets, one a
 * turn, so that no single turn holds the primary for long.
 */
export const VALUES_PER_TURN = 20_000;

/** The text of `lists` (one per worker) summed; the same text as aggregating them at once. */
export async function aggregateInTurns(lists: readonly (readonly MetricJson[])[], valuesPerTurn = VALUES_PER_TURN): Promise<string> {
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
    if (texts.length > 0) await nextTurn();
    // A registry's text is its metrics' joined by a blank line, then a newline: each one's text
    // alone ends with that newline, so joining them by one more gives the text of all at once. A
    // metric the sum leaves out (prom-client's `omit` aggregator) gives a registry of none: "\n".
    const text = await metricText(parts, valuesPerTurn);
    if (text !== '\n') texts.push(text);
  }
  return texts.length === 0 ? await AggregatorRegistry.aggregate([]).metrics() : texts.join('\n');
}

/** One metric's parts (one per list that has it) summed: at once, or in turns of whole label sets. */
async function metricText(parts: MetricJson[][], valuesPerTurn: number): Promise<string> {
  let values = 0;
  for (const [m] of parts) values += m.values.length;
  if (values <= valuesPerTurn) return AggregatorRegistry.aggregate(parts as never).metrics();
  // The label sets (a histogram's without `le`: its buckets, sum and count stay together) in the
  // order they first appear, as the sum orders its lines, cut into runs of about valuesPerTurn.
  const runOf = new Map<string, number>();
  let run = 0;
  let inRun = 0;
  const split: MetricJson[][][] = [];
  for (const [m] of parts) {
    const byRun: MetricJson[] = [];
    for (const v of m.values) {
      const key = labelSetKey(v.labels);
      let r = runOf.get(key);
      if (r === undefined) {
        if (inRun >= valuesPerTurn) {
          run++;
          inRun = 0;
        }
        r = run;
        runOf.set(key, r);
      }
      inRun++;
      (byRun[r] ??= { ...m, values: [] }).values.push(v);
    }
    byRun.forEach((part, r) => (split[r] ??= []).push([part]));
  }
  let text = '';
  for (let r = 0; r < split.length; r++) {
    if (r > 0) await nextTurn();
    const t = await AggregatorRegistry.aggregate(split[r] as never).metrics();
    if (t === '\n') continue; // a metric the sum leaves out: every part is
    // Each part's text starts with the metric's # HELP and # TYPE lines: the first part's only.
    text += text === '' ? t : t.slice(t.indexOf('\n', t.indexOf('\n') + 1) + 1);
  }
  return text === '' ? '\n' : text;
}

/** A value's label set without `le`, as one string (the names in order, as prom-client hashes them). */
function labelSetKey(labels: Readonly<Record<string, string | number>>): string {
  const names = Object.keys(labels).filter((n) => n !== 'le').sort();
  let key = '';
  for (const n of names) key += `${n}\u0000${labels[n]}\u0001`;
  return key;
}

/** Resolves in the event loop's next turn, once the I/O waiting (a worker's heartbeat) is read. */
function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
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
