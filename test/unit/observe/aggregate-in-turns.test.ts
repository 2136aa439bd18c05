/**
 * The primary's sum of its workers' metrics (aggregate-in-turns.ts): the text prom-client's
 * AggregatorRegistry gives for all of them at once, made one metric per turn of the event loop.
 */
import { describe, expect, it } from 'vitest';
import { AggregatorRegistry } from 'prom-client';
import { aggregateInTurns, SumsOneAtATime } from '../../../src/observe/aggregate-in-turns.js';
import type { MetricJson, MetricValue } from '../../../src/observe/metrics-series.js';
import { mulberry32 } from '../../helpers/mulberry32.js';

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

  it('a metric of many values is summed in parts of whole label sets, a turn each: the same text', async () => {
    const rand = mulberry32(21);
    for (let k = 0; k < 30; k++) {
      const lists = Array.from({ length: 1 + Math.floor(rand() * 3) }, () => workerList(rand));
      const whole = await AggregatorRegistry.aggregate(lists as never).metrics();
      for (const perTurn of [1, 3, 7, 40]) expect(await aggregateInTurns(lists, perTurn), `round ${k}, ${perTurn} a turn`).toBe(whole);
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
    const text = await aggregateInTurns([big, big], 25);
    stop = true;
    expect(text).toBe(await AggregatorRegistry.aggregate([big, big] as never).metrics());
    expect(turns).toBeGreaterThanOrEqual(9);
  });
});
