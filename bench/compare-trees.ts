/**
 * Two builds of the router side by side on the same mock backend, loaded by wrk in interleaved
 * rounds (A B, B A, A B, ...), for a before/after measurement of a change: build the "before"
 * tree in a scratch worktree (`git worktree add ../before HEAD~1 && cd ../before && ln -s
 * <this tree>/node_modules && npm run build`), then
 *
 *   node dist/bench/compare-trees.js <treeA>[:scenario] <treeB>[:scenario] [--rounds N] [--duration S] [--rate R] [--workers N]
 *
 * A scenario id (bench/scenarios.ts; default router-local) may differ per side, e.g. one tree
 * with `:router-log` against itself with `:router-local` for the cost of a feature
 * (`:router-global` starts a redis-server for the global limit, `:router-trace` a mock OTLP
 * collector in this process), or a reference on the same
 * load (`:nginx`, `:uws-http1-proxy`, the bare floor of the router's stack). `--rate`
 * asks for a fixed rate: with wrk think time by default, or with `--load poisson` / `--load uniform` open-loop arrivals (bench/load-open-loop.ts); `--workers` sets the worker count of both sides (default 2), `--workers-a` / `--workers-b` one side's. `--node-args-a`
 * and `--node-args-b` start that side's router with Node/V8 flags (its workers inherit them), e.g.
 * the same tree on both sides with `--node-args-b "--single-threaded-gc"`; `--env-a` and `--env-b`
 * add to that side's router environment (`--env-b "ROUTER_FAIRNESS_MAX_CONCURRENT=4096"`: a feature
 * turned on for one side). `--node-a` and
 * `--node-b` run that side's router or floor on another Node.js binary (e.g. the Node 24 of the
 * container image against the machine's Node 20, the same tree on both sides); the table names the
 * version each side's process runs (read from its executable, so a tree whose bench predates the
 * option shows its own); the mock backend runs on the Node running this tool. `--floor-args-a` and
 * `--floor-args-b` give a `:uws-http1-proxy` side the floor's calibration options: `--burn-us U`
 * spins U µs of CPU per request, `--garbage-objects K` allocates K short-lived objects per
 * request, to see how much of a router's latency its CPU and its allocation alone explain. Server CPU per
 * request is read from /proc/<pid>/task/<tid>/schedstat (nanoseconds on a CPU, every thread of
 * the primary and the workers), the primary's share apart: the steady figure on a noisy machine;
 * beside it the part spent in the kernel (/proc/<pid>/stat stime, tick samples): system calls and
 * the loopback network's work, which every proxy pays about alike.
 * From the same accounting: how often the side's threads were put on a CPU per request (each
 * wake-up counts) and how long per request they waited runnable for one (the run queue), the
 * scheduling part of a latency that CPU time alone does not show. wrk's own CPU per request is
 * printed beside it: on a machine it shares, what it spends reading a side's answers (longer heads,
 * say) is CPU that side's throughput loses without the server spending it. So are the TCP
 * segments the machine sent per request (bench/tcp-segments.ts: four when each leg's request and
 * answer go out in one segment each and no pure ACK is sent). `--long-tokens N` makes
 * the mock behind the SSE 64 scenarios (`:router-sse64`, `:direct-sse64`) stream N tokens instead,
 * e.g. 1024 for what a long answer costs.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readlinkSync } from 'node:fs';
import { resolve } from 'node:path';
import { exitWithUsageError, positiveNumber, readCommandLine, UsageError, type CommandLine, type CommandSpec } from './cli-args.js';
import { openLoopBinary, runOpenLoop, type Arrivals } from './load-open-loop.js';
import type { LoadResult, LoadSpec } from './load-types.js';
import { processesChanged, schedStat, userKernelMs, type SchedStat } from './proc-cpu.js';
import { residentOf, type Resident } from './proc-memory.js';
import { kdamondCpu } from './kernel-monitor.js';
import { tcpSegmentsSent } from './tcp-segments.js';
import { median } from './order-stats.js';
import { infoCommandstats, scriptCallsIn, scriptUsecIn } from './redis-stats.js';
import type { Scenario, TargetKey } from './scenarios.js';
import type { Target } from './targets.js';
import { startTarget, type TargetModules } from './start-target.js';
import { startOtlpCollector } from '../test/helpers/otlp-collector.js';
import { stopChildrenOnInterrupt } from './interrupt.js';

interface TreeModules extends TargetModules {
  scenarios: TargetModules['scenarios'] & { SCENARIOS: readonly Scenario[]; PATH: string; LONG_TOKENS: number };
  wrk: { runWrk(bin: string, spec: LoadSpec): Promise<LoadResult> };
  cpu: { processTree(root: number): number[] };
}

interface Side {
  label: string; tree: string; scenario: Scenario; m: TreeModules; router: Target | null; nodeArgs: string[];
  /** The side's Node.js binary (undefined: this tool's). */
  node: string | undefined;
  floorArgs: string[]; workers: number;
  /** A router side's environment beyond its scenario's. */
  env: Record<string, string>;
}

