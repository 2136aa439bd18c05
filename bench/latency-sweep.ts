/**
 * The p99 each target adds to direct at a ladder of fixed rates, with open-loop's scheduled
 * arrivals: the highest rate at which the full router (and the references) keep what they add
 * under a limit, for a capacity plan.
 *
 *   node dist/bench/latency-sweep.js [--targets ID,ID] [--fractions F,F] [--rounds N] [--duration S]
 *                                    [--workers N] [--arrivals poisson|uniform] [--limit-ms MS]
 *                                    [--lead-in S] [--pause-damon] [--load-cpus N]
 *
 * Starts the mock backend and each target (scenario ids of bench/scenarios.ts: router-local by
 * default with the floor and nginx), warms each up (3 s of wrk), measures the full router's
 * closed-loop peak with wrk (one run of --duration), then loads direct and every target at each fraction of that peak, in
 * alternating rounds (each of --duration, or longer at a low rate: at least --min-requests requests,
 * 20,000 by default, so that a p99 is not a handful of requests), the targets not measured
 * stopped (SIGSTOP) as in `npm run bench`. Prints,
 * per rate, direct's p99 and each target's added p99 (median over rounds of the per-round
 * difference) and CPU per request, then the highest rate under the limit per target. Each run's
 * measured part follows --lead-in seconds (default 1) of the same load, not read, as in `npm run bench`: a
 * target resumed after the others' runs answers more slowly for its first few hundred ms. The
 * kernel's memory monitor (bench/kernel-monitor.ts) is named with its kdamond CPU per request;
 * --pause-damon turns it off for the sweep (root). Each run's
 * progress line gives how busy the machine was and the share of its time the hypervisor stole (a
 * VM's hiccups, which no target causes), the CPU the rest of the machine ran meanwhile (other
 * services, kernel threads and processes started meanwhile, outside this tool's own tree: proc-cpu
 * othersCpu), and counts the requests of 10 ms or more and groups them
 * by when they were sent (a stall of the target is one large group; open-loop's --slow-ms).
 *
 * --load-cpus N (bench/cpu-split.ts) runs the tool, the mock backends and the load generators on
 * the first N CPUs and every target on the others, so a target's tail is not made by the
 * generator and the mock taking its CPUs (the peak, and so the rates, are then the full router's
 * on the CPUs left; give --workers as many as those). The load side must keep up: how busy its
 * CPUs were is printed with each run.
 */
import { whileStopped } from './pause-targets.js';
import { openLoopBinary, runOpenLoop, type Arrivals } from './load-open-loop.js';
import type { LoadSpec, SlowEpisodes } from './load-types.js';
import { runWrk } from './load-wrk.js';
import { othersCpu, treeCpu } from './proc-cpu.js';
import { machineBusy } from './machine-busy.js';
import { kdamondCpu, monitorsNow, pauseDamon } from './kernel-monitor.js';
import { median } from './order-stats.js';
import * as scenariosModule from './scenarios.js';
import { FULL_ROUTER, LONG_TOKENS, PATH, SCENARIOS, type Scenario, type TargetKey } from './scenarios.js';
import * as targetsModule from './targets.js';
import { startMock, stopAll, type Target } from './targets.js';
import { startTarget } from './start-target.js';
import { exitWithUsageError, readCommandLine, UsageError, type CommandLine, type CommandSpec } from './cli-args.js';
import { machineSplit, pinProcess, pinTree } from './cpu-split.js';
import { availableParallelism } from 'node:os';
import { stopChildrenOnInterrupt } from './interrupt.js';

export const COMMAND: CommandSpec = {
  usage: 'Usage: node dist/bench/latency-sweep.js [--targets ID,ID] [--fractions F,F] [--rounds N] [--duration S] [--workers N] [--arrivals poisson|uniform] [--limit-ms MS] [--min-requests N] [--lead-in S] [--pause-damon] [--load-cpus N]',
  values: ['--targets', '--fractions', '--rounds', '--duration', '--workers', '--arrivals', '--limit-ms', '--min-requests', '--lead-in', '--load-cpus'],
  flags: ['--pause-damon'],
};

export interface SweepOptions {
  readonly targets: readonly Scenario[];
  /** Fractions of the full router's closed-loop peak, ascending. */
  readonly fractions: readonly number[];
  readonly rounds: number;
  readonly durationS: number;
  readonly workers: number;
  readonly arrivals: Arrivals;
  readonly limitMs: number;
  /** A run at a low rate lasts long enough for this many requests (its p99 is then the 1%-slowest of as many). */
  readonly minRequests: number;
  /** Seconds of the same load before each measured run, not read (0: none). */
  readonly leadInS: number;
  /** Turn the kernel's DAMON monitors off for the sweep. */
  readonly pauseDamon: boolean;
  /** CPUs for the load (tool, mocks, generators), the first ones; the targets get the others. Null: no split. */
  readonly loadCpus: number | null;
}

