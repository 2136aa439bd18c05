/**
 * Which series of a model server's /metrics tell its load, by `spec.inferenceEngine`
 * (docs/scheduling.md). Engines not listed here are not scraped.
 */

export interface EngineSeries {
  /** Requests waiting in the pod's queue (gauge). */
  readonly waiting: string;
  /** Requests running on the pod (gauge). */
  readonly running: string;
  /** KV-cache use, fraction 0..1 (gauge); the first name present is used. */
  readonly kvUsage: readonly string[];
  /** Histogram base names (…_sum, …_count) of time to first token and per output token, seconds. */
  readonly ttft: string | null;
  readonly tpot: string | null;
}

const VLLM: EngineSeries = {
  waiting: 'vllm:num_requests_waiting',
  running: 'vllm:num_requests_running',
  kvUsage: ['vllm:kv_cache_usage_perc', 'vllm:gpu_cache_usage_perc'],
  ttft: 'vllm:time_to_first_token_seconds',
  tpot: 'vllm:time_per_output_token_seconds',
};

const SGLANG: EngineSeries = {
  waiting: 'sglang:num_queue_reqs',
  running: 'sglang:num_running_reqs',
  kvUsage: ['sglang:token_usage'],
  ttft: 'sglang:time_to_first_token_seconds',
  tpot: 'sglang:time_per_output_token_seconds',
};

/** Series of `engine` (case-insensitive: vLLM, SGLang), or null when it is not scraped. */
export function engineSeries(engine: string | null): EngineSeries | null {
  if (engine === null) return null;
  const e = engine.toLowerCase();
  if (e === 'vllm') return VLLM;
  if (e === 'sglang') return SGLANG;
  return null;
}

/** Every series name an engine's load is read from (the parser keeps only these). */
export function wantedNames(s: EngineSeries): Set<string> {
  const names = new Set([s.waiting, s.running, ...s.kvUsage]);
  for (const h of [s.ttft, s.tpot]) if (h !== null) { names.add(`${h}_sum`); names.add(`${h}_count`); }
  return names;
}

/** One scrape's reading; NaN = not reported. Latencies are cumulative (sum, count). */
export interface EngineReading {
  waiting: number;
  running: number;
  kvUsage: number;
  ttftSum: number;
  ttftCount: number;
  tpotSum: number;
  tpotCount: number;
}

/**
 * The reading from the sums of the series over their label sets (sumSamples), `counts` the
 * samples in each sum: a KV-cache use is their mean (a pod running several engines, vLLM's data
 * parallel, reports one per engine), the rest are sums.
 */
export function readEngine(s: EngineSeries, values: Map<string, number>, counts?: Map<string, number>): EngineReading {
  let kv = NaN;
  for (const n of s.kvUsage) {
    const v = values.get(n);
    if (v !== undefined) { kv = v / (counts?.get(n) ?? 1); break; }
  }
  const get = (n: string | null): number => (n === null ? NaN : values.get(n) ?? NaN);
  return {
    waiting: get(s.waiting),
    running: get(s.running),
    kvUsage: kv,
    ttftSum: get(s.ttft === null ? null : `${s.ttft}_sum`),
    ttftCount: get(s.ttft === null ? null : `${s.ttft}_count`),
    tpotSum: get(s.tpot === null ? null : `${s.tpot}_sum`),
    tpotCount: get(s.tpot === null ? null : `${s.tpot}_count`),
  };
}
