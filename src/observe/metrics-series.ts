/**
 * Metric families for the hot path. prom-client's own metrics hash the label object on every
 * inc()/observe(), even through a cached labels() child (~1.6 µs for one request's five updates,
 * bench/metrics-micro.ts); these keep one plain object per label set, so an update is a field
 * increment or a bucket search. They implement the shape prom-client's Registry expects of a
 * metric (name, help, type, aggregator, get(), reset()), so exposition, getMetricsAsJSON() and
 * AggregatorRegistry.aggregate() are prom-client's.
 */

export type LabelValues = Record<string, string>;

/** One value of prom-client's metric JSON (getMetricsAsJSON / aggregate input). */
export interface MetricValue {
  labels: LabelValues;
  value: number;
  metricName?: string;
}

export interface MetricJson {
  name: string;
  help: string;
  type: 'counter' | 'gauge' | 'histogram';
  values: MetricValue[];
  /** How prom-client's AggregatorRegistry combines workers: sum, max (build_info stays 1) or min (a store is up only where every worker reaches it). */
  aggregator: 'sum' | 'max' | 'min';
}

/** What prom-client's Registry.registerMetric() needs. */
export interface RegistrableMetric {
  readonly name: string;
  readonly help: string;
  readonly type: MetricJson['type'];
  readonly aggregator: MetricJson['aggregator'];
  get(): Promise<MetricJson>;
  reset(): void;
}

function labelsOf(names: readonly string[], values: readonly string[]): LabelValues {
  if (values.length !== names.length) throw new Error(`expected ${names.length} label values (${names.join(', ')}), got ${values.length}`);
  const labels: LabelValues = {};
  for (let i = 0; i < names.length; i++) labels[names[i]] = values[i];
  return labels;
}

export class CounterSeries {
  value = 0;
  constructor(readonly labels: LabelValues) {}
}

/** A counter family; children are created once per label set and kept. */
export class CounterFamily implements RegistrableMetric {
  readonly type = 'counter';
  readonly aggregator = 'sum';
  private readonly byKey = new Map<string, CounterSeries>();

  constructor(readonly name: string, readonly help: string, readonly labelNames: readonly string[]) {}

  /** The child for these label values (slow path: call once, keep the result). */
  child(...values: string[]): CounterSeries {
    const key = values.join('\u0000');
    let s = this.byKey.get(key);
    if (s === undefined) {
      s = new CounterSeries(labelsOf(this.labelNames, values));
      this.byKey.set(key, s);
    }
    return s;
  }

  /** The child of a family with one label, for this value (the same child as child(value), without its array). */
  childOf(value: string): CounterSeries {
    let s = this.byKey.get(value);
    if (s === undefined) {
      s = new CounterSeries(labelsOf(this.labelNames, [value]));
      this.byKey.set(value, s);
    }
    return s;
  }

  async get(): Promise<MetricJson> {
    const values: MetricValue[] = [];
    for (const s of this.byKey.values()) values.push({ labels: s.labels, value: s.value });
    return { name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator };
  }

  reset(): void {
    for (const s of this.byKey.values()) s.value = 0;
  }
}

export class HistogramSeries {
  /** Per-bucket (not cumulative) counts; the last slot is +Inf. */
  readonly counts: Float64Array;
  sum = 0;
  count = 0;

  constructor(readonly labels: LabelValues, private readonly bounds: Float64Array) {
    this.counts = new Float64Array(bounds.length + 1);
  }

  observe(v: number): void {
    const b = this.bounds;
    let i = 0;
    while (i < b.length && v > b[i]) i++;
    this.counts[i]++;
    this.sum += v;
    this.count++;
  }
}

export class HistogramFamily implements RegistrableMetric {
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  private readonly bounds: Float64Array;
  private readonly le: string[];
  private readonly byKey = new Map<string, HistogramSeries>();