const WARMUP_S = 3;
/** Requests this slow are grouped by when they were sent (open-loop's --slow-ms): one stall, one episode. */
const STALL_MS = 10;

/** The slow requests of a run, for its progress line: how many, in how many episodes, the largest. */
function stalls(slow: SlowEpisodes | undefined): string {
  if (slow === undefined || slow.requests === 0) return '';
  const top = [...slow.largest].sort((a, b) => b.requests - a.requests)[0];
  return `; ${slow.requests} requests over ${slow.ms} ms in ${slow.episodes} episodes, the largest ${top.requests} sent from ${(top.at_ms / 1000).toFixed(2)} s over ${top.span_ms.toFixed(0)} ms (slowest ${top.max_ms.toFixed(1)} ms)`;
}

/** Scenario targets this tool can start and load like the bench does (no Redis, no tracing collector, no auth file). */
const SWEEPABLE: ReadonlySet<string> = new Set(['router-plain', 'router-log', 'router-local', 'nginx', 'uws-http1-proxy']);

/** The scenario ids --targets accepts: those whose target this tool can start. */
export function sweepableIds(): string[] {
  return SCENARIOS.filter((s) => SWEEPABLE.has(s.target)).map((s) => s.id);
}

export function sweepOptions(line: CommandLine): SweepOptions {
  const ids = (line.value('--targets') ?? `${FULL_ROUTER},uws-http1-proxy,nginx`).split(',').filter((x) => x.length > 0);
  const targets = ids.map((id) => {
    const sc = SCENARIOS.find((s) => s.id === id);
    if (sc === undefined || !SWEEPABLE.has(sc.target)) throw new UsageError(`--targets: "${id}" is not one of ${sweepableIds().join(', ')}`);
    return sc;
  });
  if (targets.length === 0) throw new UsageError('--targets: name at least one target');
  const fractions = (line.value('--fractions') ?? '0.1,0.2,0.3,0.4,0.5').split(',').map((f) => {
    const n = Number(f);
    if (!Number.isFinite(n) || n <= 0 || n > 1) throw new UsageError(`--fractions: "${f}" is not a fraction of the peak above 0 and at most 1`);
    return n;
  }).sort((a, b) => a - b);
  const arrivals = line.value('--arrivals') ?? 'poisson';
  if (arrivals !== 'poisson' && arrivals !== 'uniform') throw new UsageError(`--arrivals is poisson or uniform, not "${arrivals}"`);
  return {
    targets,
    fractions,
    rounds: line.positiveNumber('--rounds') ?? 3,
    durationS: line.positiveNumber('--duration') ?? 4,
    workers: line.positiveNumber('--workers') ?? 2,
    arrivals,
    limitMs: line.positiveNumber('--limit-ms') ?? 2,
    minRequests: line.positiveNumber('--min-requests') ?? 20_000,
    leadInS: leadIn(line.value('--lead-in')),
    pauseDamon: line.has('--pause-damon'),
    loadCpus: line.positiveNumber('--load-cpus') ?? null,
  };
}

function leadIn(v: string | undefined): number {
  if (v === undefined) return 1;
  const n = Number(v);
  if (!Number.isFinite(n) || n < 0 || n > 60) throw new UsageError(`--lead-in: expected seconds from 0 to 60, got ${JSON.stringify(v)}`);
  return n;
}

/** How long a run at `rate` lasts: --duration, longer where that would be fewer than --min-requests requests. */
export function runSeconds(o: Pick<SweepOptions, 'durationS' | 'minRequests'>, rate: number): number {
  return Math.max(o.durationS, Math.ceil((10 * o.minRequests) / rate) / 10);
}

/** One rate's figures for one target: its added p99 (ms, median over rounds) and CPU per request (µs). */
export interface SweepCell { readonly addedP99Ms: number; readonly cpuUs: number }

/** The highest rate whose added p99 is under `limitMs`, every lower rate under it too; null when the lowest is not. */
export function highestRateUnder(rates: readonly number[], cells: readonly SweepCell[], limitMs: number): number | null {
  let best: number | null = null;
  for (let i = 0; i < rates.length; i++) {
    if (!(cells[i].addedP99Ms < limitMs)) break;
    best = rates[i];
  }
  return best;
}

