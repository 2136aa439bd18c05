/**
 * From raw interleaved samples to figures: medians with min/max over rounds, and ratios
 * computed round by round (A/B within the same round) before taking their median.
 */
import type { LoadResult } from './load-types.js';
import type { Scenario } from './scenarios.js';
import { median } from './order-stats.js';

export interface Sample {
  readonly scenario: string;
  readonly round: number;
  readonly result: LoadResult;
  /** CPU ms of the server process tree during the run (null when not measured). */
  readonly serverCpuMs: number | null;
  /** The limit store's share of the run (scenarios with a global limit): redis-server CPU ms and script calls. */
  readonly store?: { readonly cpuMs: number; readonly scriptCalls: number };
  /** CPU ms of the kernel's kdamond threads during the run (absent or null: none ran, or not measured). */
  readonly kdamondCpuMs?: number | null;
  /** The share of all CPUs busy during the run, and stolen by the hypervisor (/proc/stat; absent or null: not read). */
  readonly machine?: { readonly busy: number; readonly steal: number } | null;
  /** Resident bytes of the server process tree after the run, and of them anonymous (absent: not read). */
  readonly resident?: { readonly rss: number; readonly anon: number };
}

/** A sample's server CPU per request, µs (NaN where its CPU was not measured). */
export const cpuUsPerRequest = (s: Sample): number => (s.serverCpuMs === null ? NaN : (s.serverCpuMs * 1000) / s.result.requests);

export interface Spread { readonly median: number; readonly min: number; readonly max: number; readonly n: number }

export function spread(values: readonly number[]): Spread | null {
  const v = values.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  if (v.length === 0) return null;
  return { median: median(v), min: v[0], max: v[v.length - 1], n: v.length };
}

export interface ScenarioSummary {
  readonly id: string;
  readonly n: string;
  readonly label: string;
  readonly rps: Spread | null;
  readonly latencyMs: { readonly p50: Spread | null; readonly p99: Spread | null; readonly p999: Spread | null };
  /** Latency minus the direct scenario's in the same round (closed loop, so queueing included). */
  readonly addedMs: { readonly p50: Spread | null; readonly p99: Spread | null };
  readonly ratio: { readonly direct: Spread | null; readonly nginx: Spread | null; readonly base: Spread | null };
  /** Server process tree CPU per request, µs. */
  readonly serverCpuUsPerReq: Spread | null;
  /** Load generator CPU per request, µs, and as % of one core. */
  readonly loadCpuUsPerReq: Spread | null;
  readonly loadCpuCorePct: Spread | null;
  /** The limit store (redis-server) per request, where the scenario has one: CPU µs and script calls. */
  readonly store: { readonly cpuUsPerReq: Spread | null; readonly callsPerReq: Spread | null } | null;
  /** The kernel's kdamond threads' CPU per request, µs (null where none ran). */
  readonly kdamondCpuUsPerReq?: Spread | null;
  /** Percent of all CPUs busy during the runs (null where not read). */
  readonly machineBusyPct?: Spread | null;
  /** The server process tree's resident MB after its runs, all and anonymous (null where not read). */
  readonly residentMb?: { readonly rss: Spread | null; readonly anon: Spread | null } | null;
  /** Fraction of answers that were not 2xx/3xx (all rounds together). */
  readonly non2xxFraction: number;
  readonly errors: number;
}

function byRound(samples: readonly Sample[], id: string): Map<number, Sample> {
  return new Map(samples.filter((s) => s.scenario === id).map((s) => [s.round, s]));
}

/** a/b per round (only rounds where both ran), as a spread. */
export function roundRatio(samples: readonly Sample[], a: string, b: string, f: (s: Sample) => number = (s) => s.result.rps): Spread | null {
  const A = byRound(samples, a);
  const B = byRound(samples, b);
  const out: number[] = [];
  for (const [round, sa] of A) {
    const sb = B.get(round);
    if (sb !== undefined && f(sb) > 0) out.push(f(sa) / f(sb));
  }
  return spread(out);
}