  constructor(readonly name: string, readonly help: string, readonly labelNames: readonly string[], buckets: readonly number[]) {
    for (let i = 1; i < buckets.length; i++) if (!(buckets[i] > buckets[i - 1])) throw new Error(`${name}: buckets must increase`);
    this.bounds = Float64Array.from(buckets);
    this.le = [...buckets.map(String), '+Inf'];
  }

  child(...values: string[]): HistogramSeries {
    const key = values.join('\u0000');
    let s = this.byKey.get(key);
    if (s === undefined) {
      s = new HistogramSeries(labelsOf(this.labelNames, values), this.bounds);
      this.byKey.set(key, s);
    }
    return s;
  }

  /** The child of a family with one label, for this value (the same child as child(value), without its array). */
  childOf(value: string): HistogramSeries {
    let s = this.byKey.get(value);
    if (s === undefined) {
      s = new HistogramSeries(labelsOf(this.labelNames, [value]), this.bounds);
      this.byKey.set(value, s);
    }
    return s;
  }

  async get(): Promise<MetricJson> {
    return histogramJson(this.parts());
  }

  /** Its series as a worker sends them to the primary (HistogramParts). */
  parts(): HistogramParts {
    const series: HistogramPart[] = [];
    for (const s of this.byKey.values()) series.push({ labels: s.labels, counts: Array.from(s.counts), sum: s.sum, count: s.count });
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, le: this.le, series };
  }

  reset(): void {
    for (const s of this.byKey.values()) {
      s.counts.fill(0);
      s.sum = 0;
      s.count = 0;
    }
  }
}

/** A gauge or counter whose values are read from elsewhere at scrape time. */
export class CollectedFamily implements RegistrableMetric {
  constructor(
    readonly name: string,
    readonly help: string,
    readonly type: 'counter' | 'gauge',
    private readonly collect: () => MetricValue[],
    readonly aggregator: MetricJson['aggregator'] = 'sum',
  ) {}

  async get(): Promise<MetricJson> {
    return { name: this.name, help: this.help, type: this.type, values: this.collect(), aggregator: this.aggregator };
  }

  reset(): void {}
}

/** One series of a HistogramParts: its bucket counts as kept (each bucket's own, the last +Inf), its sum and count. */
export interface HistogramPart {
  readonly labels: LabelValues;
  readonly counts: readonly number[];
  readonly sum: number;
  readonly count: number;
}

/**
 * A histogram family as a worker sends it to the primary (metrics-cluster.ts): an entry a series,
 * where prom-client's JSON has a value with its own labels for each bucket, the sum and the count
 * (20 for the router's latency histograms): about a tenth of the JSON to write, send and read, at
 * the same information. histogramJson() makes prom-client's JSON of it.
 */
export interface HistogramParts {
  readonly name: string;
  readonly help: string;
  readonly type: 'histogram';
  readonly aggregator: MetricJson['aggregator'];
  /** The buckets' upper bounds as exposed, the last `+Inf`. */
  readonly le: readonly string[];
  readonly series: readonly HistogramPart[];
}

/** True for a HistogramParts (what a metric's JSON never has: `le` and `series`). */
export function isHistogramParts(m: MetricJson | HistogramParts): m is HistogramParts {
  return Array.isArray((m as HistogramParts).series) && Array.isArray((m as HistogramParts).le);
}

/** prom-client's JSON of a histogram: cumulative buckets labelled `le`, then `_sum` and `_count`, series by series. */
export function histogramJson(h: HistogramParts): MetricJson {
  const values: MetricValue[] = [];
  const bucket = `${h.name}_bucket`;
  const sum = `${h.name}_sum`;
  const count = `${h.name}_count`;
  for (const s of h.series) {
    let acc = 0;
    for (let i = 0; i < h.le.length; i++) {
      acc += s.counts[i];
      values.push({ labels: { ...s.labels, le: h.le[i] }, value: acc, metricName: bucket });
    }
    values.push({ labels: s.labels, value: s.sum, metricName: sum });
    values.push({ labels: s.labels, value: s.count, metricName: count });
  }
  return { name: h.name, help: h.help, type: 'histogram', values, aggregator: h.aggregator };
}