/** Non-router targets a side may name: the yardsticks of the router's goals. */
const REFERENCES: ReadonlySet<string> = new Set(['nginx', 'uws-http1-proxy']);

export const COMMAND: CommandSpec = {
  usage: 'Usage: node dist/bench/compare-trees.js <treeA>[:scenario] <treeB>[:scenario] [--rounds N] [--duration S] [--rate R] [--workers N] [--workers-a N] [--workers-b N] [--node-args-a "FLAGS"] [--node-args-b "FLAGS"] [--node-a PATH] [--node-b PATH] [--floor-args-a "ARGS"] [--floor-args-b "ARGS"] [--env-a "NAME=VALUE ..."] [--env-b "NAME=VALUE ..."] [--load wrk|poisson|uniform] [--long-tokens N]',
  values: ['--load', '--rounds', '--duration', '--rate', '--workers', '--workers-a', '--workers-b', '--node-args-a', '--node-args-b', '--node-a', '--node-b', '--floor-args-a', '--floor-args-b', '--env-a', '--env-b', '--long-tokens'],
  positionals: [2, 2],
};

async function load(tree: string): Promise<TreeModules> {
  const dist = resolve(tree, 'dist/bench');
  return {
    targets: await import(`${dist}/targets.js`) as TreeModules['targets'],
    scenarios: await import(`${dist}/scenarios.js`) as TreeModules['scenarios'],
    wrk: await import(`${dist}/load-wrk.js`) as TreeModules['wrk'],
    cpu: await import(`${dist}/proc-cpu.js`) as TreeModules['cpu'],
  };
}

const fixed = (v: number, digits: number): string => (Number.isFinite(v) ? v.toFixed(digits) : '–');

export interface CompareOptions {
  positional: readonly string[]; rounds: number; durationS: number; rate: number | undefined; workers: [number, number];
  /** The load generator: wrk (closed loop, or think time with a rate) or open-loop's scheduled arrivals (a rate required). */
  load: 'wrk' | Arrivals;
  nodeArgs: [string[], string[]];
  /** A side's Node.js binary (undefined: the one running this tool). */
  node: [string | undefined, string | undefined];
  /** A floor side's calibration options (upstream-proxy's `--burn-us U --garbage-objects K`). */
  floorArgs: [string[], string[]];
  /** Completion tokens of the mock behind `sf-model-long` (the SSE 64 scenarios; undefined: the tree's LONG_TOKENS). */
  longTokens: number | undefined;
  /** A router side's environment beyond its scenario's (e.g. a setting turned on for one side). */
  env: [Record<string, string>, Record<string, string>];
}