/** f(a) − f(b) within each round where both ran, as a spread over rounds. */
export function roundDiff(samples: readonly Sample[], a: string, b: string, f: (s: Sample) => number): Spread | null {
  const A = byRound(samples, a);
  const B = byRound(samples, b);
  const out: number[] = [];
  for (const [round, sa] of A) {
    const sb = B.get(round);
    if (sb !== undefined) out.push(f(sa) - f(sb));
  }
  return spread(out);
}

export function summarize(scenarios: readonly Scenario[], samples: readonly Sample[], base: string): ScenarioSummary[] {
  const ran = new Set(samples.map((s) => s.scenario));
  return scenarios.filter((sc) => ran.has(sc.id)).map((sc) => {
    const mine = samples.filter((s) => s.scenario === sc.id);
    const comparable = sc.direct === 'direct';
    const requests = mine.reduce((a, s) => a + s.result.requests, 0);
    return {
      id: sc.id,
      n: sc.n,
      label: sc.label,
      rps: spread(mine.map((s) => s.result.rps)),
      latencyMs: {
        p50: spread(mine.map((s) => s.result.latencyMs.p50)),
        p99: spread(mine.map((s) => s.result.latencyMs.p99)),
        p999: spread(mine.map((s) => s.result.latencyMs.p999)),
      },
      addedMs: {
        p50: sc.id === sc.direct ? null : roundDiff(samples, sc.id, sc.direct, (s) => s.result.latencyMs.p50),
        p99: sc.id === sc.direct ? null : roundDiff(samples, sc.id, sc.direct, (s) => s.result.latencyMs.p99),
      },
      ratio: {
        direct: roundRatio(samples, sc.id, sc.direct),
        nginx: comparable ? roundRatio(samples, sc.id, 'nginx') : null,
        base: comparable ? roundRatio(samples, sc.id, base) : null,
      },
      serverCpuUsPerReq: spread(mine.map(cpuUsPerRequest)),
      loadCpuUsPerReq: spread(mine.map((s) => (s.result.loadCpuMs * 1000) / s.result.requests)),
      loadCpuCorePct: spread(mine.map((s) => (100 * s.result.loadCpuMs) / (s.result.seconds * 1000))),
      store: storeOf(mine),
      machineBusyPct: spread(mine.flatMap((s) => (s.machine === undefined || s.machine === null ? [] : [100 * s.machine.busy]))),
      kdamondCpuUsPerReq: spread(mine.flatMap((s) => (typeof s.kdamondCpuMs === 'number' && s.result.requests > 0 ? [(s.kdamondCpuMs * 1000) / s.result.requests] : []))),
      residentMb: residentSpread(mine),
      non2xxFraction: requests > 0 ? mine.reduce((a, s) => a + s.result.non2xx, 0) / requests : 0,
      errors: mine.reduce((a, s) => a + s.result.errors, 0),
    };
  });
}

function residentSpread(samples: readonly Sample[]): ScenarioSummary['residentMb'] {
  const read = samples.flatMap((s) => (s.resident === undefined || s.resident.rss === 0 ? [] : [s.resident]));
  if (read.length === 0) return null;
  return { rss: spread(read.map((r) => r.rss / 1e6)), anon: spread(read.map((r) => r.anon / 1e6)) };
}

function storeOf(samples: readonly Sample[]): ScenarioSummary['store'] {
  const withStore = samples.filter((s) => s.store !== undefined && s.result.requests > 0);
  if (withStore.length === 0) return null;
  return {
    cpuUsPerReq: spread(withStore.map((s) => (s.store!.cpuMs * 1000) / s.result.requests)),
    callsPerReq: spread(withStore.map((s) => s.store!.scriptCalls / s.result.requests)),
  };
}
