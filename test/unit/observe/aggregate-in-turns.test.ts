/**
 * The primary's sum of its workers' metrics (aggregate-in-turns.ts): the text prom-client's
 * AggregatorRegistry gives for all of them at once (histogram families sent as their parts made
 * into prom-client's JSON), made one metric per turn of the event loop.
 */
import { describe, expect, it } from 'vitest';
import { AggregatorRegistry } from 'prom-client';
import { aggregateInTurns, SumsOneAtATime } from '../../../src/observe/aggregate-in-turns.js';
import { MonotoneSeries } from '../../../src/observe/metrics-monotone.js';
import { histogramJson, isHistogramParts, type HistogramParts, type MetricJson, type MetricValue } from '../../../src/observe/metrics-series.js';
import type { SentMetric } from '../../../src/observe/sent-metric.js';
import { mulberry32 } from '../../helpers/mulberry32.js';

/** prom-client's text of the lists, its parts made into its JSON first. */
function promClientText(lists: readonly SentMetric[][]): Promise<string> {
  return AggregatorRegistry.aggregate(lists.map((l) => l.map((m) => (isHistogramParts(m) ? histogramJson(m) : m))) as never).metrics();
}

/** Label values a route may have: plain, and with what the exposition escapes. */
const ODD = ['a"b', 'c\\d', 'e\nf', 'plain', ''];

/** A histogram family as a worker sends it: some routes (one with no labels at all), whole-number bucket counts, float sums. */
function partsList(rand: () => number, name = 'p_seconds'): HistogramParts {
  const le = ['0.005', '0.1', '1', '+Inf'];
  const series = Array.from({ length: Math.floor(rand() * 6) }, () => {
    const counts = le.map(() => Math.floor(rand() * 5));
    return {
      labels: (rand() < 0.1 ? {} : { route: `ns/r${Math.floor(rand() * 8)}`, model: ODD[Math.floor(rand() * ODD.length)] }) as Record<string, string>,
      counts, sum: rand() * 3, count: counts.reduce((a, b) => a + b, 0),
    };
  });
  return { name, help: 'p help with a \\ and a\nnewline', type: 'histogram', aggregator: 'sum', le, series };
}

/** A list with what prom-client's sum treats apart: other aggregators, values not finite, label values to escape. */
function oddList(rand: () => number): SentMetric[] {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)];
  const value = (): number => pick([1, 2.5, -3, 0, Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, 0.1, 1e21]);
  const gauge = (name: string, aggregator: string): MetricJson => ({
    name, help: `${name} help`, type: 'gauge', aggregator: aggregator as MetricJson['aggregator'],
    values: Array.from({ length: 1 + Math.floor(rand() * 3) }, () => ({ labels: (rand() < 0.2 ? {} : { store: pick(ODD), b: pick(['1', '2']) }) as Record<string, string>, value: value() })),
  });
  return [gauge('g_max', 'max'), gauge('g_min', 'min'), gauge('g_first', 'first'), gauge('g_avg', 'average'), partsList(rand), gauge('g_sum', 'sum')].filter(() => rand() < 0.85);
}

/** One worker's answer: counters, a gauge taken as the max, and a histogram, some routes each, some metrics missing. */
function workerList(rand: () => number): MetricJson[] {
  const routes = (n: number): string[] => Array.from({ length: n }, (_, i) => `ns/r${Math.floor(rand() * 40) + i}`);
  const counter = (name: string): MetricJson => ({
    name, help: `${name} help`, type: 'counter', aggregator: 'sum',
    values: routes(1 + Math.floor(rand() * 5)).map((route) => ({ labels: { route, status: rand() < 0.5 ? '200' : '429' }, value: Math.floor(rand() * 100) })),
  });
  const histogram: MetricJson = {
    name: 'h_seconds', help: 'h help', type: 'histogram', aggregator: 'sum',
    values: routes(3).flatMap((route): MetricValue[] => [
      ...['0.1', '1', '+Inf'].map((le, i) => ({ metricName: 'h_seconds_bucket', labels: { route, le }, value: 10 * (i + 1) })),
      { metricName: 'h_seconds_sum', labels: { route }, value: rand() * 9 },
      { metricName: 'h_seconds_count', labels: { route }, value: 30 },
    ]),
  };
  const gauge: MetricJson = { name: 'build_info', help: 'b', type: 'gauge', aggregator: 'max', values: [{ labels: { version: '1' }, value: 1 }] };
  return [counter('a_total'), ...(rand() < 0.5 ? [counter('b_total')] : []), histogram, gauge, counter('c_total')].filter(() => rand() < 0.9);
}