/** The tool's settings from its command line (the trees' scenarios are checked once their builds are loaded). */
export function compareOptions(line: CommandLine): CompareOptions {
  const o: CompareOptions = { positional: line.positionals, rounds: 4, durationS: 4, rate: undefined, workers: [2, 2], nodeArgs: [[], []], node: [undefined, undefined], floorArgs: [[], []], load: 'wrk', longTokens: undefined, env: [{}, {}] };
  // In the order given: --workers sets both sides, a later --workers-a or -b one of them.
  for (const [name, value] of line.options) {
    if (name === '--load') {
      if (value !== 'wrk' && value !== 'poisson' && value !== 'uniform') throw new UsageError(`--load is wrk, poisson or uniform, not "${value}"`);
      o.load = value;
    } else if (name === '--rounds') o.rounds = positiveNumber(name, value);
    else if (name === '--duration') o.durationS = positiveNumber(name, value);
    else if (name === '--rate') o.rate = positiveNumber(name, value);
    else if (name === '--long-tokens') {
      const n = positiveNumber(name, value);
      if (!Number.isInteger(n)) throw new UsageError(`--long-tokens: expected a whole number of tokens, got "${value}"`);
      o.longTokens = n;
    }
    else if (name === '--workers') o.workers.fill(positiveNumber(name, value));
    else if (name === '--workers-a' || name === '--workers-b') o.workers[name.endsWith('a') ? 0 : 1] = positiveNumber(name, value);
    else if (name === '--node-a' || name === '--node-b') o.node[name.endsWith('a') ? 0 : 1] = value;
    else if (name === '--floor-args-a' || name === '--floor-args-b') o.floorArgs[name.endsWith('a') ? 0 : 1] = words(value);
    else if (name === '--env-a' || name === '--env-b') o.env[name.endsWith('a') ? 0 : 1] = environment(name, value);
    else o.nodeArgs[name.endsWith('a') ? 0 : 1] = words(value);
  }
  if (o.load !== 'wrk' && o.rate === undefined) throw new UsageError(`--load ${o.load} needs --rate`);
  return o;
}

/** A side's extra environment, given as one string of NAME=VALUE words (values without spaces). */
function environment(option: string, value: string): Record<string, string> {
  const env: Record<string, string> = {};
  for (const w of words(value)) {
    const m = /^([A-Z_][A-Z0-9_]*)=(.*)$/.exec(w);
    if (m === null) throw new UsageError(`${option}: expected NAME=VALUE words, got "${w}"`);
    env[m[1]] = m[2];
  }
  return env;
}

/** A side's extra arguments (Node flags, the floor's options), given as one string: its words. */
function words(value: string): string[] {
  return value.split(/\s+/).filter((w) => w.length > 0);
}

