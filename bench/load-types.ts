/** What a load generator is asked to do and what it reports (wrk and autocannon alike). */

export interface LoadSpec {
  /** Full URL, e.g. http://127.0.0.1:8080/v1/completions. */
  readonly url: string;
  /** JSON request bodies, sent in turn (one body: every request the same). */
  readonly bodies: readonly string[];
  readonly connections: number;
  readonly durationS: number;
  /** Fixed overall request rate (autocannon: overallRate; wrk: per-connection delay; open-loop: scheduled arrivals); absent = closed loop. */
  readonly rate?: number;
  /** Extra request headers, e.g. authorization. */
  readonly headers?: Readonly<Record<string, string>>;
}

export interface LoadResult {
  readonly tool: 'wrk' | 'autocannon' | 'open-loop';
  /** Completed requests (any status). */
  readonly requests: number;
  readonly seconds: number;
  /** Answers per second within the run (open-loop: those that came by its end; `requests` counts later ones too). */
  readonly rps: number;
  /** Answers other than 2xx/3xx. */
  readonly non2xx: number;
  /** Socket errors and timeouts. */
  readonly errors: number;
  readonly latencyMs: { readonly p50: number; readonly p99: number; readonly p999: number; readonly mean: number; readonly max: number };
  /** CPU ms the load generator itself used. */
  readonly loadCpuMs: number;
  /** open-loop only: requests that found no free connection at their scheduled time (their wait is in the latency). */
  readonly late?: number;
  /** open-loop with a slow threshold: the requests at least that slow, grouped by when they were scheduled. */
  readonly slow?: SlowEpisodes;
}

/** Slow requests grouped into episodes (scheduled less than 50 ms apart): one stall is one episode. */
export interface SlowEpisodes {
  readonly ms: number;
  readonly requests: number;
  readonly episodes: number;
  /** The largest episodes by requests (up to 20), in time order; at_ms from the run's start. */
  readonly largest: readonly { readonly at_ms: number; readonly span_ms: number; readonly requests: number; readonly max_ms: number }[];
}

/** The summary wrk's script and open-loop print as JSON: counts, errors by kind, latency percentiles in µs. */
export interface SummaryJson {
  requests: number;
  duration_us: number;
  errors: { connect: number; read: number; write: number; status: number; timeout: number };
  latency_us: { mean: number; max: number; p50: number; p99: number; p999: number };
}

/** A LoadResult from a generator's printed summary and the CPU it used. */
export function loadResultOf(tool: LoadResult['tool'], j: SummaryJson, loadCpuMs: number): LoadResult {
  const seconds = j.duration_us / 1e6;
  const ms = (us: number): number => us / 1000;
  return {
    tool,
    requests: j.requests,
    seconds,
    rps: j.requests / seconds,
    non2xx: j.errors.status,
    errors: j.errors.connect + j.errors.read + j.errors.write + j.errors.timeout,
    latencyMs: { p50: ms(j.latency_us.p50), p99: ms(j.latency_us.p99), p999: ms(j.latency_us.p999), mean: ms(j.latency_us.mean), max: ms(j.latency_us.max) },
    loadCpuMs,
  };
}
