/**
 * The workers' metrics summed into one exposition text: the text prom-client's
 * AggregatorRegistry.aggregate(lists).metrics() gives for the same lists (each histogram family's
 * parts made into prom-client's JSON), made here, in turns of the primary's event loop. One
 * difference: prom-client keys a label set as `name:value,` pairs, so two sets whose values hold
 * `,` or `:` can make one key (`{a="x,b:y",b="z"}` and `{a="x",b="y,b:z"}`) and be summed as one
 * series; here they stay two.
 *
 * - Made here: prom-client's sum takes a value per line, with a label set hashed for each (a
 *   histogram by route is 20 lines a route), and its text is read again line by line to keep
 *   counters from going down by a rounding step (metrics-monotone.ts). Here a histogram family's
 *   parts (metrics-series.ts) are summed a series at a time (its bucket counts added as an array)
 *   and its lines are written once, the rounding check in the same pass. Summed by prom-client,
 *   a scrape of 5,000 routes in use took 2.2–2.6 s, 0.49–0.62 s now (docs/metrics.md, "Series
 *   per route").
 * - In turns: one metric at a time, and at most about VALUES_PER_TURN lines in one turn, so the
 *   primary answers its workers' heartbeats and other messages meanwhile. Summed whole, a scrape of
 *   many series held its event loop for seconds, its workers' heartbeats went unanswered and every
 *   worker's /readyz answered 503.
 */
import { histogramJson, isHistogramParts, type HistogramParts, type LabelValues, type MetricValue } from './metrics-series.js';
import { addToSeriesSum, labelSetKey, sameBuckets, seriesSum, type SentMetric, type SeriesSum } from './sent-metric.js';
import type { MonotoneSeries } from './metrics-monotone.js';

/** Lines of the exposition summed in one turn at most, about (a histogram series counts its every line). */
export const VALUES_PER_TURN = 20_000;

/** How a metric's values are combined across lists: prom-client's aggregators, by name (`omit` leaves the metric out). */
const AGGREGATORS = new Set(['sum', 'max', 'min', 'first', 'average', 'omit']);

/** A label set's value so far: its first value's labels (and line name), the values combined. */
interface ValueSum {
  readonly labels: LabelValues;
  readonly metricName: string | undefined;
  value: number;
  n: number;
}

/** Counts lines summed and lets the event loop turn after each `perTurn`. */
class Turns {
  private lines = 0;
  constructor(private readonly perTurn: number) {}

  /** Counts `n` lines; true once a turn is due (then await nextTurn()). */
  add(n: number): boolean {
    this.lines += n;
    if (this.lines < this.perTurn) return false;
    this.lines = 0;
    return true;
  }
}

export interface AggregateOptions {
  /** Lines summed in one turn at most (default VALUES_PER_TURN). */
  valuesPerTurn?: number;
  /** Shows no counter or histogram line lower than its last by a rounding step (metrics-monotone.ts). */
  monotone?: MonotoneSeries;
}

/** The text of `lists` (one per worker) summed, as prom-client's sum of them gives it. */
export async function aggregateInTurns(lists: readonly (readonly SentMetric[])[], opts: AggregateOptions = {}): Promise<string> {
  const turns = new Turns(opts.valuesPerTurn ?? VALUES_PER_TURN);
  const monotone = opts.monotone ?? null;
  // Each metric's parts, one per list that has it, in the order the names first appear (as prom-client orders them).
  const byName = new Map<string, SentMetric[]>();
  for (const list of lists) {
    for (const m of list) {
      const parts = byName.get(m.name);
      if (parts === undefined) byName.set(m.name, [m]);
      else parts.push(m);
    }
  }
  monotone?.begin();
  const texts: string[] = [];
  let first = true;
  for (const parts of byName.values()) {
    if (!first) await nextTurn();
    first = false;
    const aggregator: string = parts[0].aggregator;
    if (!AGGREGATORS.has(aggregator)) throw new Error(`'${aggregator}' is not a defined aggregator.`);
    if (aggregator === 'omit') continue;
    const watched = monotone !== null && (parts[0].type === 'counter' || parts[0].type === 'histogram') ? monotone : null;
    const asParts = histogramParts(parts);
    texts.push(asParts !== null ? await histogramText(asParts, turns, watched) : await valuesText(parts, aggregator, turns, watched));
  }
  monotone?.end();
  // A registry's text: its metrics' joined by a blank line, then a newline.
  return `${texts.join('\n\n')}\n`;
}

/** The parts of a histogram family summed series by series (all parts, its buckets alike, summed), else null. */
function histogramParts(parts: readonly SentMetric[]): HistogramParts[] | null {
  const h = parts[0];
  if (!isHistogramParts(h) || h.aggregator !== 'sum') return null;
  for (const p of parts) if (!isHistogramParts(p) || !sameBuckets(p.le, h.le)) return null;
  return parts as HistogramParts[];
}