describe('aggregateInTurns', () => {
  it('gives the text of summing every list at once, for random workers\' answers', async () => {
    const rand = mulberry32(11);
    for (let k = 0; k < 50; k++) {
      const lists = Array.from({ length: 1 + Math.floor(rand() * 4) }, () => workerList(rand));
      const whole = await AggregatorRegistry.aggregate(lists as never).metrics();
      expect(await aggregateInTurns(lists)).toBe(whole);
    }
    expect(await aggregateInTurns([])).toBe(await AggregatorRegistry.aggregate([]).metrics());
    // A metric the sum leaves out (prom-client's `omit` aggregator), between two others.
    const omitted = [workerList(mulberry32(5)).map((m, i) => (i === 1 ? { ...m, aggregator: 'omit' } : m))] as unknown as MetricJson[][];
    expect(await aggregateInTurns(omitted)).toBe(await AggregatorRegistry.aggregate(omitted as never).metrics());
  });

  it('gives prom-client\'s text for histogram parts, other aggregators, values not finite and label values to escape', async () => {
    const rand = mulberry32(17);
    for (let k = 0; k < 200; k++) {
      const lists = Array.from({ length: 1 + Math.floor(rand() * 4) }, () => oddList(rand));
      const whole = await promClientText(lists);
      expect(await aggregateInTurns(lists), `round ${k}`).toBe(whole);
      expect(await aggregateInTurns(lists, { valuesPerTurn: 3 }), `round ${k}, 3 a turn`).toBe(whole);
    }
    // A family sent as parts by one worker and as prom-client's JSON by another, or with other buckets: summed as values, the same text.
    const rand2 = mulberry32(4);
    const a = partsList(rand2, 'mixed_seconds');
    const b = partsList(rand2, 'mixed_seconds');
    const otherBuckets: HistogramParts = { ...b, le: ['0.5', '+Inf'], series: b.series.map((x) => ({ ...x, counts: [x.counts[0], x.counts[1] + x.counts[2] + x.counts[3]] })) };
    for (const lists of [[[a], [histogramJson(b)]], [[histogramJson(a)], [b]], [[a], [otherBuckets]]] as SentMetric[][][]) {
      expect(await aggregateInTurns(lists)).toBe(await promClientText(lists));
    }
    await expect(aggregateInTurns([[{ ...a, aggregator: 'median' as never }]])).rejects.toThrow("'median' is not a defined aggregator.");
    // A sum not finite in the worker comes through IPC's JSON as null: the text prom-client gives (0), alone and summed.
    expect(a.series.length).toBeGreaterThan(1);
    const nan: HistogramParts = JSON.parse(JSON.stringify({ ...a, series: a.series.map((x, i) => ({ ...x, sum: i === 0 ? Number.NaN : Number.POSITIVE_INFINITY })) }));
    for (const lists of [[[nan]], [[nan], [a]], [[a], [nan]]] as SentMetric[][][]) expect(await aggregateInTurns(lists)).toBe(await promClientText(lists));
  });

  it('with a MonotoneSeries, shows no counter or histogram sum below its last by a rounding step', async () => {
    const hist = (sum: number): HistogramParts => ({ name: 'd_seconds', help: 'h', type: 'histogram', aggregator: 'sum', le: ['1', '+Inf'], series: [{ labels: { route: 'r' }, counts: [1, 0], sum, count: 1 }] });
    const counter = (value: number): MetricJson => ({ name: 'c_total', help: 'h', type: 'counter', aggregator: 'sum', values: [{ labels: { pod: 'a' }, value }] });
    const gauge = (value: number): MetricJson => ({ name: 'g', help: 'h', type: 'gauge', aggregator: 'sum', values: [{ labels: {}, value }] });
    const monotone = new MonotoneSeries();
    const first = await aggregateInTurns([[hist(24.872294816999975), counter(5.1), gauge(0.30000000000000004)]], { monotone });
    expect(first).toContain('d_seconds_sum{route="r"} 24.872294816999975\n');
    // A unit in the last place lower: the last shown; a gauge goes through as it is.
    const second = await aggregateInTurns([[hist(24.872294816999972), counter(5.099999999999999), gauge(0.3)]], { monotone });
    expect(second).toContain('d_seconds_sum{route="r"} 24.872294816999975\n');
    expect(second).toContain('c_total{pod="a"} 5.1\n');
    expect(second).toContain('g 0.3\n');
    // A real drop goes through; without the MonotoneSeries, every value as summed.
    expect(await aggregateInTurns([[hist(1.5), counter(0)]], { monotone })).toContain('d_seconds_sum{route="r"} 1.5\n');
    expect(await aggregateInTurns([[hist(24.872294816999972)]])).toContain('d_seconds_sum{route="r"} 24.872294816999972\n');
  });

  it('lets the event loop turn between two metrics (the primary answers heartbeats meanwhile)', async () => {
    const lists = [workerList(mulberry32(3)), workerList(mulberry32(4))];
    const names = new Set(lists.flat().map((m) => m.name)).size;
    expect(names).toBeGreaterThan(2);
    let turns = 0;
    let stop = false;
    const tick = (): void => {
      turns++;
      if (!stop) setImmediate(tick);
    };
    setImmediate(tick);
    await aggregateInTurns(lists);
    stop = true;
    expect(turns).toBeGreaterThanOrEqual(names - 1);
  });

  it('SumsOneAtATime: one sum at a time, one waiting; a third meanwhile is refused; then sums are taken again', async () => {
    const sums = new SumsOneAtATime();
    const lists = [workerList(mulberry32(8)), workerList(mulberry32(9))];
    const whole = await AggregatorRegistry.aggregate(lists as never).metrics();
    const order: string[] = [];
    const first = sums.sum(lists)!.then((t) => { order.push('first'); return t; });
    const second = sums.sum(lists)!.then((t) => { order.push('second'); return t; });
    expect(sums.sum(lists)).toBeNull();
    expect(await Promise.all([second, first])).toEqual([whole, whole]);
    expect(order).toEqual(['first', 'second']);
    await new Promise((r) => setImmediate(r));
    expect(await sums.sum(lists)).toBe(whole);
  });

  it('a metric of many values is summed across turns of about valuesPerTurn lines each: the same text', async () => {
    const rand = mulberry32(21);
    for (let k = 0; k < 30; k++) {
      const lists = Array.from({ length: 1 + Math.floor(rand() * 3) }, () => workerList(rand));
      const whole = await AggregatorRegistry.aggregate(lists as never).metrics();
      for (const perTurn of [1, 3, 7, 40]) expect(await aggregateInTurns(lists, { valuesPerTurn: perTurn }), `round ${k}, ${perTurn} a turn`).toBe(whole);
    }
    // The turns: a histogram of 50 routes (20 values each) in parts of 100 values takes about 10.
    const big: MetricJson[] = [{
      name: 'big_seconds', help: 'h', type: 'histogram', aggregator: 'sum',
      values: Array.from({ length: 50 }, (_, i) => `ns/r${i}`).flatMap((route): MetricValue[] => [
        ...['0.1', '1', '+Inf'].map((le) => ({ metricName: 'big_seconds_bucket', labels: { route, le }, value: 1 })),
        { metricName: 'big_seconds_sum', labels: { route }, value: 1 },
        { metricName: 'big_seconds_count', labels: { route }, value: 1 },
      ]),
    }];
    let turns = 0;
    let stop = false;
    const tick = (): void => { turns++; if (!stop) setImmediate(tick); };
    setImmediate(tick);
    const text = await aggregateInTurns([big, big], { valuesPerTurn: 25 });
    stop = true;
    expect(text).toBe(await AggregatorRegistry.aggregate([big, big] as never).metrics());
    expect(turns).toBeGreaterThanOrEqual(9);
    // The same histogram as parts (5 lines a series): a turn each 5 series, summed and written.
    const parts: HistogramParts = { name: 'big_seconds', help: 'h', type: 'histogram', aggregator: 'sum', le: ['0.1', '1', '+Inf'], series: Array.from({ length: 50 }, (_, i) => ({ labels: { route: `ns/r${i}` }, counts: [1, 0, 0], sum: 1, count: 1 })) };
    turns = 0;
    stop = false;
    setImmediate(tick);
    const partsText = await aggregateInTurns([[parts], [parts]], { valuesPerTurn: 25 });
    stop = true;
    expect(partsText).toBe(text);
    expect(turns).toBeGreaterThanOrEqual(25);
  });
});

describe('aggregateInTurns where prom-client\'s key is not a label set', () => {
  it('two label sets whose values make one prom-client key (a "," or ":" in them) stay two series', async () => {
    const m = (labels: Record<string, string>): MetricJson => ({ name: 'c_total', help: 'h', type: 'counter', aggregator: 'sum', values: [{ labels, value: 1 }] });
    const text = await aggregateInTurns([[m({ a: 'x,b:y', b: 'z' })], [m({ a: 'x', b: 'y,b:z' })]]);
    expect(text).toContain('c_total{a="x,b:y",b="z"} 1\n');
    expect(text).toContain('c_total{a="x",b="y,b:z"} 1\n');
  });
});