async function main(): Promise<void> {
  stopChildrenOnInterrupt('latency-sweep');
  const o = readCommandLine(COMMAND, sweepOptions);
  const built = openLoopBinary();
  if (!('bin' in built)) exitWithUsageError(COMMAND, built.reason);
  const split = o.loadCpus === null ? null : machineSplit(o.loadCpus);
  if (o.loadCpus !== null && split === null) exitWithUsageError(COMMAND, `--load-cpus ${o.loadCpus}: a whole number of CPUs that leaves at least one of this machine's ${availableParallelism()} to the targets`);
  // Before anything starts: the mocks and the generators inherit the load's CPU from this process.
  if (split !== null) pinProcess(process.pid, split.load);
  const monitor = monitorsNow();
  const damon = o.pauseDamon ? pauseDamon() : null;
  const mock = await startMock('mock');
  const mockLong = await startMock('mock-long', ['--output-tokens', String(LONG_TOKENS)]);
  const direct = SCENARIOS.find((s) => s.id === 'direct')!;
  const full = SCENARIOS.find((s) => s.id === FULL_ROUTER)!;
  const started = new Map<string, Target>([['mock', mock]]);
  try {
    for (const sc of [full, ...o.targets]) {
      if (!started.has(sc.target)) {
        const t = await startTarget({ targets: targetsModule, scenarios: scenariosModule }, sc.target as TargetKey,
          { name: `sweep-${sc.id}`, workers: o.workers, mock, mockLong, redis: null });
        if (split !== null) pinTree(t.proc.pid, split.targets);
        started.set(sc.target, t);
      }
    }
    const spec = (sc: Scenario, rate?: number): LoadSpec => ({
      url: `${started.get(sc.target)!.url}${PATH}`, bodies: sc.bodies, connections: 64, rate, headers: sc.headers,
      durationS: rate === undefined ? o.durationS : runSeconds(o, rate),
    });
    const others = (keep: string): number[] => [...started].filter(([k]) => k !== keep && k !== 'mock').map(([, t]) => t.proc.pid);
    // Warm-up: each target's code optimised and its upstream connections open before anything is read.
    const warmed = new Set<string>();
    for (const sc of [direct, full, ...o.targets]) {
      if (warmed.has(sc.target)) continue;
      warmed.add(sc.target);
      await whileStopped(others(sc.target), () => runWrk('wrk', { ...spec(sc), durationS: WARMUP_S }));
    }
    const peak = await whileStopped(others(full.target), () => runWrk('wrk', spec(full)));
    const rates = o.fractions.map((f) => Math.round(f * peak.rps));
    process.stderr.write(`full router's closed-loop peak ${Math.round(peak.rps)} req/s; rates ${rates.join(', ')} (${o.arrivals} arrivals)\n`);
    const measured = [direct, ...o.targets];
    const p99 = new Map<string, number[][]>(measured.map((sc) => [sc.id, rates.map(() => [])]));
    const cpu = new Map<string, number[][]>(measured.map((sc) => [sc.id, rates.map(() => [])]));
    const kdamond = new Map<string, number[]>(measured.map((sc) => [sc.id, []]));
    const busyPct = new Map<string, number[][]>(measured.map((sc) => [sc.id, rates.map(() => [])]));
    for (const [i, rate] of rates.entries()) {
      for (let r = 0; r < o.rounds; r++) {
        for (const sc of r % 2 === 0 ? measured : [...measured].reverse()) {
          const t = started.get(sc.target)!;
          const { x, cpuMs, othersMs, kdamondMs, busy, loadBusy } = await whileStopped(others(sc.target), async () => {
            if (o.leadInS > 0) await runOpenLoop(built.bin, { ...spec(sc, rate), durationS: o.leadInS }, o.arrivals);
            const reading = treeCpu(t.proc.pid);
            // Everything outside this process's tree (the targets, the mocks and the generator are in it).
            const rest = othersCpu([process.pid]);
            const monitorCpu = kdamondCpu();
            const machine = machineBusy();
            const loadSide = split === null ? null : machineBusy('/proc/stat', split.loadCpus);
            const run = await runOpenLoop(built.bin, spec(sc, rate), o.arrivals, STALL_MS);
            // The machine's window closes before the kdamond reading scans /proc.
            const cpuMs = reading.delta();
            const busy = machine.delta();
            const loadBusy = loadSide === null ? null : loadSide.delta();
            const othersMs = rest.delta();
            return { x: run, cpuMs, othersMs, busy, loadBusy, kdamondMs: monitorCpu.delta() };
          });
          p99.get(sc.id)![i].push(x.latencyMs.p99);
          cpu.get(sc.id)![i].push((cpuMs * 1000) / Math.max(1, x.requests));
          const kd = kdamondMs === null ? null : (kdamondMs * 1000) / Math.max(1, x.requests);
          if (kd !== null) kdamond.get(sc.id)!.push(kd);
          if (busy !== null) busyPct.get(sc.id)![i].push(100 * busy.busy);
          // What the rest of the machine ran meanwhile (other services, short-lived processes, kernel
          // threads), the memory monitor apart: it has its own figure.
          const restMs = Math.max(0, othersMs - (kdamondMs ?? 0));
          process.stderr.write(`${rate} req/s round ${r + 1} ${sc.id}: p99 ${x.latencyMs.p99.toFixed(2)} ms, late ${x.late ?? 0}, errors ${x.errors}${busy === null ? '' : `, machine ${(100 * busy.busy).toFixed(0)}% busy, ${(100 * busy.steal).toFixed(1)}% stolen by the hypervisor`}${loadBusy === null ? '' : ` (the load's CPU ${split!.load} ${(100 * loadBusy.busy).toFixed(0)}%)`}, other processes ${restMs.toFixed(0)} ms of CPU${kd === null ? '' : `, kdamond ${kd.toFixed(2)} µs/req`}${stalls(x.slow)}\n`);
        }
      }
    }
    const cells = (id: string): SweepCell[] => rates.map((_, i) => ({
      addedP99Ms: median(p99.get(id)![i].map((v, r) => v - p99.get(direct.id)![i][r])),
      cpuUs: median(cpu.get(id)![i]),
    }));
    const kdamondMedians = measured.filter((sc) => kdamond.get(sc.id)!.length > 0).map((sc) => `${sc.id} ${median(kdamond.get(sc.id)!).toFixed(2)}`);
    process.stdout.write(`${o.arrivals} arrivals (open-loop), ${o.rounds} rounds per rate of ${o.durationS} s or of ${o.minRequests} requests, whichever is longer${o.leadInS > 0 ? `, each after ${o.leadInS} s of the same load not read` : ''}; the full router's closed-loop peak ${Math.round(peak.rps)} req/s (wrk), ${o.workers} worker${o.workers === 1 ? '' : 's'} per target\n`
      + (split === null ? '' : `CPUs split (--load-cpus): the mocks and the load generators on CPU ${split.load}, the targets on CPU ${split.targets}\n`)
      + `Kernel memory monitor: ${monitor}${damon !== null && damon.paused.length > 0 ? ', turned off for this sweep (--pause-damon)' : ''}${kdamondMedians.length > 0 ? `; kdamond CPU µs per request, median over every run: ${kdamondMedians.join(', ')}` : ''}\n\n`
      + `| req/s (× peak) | direct p99 ms | ${o.targets.map((t) => `${t.id}: p99 added ms, CPU µs/req, machine % busy`).join(' | ')} |\n`
      + `|---|---|${o.targets.map(() => '---|').join('')}\n`);
    const byTarget = new Map(o.targets.map((t) => [t.id, cells(t.id)]));
    for (const [i, rate] of rates.entries()) {
      process.stdout.write(`| ${rate} (${o.fractions[i]}) | ${median(p99.get(direct.id)![i]).toFixed(2)} | `
        + `${o.targets.map((t) => { const c = byTarget.get(t.id)![i]; const b = busyPct.get(t.id)![i]; return `${c.addedP99Ms >= 0 ? '+' : ''}${c.addedP99Ms.toFixed(2)}, ${c.cpuUs.toFixed(1)}, ${b.length === 0 ? '–' : `${median(b).toFixed(0)}%`}`; }).join(' | ')} |\n`);
    }
    process.stdout.write(`\nHighest rate with the p99 added under ${o.limitMs} ms (every lower rate too):\n\n`);
    for (const t of o.targets) {
      const best = highestRateUnder(rates, byTarget.get(t.id)!, o.limitMs);
      process.stdout.write(`- ${t.id}: ${best === null ? `none of these (above ${o.limitMs} ms at ${rates[0]} req/s)` : `${best} req/s (${(best / peak.rps).toFixed(2)} × the full router's peak)`}\n`);
    }
  } finally {
    await stopAll();
    damon?.restore();
  }
}

if (process.argv[1]?.endsWith('latency-sweep.js')) await main();