async function main(): Promise<void> {
  stopChildrenOnInterrupt('compare-trees');
  const { positional, rounds, durationS, rate, workers, nodeArgs, node, floorArgs, load: loadKind, longTokens, env } = readCommandLine(COMMAND, compareOptions);
  const openLoop = loadKind === 'wrk' ? null : openLoopBinary();
  if (openLoop !== null && !('bin' in openLoop)) exitWithUsageError(COMMAND, `--load ${loadKind}: ${openLoop.reason}`);
  const generator = openLoop === null ? 'wrk' : 'open-loop';
  const sides: Side[] = [];
  for (const [i, arg] of positional.entries()) {
    const [tree, id = 'router-local'] = arg.split(':');
    if (!existsSync(resolve(tree, 'dist/bench/targets.js'))) exitWithUsageError(COMMAND, `${arg}: ${resolve(tree, 'dist/bench')} not found: build that tree first (npm run build)`);
    const m = await load(tree);
    const scenario = m.scenarios.SCENARIOS.find((s) => s.id === id);
    if (scenario === undefined || !(scenario.target.startsWith('router-') || REFERENCES.has(scenario.target))) {
      exitWithUsageError(COMMAND, `${arg}: no router or reference scenario "${id}" in ${tree} (references: ${[...REFERENCES].join(', ')})`);
    }
    if (nodeArgs[i].length > 0 && !scenario.target.startsWith('router-')) exitWithUsageError(COMMAND, `${arg}: Node flags apply to a router side only`);
    if (Object.keys(env[i]).length > 0 && !scenario.target.startsWith('router-')) exitWithUsageError(COMMAND, `${arg}: an environment applies to a router side only`);
    if (node[i] !== undefined && !scenario.target.startsWith('router-') && scenario.target !== 'uws-http1-proxy') exitWithUsageError(COMMAND, `${arg}: a Node binary applies to a router or uws-http1-proxy side only`);
    if (node[i] !== undefined && !existsSync(node[i]!)) exitWithUsageError(COMMAND, `--node-${i === 0 ? 'a' : 'b'}: ${node[i]} does not exist`);
    if (floorArgs[i].length > 0 && scenario.target !== 'uws-http1-proxy') exitWithUsageError(COMMAND, `${arg}: floor arguments apply to a uws-http1-proxy side only`);
    sides.push({ label: i === 0 ? 'A' : 'B', tree, scenario, m, router: null, nodeArgs: nodeArgs[i], node: node[i], floorArgs: floorArgs[i], workers: workers[i], env: env[i] });
  }
  const m0 = sides[0].m;
  const mock = await m0.targets.startMock('mock');
  // As the main bench starts it: the backend of the 64-chunk streaming scenarios.
  const mockLong = await m0.targets.startMock('mock-long', ['--output-tokens', String(longTokens ?? m0.scenarios.LONG_TOKENS)]);
  // Any tree's global-limit scenarios need the redis-server.
  const redis = sides.some((s) => s.scenario.target.startsWith('router-global')) ? await m0.targets.startRedis('redis-server') : null;
  // Tracing's scenario exports to a mock collector in this process, as the main bench runs it.
  const collector = sides.some((s) => s.scenario.target === 'router-trace') ? await startOtlpCollector({ keepSpans: false }) : null;
  try {
    for (const s of sides) {
      s.router = await startTarget(s.m, s.scenario.target as TargetKey, { name: `compare-${s.label}`, workers: s.workers, mock, mockLong, redis: redis?.address ?? null, collector: collector?.url ?? null, nodeArgs: s.nodeArgs, node: s.node, floorArgs: s.floorArgs, env: s.env });
    }
    const spec = (s: Side, d: number): LoadSpec => ({ url: `${s.router!.url}${s.scenario.path ?? m0.scenarios.PATH}`, bodies: s.scenario.bodies, connections: 64, durationS: d, rate, headers: s.scenario.headers });
    for (const s of sides) await m0.wrk.runWrk('wrk', spec(s, 2)); // warm-up
    const results = new Map<string, { rps: number; cpu: number; primary: number; kernel: number; slices: number; waitUs: number; wrkUs: number; p50: number; p99: number; store: StoreRound | null; kdamondUs: number | null; segments: number | null; resident: Resident; primaryResident: Resident }[]>([['A', []], ['B', []]]);
    const changes: string[] = [];
    for (let r = 0; r < rounds; r++) {
      for (const s of r % 2 === 0 ? sides : [...sides].reverse()) {
        const pids = m0.cpu.processTree(s.router!.proc.pid);
        const redisBefore = redis === null ? null : await redisReading(redis);
        const before = pids.map(schedStat);
        const kernelBefore = kernelMsOf(pids);
        const monitor = kdamondCpu();
        const segmentsBefore = tcpSegmentsSent();
        const x = openLoop === null ? await m0.wrk.runWrk('wrk', spec(s, durationS)) : await runOpenLoop(openLoop.bin, spec(s, durationS), loadKind as Arrivals);
        const after = pids.map(schedStat);
        const kernelAfter = kernelMsOf(pids);
        const monitorMs = monitor.delta();
        const segmentsAfter = tcpSegmentsSent();
        // The side's processes (primary, workers) as the round leaves them.
        const resident = residentOf(pids);
        const changed = processesChanged(pids, m0.cpu.processTree(s.router!.proc.pid));
        if (changed !== null) {
          const note = `${s.label} round ${r + 1}: the side's processes changed during the round (exited: ${changed.exited.join(', ') || 'none'}; new: ${changed.started.join(', ') || 'none'}), so its CPU and memory figures miss what was not there throughout`;
          changes.push(note);
          process.stderr.write(`${note}\n`);
        }
        const primaryResident = residentOf(pids.slice(0, 1));
        const redisAfter = redis === null ? null : await redisReading(redis);
        const n = x.rps * durationS;
        const grew = (k: keyof SchedStat): number => after.reduce((a, b) => a + b[k], 0) - before.reduce((a, b) => a + b[k], 0);
        const cpu = grew('cpuNs') / 1000 / n;
        const primary = (after[0].cpuNs - before[0].cpuNs) / 1000 / n;
        // The part of it in the kernel (tick samples): system calls and the loopback network's work.
        const kernel = ((kernelAfter - kernelBefore) * 1000) / n;
        const slices = grew('slices') / n;
        const waitUs = grew('waitNs') / 1000 / n;
        // A tree whose wrk runner predates loadCpuMs reports none: NaN, printed as '–'.
        const wrkUs = (x.loadCpuMs * 1000) / n;
        const store = redisBefore === null || redisAfter === null ? null : {
          cpuUs: (redisAfter.cpuNs - redisBefore.cpuNs) / 1000 / n,
          calls: (redisAfter.calls - redisBefore.calls) / n,
          usecPerCall: (redisAfter.usec - redisBefore.usec) / Math.max(1, redisAfter.calls - redisBefore.calls),
        };
        // The kernel's memory monitor (bench/kernel-monitor.ts): its bursts take a CPU from both sides.
        const kdamondUs = monitorMs === null ? null : (monitorMs * 1000) / n;
        // TCP segments the machine sent (bench/tcp-segments.ts): client, side and mock together.
        const segments = segmentsBefore === null || segmentsAfter === null ? null : (segmentsAfter - segmentsBefore) / n;
        results.get(s.label)!.push({ rps: x.rps, cpu, primary, kernel, slices, waitUs, wrkUs, p50: x.latencyMs.p50, p99: x.latencyMs.p99, store, kdamondUs, segments, resident, primaryResident });
        process.stderr.write(`${s.label} round ${r + 1}: ${Math.round(x.rps)} req/s, ${cpu.toFixed(1)} µs CPU/request (primary ${primary.toFixed(1)}, in the kernel ${kernel.toFixed(1)}), `
          + `${slices.toFixed(2)} times on a CPU and ${waitUs.toFixed(1)} µs waiting for one per request, ${generator} ${wrkUs.toFixed(1)} µs CPU/request, p50 ${x.latencyMs.p50.toFixed(2)} ms, p99 ${x.latencyMs.p99.toFixed(2)} ms`
          + (kdamondUs === null ? '' : `, kdamond ${kdamondUs.toFixed(2)} µs CPU/request`)
          + (segments === null ? '' : `, ${segments.toFixed(2)} TCP segments/request`)
          + `, resident ${mb(resident.rss)} MB (${mb(resident.anon)} anonymous)`
          + (store === null ? '' : `; redis-server ${store.cpuUs.toFixed(2)} µs CPU/request, ${store.calls.toFixed(3)} script calls/request, ${store.usecPerCall.toFixed(1)} µs running each`)
          + '\n');
      }
    }
    const loadName = loadKind === 'wrk' ? (rate === undefined ? 'closed loop' : `fixed rate ${rate} req/s asked (wrk think time)`) : `fixed rate ${rate} req/s, ${loadKind} arrivals (open-loop)`;
    process.stdout.write(`${loadName}, ${rounds} rounds of ${durationS} s, medians:\n\n`
      + `| side | tree:scenario | req/s | server CPU µs/request | of which primary | of which in the kernel | times on a CPU per request | µs waiting for a CPU per request | ${generator} CPU µs/request | p50 ms | p99 ms |\n|---|---|---|---|---|---|---|---|---|---|---|\n`);
    for (const s of sides) {
      const r = results.get(s.label)!;
      process.stdout.write(`| ${s.label} | ${s.tree}:${s.scenario.id}, ${s.workers} worker${s.workers === 1 ? '' : 's'}${s.scenario.target === 'nginx' ? '' : `, Node ${nodeVersionOf(s.router!.proc.pid)}`} | ${Math.round(median(r.map((x) => x.rps)))} | ${median(r.map((x) => x.cpu)).toFixed(1)} | ${median(r.map((x) => x.primary)).toFixed(1)} | ${median(r.map((x) => x.kernel)).toFixed(1)} | ${median(r.map((x) => x.slices)).toFixed(2)} | ${median(r.map((x) => x.waitUs)).toFixed(1)} | ${fixed(median(r.map((x) => x.wrkUs)), 2)} | ${median(r.map((x) => x.p50)).toFixed(2)} | ${median(r.map((x) => x.p99)).toFixed(2)} |\n`);
    }
    const monitorSides = sides.map((s) => results.get(s.label)!.flatMap((x) => (x.kdamondUs === null ? [] : [x.kdamondUs])));
    if (monitorSides.every((v) => v.length > 0)) {
      process.stdout.write(`\nThe kernel's memory monitor (kdamond threads), CPU µs per request: ${sides.map((s, i) => `${s.label} ${median(monitorSides[i]).toFixed(2)}`).join(', ')}\n`);
    }
    const segmentSides = sides.map((s) => results.get(s.label)!.flatMap((x) => (x.segments === null ? [] : [x.segments])));
    if (segmentSides.every((v) => v.length > 0)) {
      process.stdout.write(`\nTCP segments sent per request (the whole machine: wrk, the side, the mock; /proc/net/snmp): ${sides.map((s, i) => `${s.label} ${median(segmentSides[i]).toFixed(2)}`).join(', ')}\n`);
    }
    process.stdout.write(`\nResident memory of each side's processes (primary and workers) after a round, medians: ${sides.map((s) => {
      const r = results.get(s.label)!;
      const primary = median(r.map((x) => x.primaryResident.rss));
      const perWorker = (median(r.map((x) => x.resident.rss)) - primary) / s.workers;
      return `${s.label} ${mb(median(r.map((x) => x.resident.rss)))} MB (${mb(median(r.map((x) => x.resident.anon)))} anonymous; the primary ${mb(primary)} MB, a worker about ${mb(perWorker)} MB)`;
    }).join(', ')}\n`);
    if (redis !== null) {
      process.stdout.write('\nThe global limit\'s redis-server (shared by both sides; a side without a global limit makes no calls):\n\n'
        + '| side | redis-server CPU µs/request | script calls per request | µs running each call (INFO commandstats) |\n|---|---|---|---|\n');
      for (const s of sides) {
        const r = results.get(s.label)!.map((x) => x.store!);
        process.stdout.write(`| ${s.label} | ${median(r.map((x) => x.cpuUs)).toFixed(2)} | ${median(r.map((x) => x.calls)).toFixed(3)} | ${median(r.map((x) => x.usecPerCall)).toFixed(1)} |\n`);
      }
    }
    for (const c of changes) process.stdout.write(`\nNote: ${c}.\n`);
  } finally {
    for (const s of sides) await s.router?.proc.stop('SIGTERM');
    await mock.proc.stop('SIGTERM');
    await mockLong.proc.stop('SIGTERM');
    await redis?.proc.stop('SIGTERM');
    await collector?.close();
  }
}

if (process.argv[1]?.endsWith('compare-trees.js')) await main();

/** One round's figures of the global limit's redis-server, per request of the round. */
interface StoreRound {
  cpuUs: number;
  calls: number;
  usecPerCall: number;
}

/** The redis-server's CPU so far (every thread) and its script calls and their running time (INFO commandstats). */
async function redisReading(redis: { proc: Target['proc']; address: string }): Promise<{ cpuNs: number; calls: number; usec: number }> {
  const info = await infoCommandstats(redis.address);
  return { cpuNs: schedStat(redis.proc.pid).cpuNs, calls: scriptCallsIn(info), usec: scriptUsecIn(info) };
}

/** The version the executable of process `pid` prints (a side's primary: the Node it really runs). */
function nodeVersionOf(pid: number): string {
  return execFileSync(readlinkSync(`/proc/${pid}/exe`), ['--version'], { encoding: 'utf8' }).trim();
}

function mb(bytes: number): string {
  return (bytes / 1e6).toFixed(0);
}

/** The kernel CPU ms of the processes, summed (userKernelMs). */
function kernelMsOf(pids: readonly number[]): number {
  let ms = 0;
  for (const pid of pids) ms += userKernelMs(pid).kernelMs;
  return ms;
}