async function histogramText(parts: readonly HistogramParts[], turns: Turns, monotone: MonotoneSeries | null): Promise<string> {
  const h = parts[0];
  const lines = h.le.length + 2;
  const byKey = new Map<string, SeriesSum>();
  for (const p of parts) {
    for (const s of p.series) {
      const key = labelSetKey(s.labels);
      const had = byKey.get(key);
      if (had === undefined) byKey.set(key, seriesSum(s));
      else addToSeriesSum(had, s);
      if (turns.add(lines)) await nextTurn();
    }
  }
  const bucket = `${h.name}_bucket`;
  const le = h.le.map((b) => `le="${escapeLabelValue(b)}"`);
  const out: string[] = [header(h)];
  for (const s of byKey.values()) {
    const inner = labelsInner(s.labels);
    const open = inner === '' ? `${bucket}{` : `${bucket}{${inner},`;
    const braces = inner === '' ? '' : `{${inner}}`;
    // Bucket counts and the count are sums of whole numbers, exact in any order: no rounding to hide.
    let acc = 0;
    for (let i = 0; i < le.length; i++) {
      acc += s.counts[i];
      out.push(`${open}${le[i]}} ${valueText(acc)}`);
    }
    const sumSeries = `${h.name}_sum${braces}`;
    const sum = valueText(s.sum);
    out.push(`${sumSeries} ${monotone === null ? sum : monotone.shown(sumSeries, s.sum, sum)}`);
    out.push(`${h.name}_count${braces} ${valueText(s.count)}`);
    if (turns.add(lines)) await nextTurn();
  }
  return out.join('\n');
}

async function valuesText(parts: readonly SentMetric[], aggregator: string, turns: Turns, monotone: MonotoneSeries | null): Promise<string> {
  const byKey = new Map<string, ValueSum>();
  for (const p of parts) {
    const values: readonly MetricValue[] = isHistogramParts(p) ? histogramJson(p).values : p.values;
    for (const v of values) {
      const key = `${v.metricName ?? ''}\u0002${labelSetKey(v.labels)}`;
      const had = byKey.get(key);
      if (had === undefined) byKey.set(key, { labels: v.labels, metricName: v.metricName, value: combine(aggregator, startOf(aggregator), v.value, true), n: 1 });
      else {
        had.value = combine(aggregator, had.value, v.value, false);
        had.n++;
      }
      if (turns.add(1)) await nextTurn();
    }
  }
  const name = escapeString(parts[0].name);
  const out: string[] = [header(parts[0])];
  for (const s of byKey.values()) {
    const value = aggregator === 'average' ? s.value / s.n : s.value;
    const series = `${s.metricName ?? name}${labelsBraced(s.labels)}`;
    const text = valueText(value);
    out.push(`${series} ${monotone === null ? text : monotone.shown(series, value, text)}`);
    if (turns.add(1)) await nextTurn();
  }
  return out.join('\n');
}

/** What an aggregator starts from (prom-client reduces from it). */
function startOf(aggregator: string): number {
  return aggregator === 'max' ? -Infinity : aggregator === 'min' ? Infinity : 0;
}

/** `acc` combined with one more value `v` (`firstValue`: the label set's first), as prom-client's aggregators reduce. */
function combine(aggregator: string, acc: number, v: number, firstValue: boolean): number {
  switch (aggregator) {
    case 'max':
      return Math.max(acc, v);
    case 'min':
      return Math.min(acc, v);
    case 'first':
      return firstValue ? v : acc;
    default: // sum, average (divided by the count when written)
      return acc + v;
  }
}

/** The # HELP and # TYPE lines of a metric, as prom-client writes them. */
function header(m: SentMetric): string {
  const name = escapeString(m.name);
  return `# HELP ${name} ${escapeString(m.help)}\n# TYPE ${name} ${m.type}`;
}

/** A label set as prom-client writes it after a line's name: `{a="1",b="2"}`, or nothing. */
function labelsBraced(labels: LabelValues): string {
  const inner = labelsInner(labels);
  return inner === '' ? '' : `{${inner}}`;
}

function labelsInner(labels: LabelValues): string {
  let inner = '';
  for (const name in labels) {
    if (!Object.hasOwn(labels, name)) continue;
    if (inner !== '') inner += ',';
    inner += `${name}="${escapeLabelValue(labels[name])}"`;
  }
  return inner;
}

/** A number as prom-client writes it. */
function valueText(v: number): string {
  if (Number.isNaN(v)) return 'Nan';
  if (!Number.isFinite(v)) return v < 0 ? '-Inf' : '+Inf';
  return `${v}`;
}

const NEEDS_ESCAPE = /[\\\n"]/;

function escapeString(s: string): string {
  return s.replace(/\\/g, '\\\\').replace(/\n/g, '\\n');
}

function escapeLabelValue(v: unknown): unknown {
  if (typeof v !== 'string' || !NEEDS_ESCAPE.test(v)) return v;
  return escapeString(v).replace(/"/g, '\\"');
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

  constructor(private readonly opts: AggregateOptions = {}) {}

  sum(lists: readonly (readonly SentMetric[])[]): Promise<string> | null {
    if (this.queued >= 2) return null;
    this.queued++;
    const text = this.tail.then(() => aggregateInTurns(lists, this.opts));
    this.tail = text.then(() => undefined, () => undefined).then(() => {
      this.queued--;
    });
    return text;
  }
}
