/**
 * Instructions per request, counted by valgrind's callgrind: the figure that does not move with
 * the machine's load. CPU time per request moves by ±4 µs between pairs on a shared 2-CPU host;
 * the instructions a build executes per request are repeatable to about a percent, whatever else
 * runs beside it. They do not weigh cache misses or branch mispredictions, so they say whether a
 * change removes work, not how many microseconds it saves.
 *
 *   node dist/bench/instructions.js <tree>[:scenario] [<tree>[:scenario] ...] [--rounds N] [--duration S] [--warmup S] [--workers N] [--v8-threads]
 *
 * Each side (a router scenario such as router, router-log, router-local or router-global, or the
 * bare floor uws-http1-proxy) runs whole under `valgrind --tool=callgrind --separate-threads=yes
 * --trace-children=yes`, primary and workers, about 50× slower than native. After a warm-up (so
 * V8 has optimised the hot functions), each round zeroes every process's counters, loads the side
 * with wrk (4 connections, closed loop) for the round's duration and dumps them: instructions over
 * the requests wrk completed. Rounds alternate the sides' order; medians are printed, split into
 * the workers' main threads (JavaScript, uWS, the event loop), their other threads (libuv's pool,
 * worker threads) and the primary. Node runs with V8's `--single-threaded`: V8's compiler and
 * garbage-collector helpers run on the main thread, in order, instead of on helper threads
 * whose work under valgrind's one-thread-at-a-time scheduling lags the load by tens of seconds
 * and made rounds differ by half; `--v8-threads` keeps them (the native layout). V8's memory
 * reducer is off too (`--no-memory-reducer`: it starts full collections when the allocation rate
 * per millisecond looks idle, as it does at valgrind's speed); that did not remove the outliers.
 *
 * A router's rounds still differ: some carry 100 million instructions or more beyond the others
 * (a recompilation, a collection). A disturbance only adds instructions, so the lowest round is
 * printed beside the median: the least disturbed count of the work per request, the figure to
 * compare builds by.
 *
 * `--functions N` adds, per side, the N functions with the most instructions of their own per
 * request in the workers' main threads, and for every side after the first the N largest
 * differences from side A, both from each side's lowest round. Node then runs with
 * `--perf-basic-prof`, whose `/tmp/perf-<pid>.map` names the optimised JavaScript callgrind only
 * knows by address (callgrind-functions.ts).
 *
 * Needs valgrind and wrk. Start-up under valgrind takes about a minute per side; the sides start
 * together (instruction counts do not depend on sharing the CPUs).
 */
import { execFileSync } from 'node:child_process';
import { resolve } from 'node:path';
import { spawnProcess, freePort, waitWhileRunning, type Proc } from '../test/helpers/processes.js';
import { awaitDumps, splitByRole, type Split, type ThreadDump } from './callgrind-dumps.js';
import { addMapped, largest, PerfMap, selfCostByFunction } from './callgrind-functions.js';
import { readCommandLine, UsageError, type CommandLine, type CommandSpec } from './cli-args.js';
import { runWrk } from './load-wrk.js';
import { median } from './order-stats.js';
import { processTree } from './proc-cpu.js';
import { limitModeOf, routerEnv, routerResources, scenarioPath, SCENARIOS, usesRedis, type Scenario, type TargetKey } from './scenarios.js';
import { haveBinary, startMock, startRedis, tempDir } from './targets.js';
import { writeFileSync } from 'node:fs';
import { stopChildrenOnInterrupt } from './interrupt.js';

export const COMMAND: CommandSpec = {
  usage: 'Usage: node dist/bench/instructions.js <tree>[:scenario] [<tree>[:scenario] ...] [--rounds N] [--duration S] [--warmup S] [--workers N] [--v8-threads] [--functions N]',
  values: ['--rounds', '--duration', '--warmup', '--workers', '--functions'],
  flags: ['--v8-threads'],
  positionals: [1, Infinity],
};

interface Side {
  readonly label: string;
  readonly tree: string;
  readonly scenario: Scenario;
  readonly dir: string;
  proc: Proc | null;
  url: string;
  /** Per round: the split by role, wrk's completed requests and (with --functions) the workers' main threads by function. */
  readonly rounds: { split: Split; requests: number; functions: Map<string, number> | null }[];
}

/** The command line of a side: the tree's router CLI or its bare floor proxy. */
function command(s: Side, port: number, mockUrl: string, mockPort: number, redis: string | null, workers: number): { args: string[]; env: NodeJS.ProcessEnv } {
  const dist = resolve(s.tree, 'dist');
  const common = ['--port', String(port), '--workers', String(workers)];
  if (s.scenario.target === 'uws-http1-proxy') {
    return { args: [`${dist}/bench/upstream-proxy.js`, '--client', 'http1', '--upstream', mockUrl, ...common], env: {} };
  }
  const target = s.scenario.target as TargetKey;
  const file = `${s.dir}/resources.yaml`;
  writeFileSync(file, routerResources(mockPort, mockPort, limitModeOf(target, redis)));
  return {
    args: [`${dist}/cli.js`, '--resources', file, '--host', '127.0.0.1', ...common],
    // Under valgrind the router runs tens of times slower: Redis's default 50 ms would time calls
    // out, and the bench's closed failure mode would answer them 503.
    env: { ...routerEnv(target, `${s.dir}/access.log`), ROUTER_DRAIN_DELAY: '0', RATE_LIMIT_REDIS_TIMEOUT: '10s' },
  };
}

/** Whether the side answers a request 200 (a refused connection throws: waitWhileRunning tries again). */
async function answers(url: string, body: string): Promise<boolean> {
  const r = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
  await r.arrayBuffer();
  return r.status === 200;
}

/** Waits (up to 300 s: start-up under valgrind takes about a minute) until the side answers a request. */
function waitUntilAnswering(s: Side): Promise<boolean> {
  return waitWhileRunning(`${s.label} to answer under valgrind`, s.proc!, () => answers(s.url, s.scenario.bodies[0]), 300_000);
}

function callgrindControl(flag: '-z' | '-d', pid: number): void {
  execFileSync('callgrind_control', [flag, String(pid)], { stdio: 'ignore' });
}

const k = (v: number): string => (v / 1000).toFixed(1);

export interface InstructionsOptions {
  /** Per side: its tree and scenario, in the order given. */
  readonly sides: readonly { readonly tree: string; readonly scenario: Scenario }[];
  readonly rounds: number;
  readonly durationS: number;
  readonly warmupS: number;
  readonly workers: number;
  readonly v8Threads: boolean;
  readonly functions: number;
}

/** The tool's settings from its command line; a scenario the tool does not run is a usage error. */
export function instructionsOptions(line: CommandLine): InstructionsOptions {
  const sides = line.positionals.map((arg) => {
    const [tree, id = 'router-local'] = arg.split(':');
    const scenario = SCENARIOS.find((s) => s.id === id);
    if (scenario === undefined || !(scenario.target.startsWith('router-') || scenario.target === 'uws-http1-proxy') || scenario.target === 'router-tenant' || scenario.target === 'router-trace') {
      throw new UsageError(`${arg}: "${id}" is not a scenario this tool runs (a router without auth or tracing, or uws-http1-proxy)`);
    }
    return { tree, scenario };
  });
  return {
    sides,
    rounds: line.positiveNumber('--rounds') ?? 7,
    durationS: line.positiveNumber('--duration') ?? 15,
    warmupS: line.positiveNumber('--warmup') ?? 120,
    workers: line.positiveNumber('--workers') ?? 1,
    v8Threads: line.has('--v8-threads'),
    functions: line.positiveNumber('--functions') ?? 0,
  };
}

async function main(): Promise<void> {
  stopChildrenOnInterrupt('instructions');
  const { sides: chosen, rounds, durationS, warmupS, workers, v8Threads, functions } = readCommandLine(COMMAND, instructionsOptions);
  for (const bin of ['valgrind', 'callgrind_control', 'wrk']) if (!haveBinary(bin)) throw new Error(`${bin} is not installed (apt-get install valgrind wrk)`);
  const sides: Side[] = chosen.map(({ tree, scenario }, i) => (
    { label: String.fromCharCode(65 + i), tree, scenario, dir: tempDir('ir-instructions-'), proc: null, url: '', rounds: [] }
  ));
  const mock = await startMock('mock');
  const redis = sides.some((s) => usesRedis(s.scenario.target as TargetKey)) ? await startRedis('redis-server') : null;
  try {
    for (const s of sides) {
      const port = await freePort();
      const { args: nodeArgs, env } = command(s, port, mock.url, mock.port, redis?.address ?? null, workers);
      s.proc = spawnProcess('valgrind', ['--tool=callgrind', '--separate-threads=yes', '--trace-children=yes', `--callgrind-out-file=${s.dir}/cg.%p`, process.execPath, '--no-memory-reducer', ...(v8Threads ? [] : ['--single-threaded']), ...(functions > 0 ? ['--perf-basic-prof'] : []), ...nodeArgs], env, { name: `${s.label} under valgrind`, keepChars: 20_000 });
      s.url = `http://127.0.0.1:${port}${scenarioPath(s.scenario)}`;
    }
    await Promise.all(sides.map(waitUntilAnswering));
    const spec = (s: Side, d: number) => ({ url: s.url, bodies: s.scenario.bodies, connections: 4, durationS: d });
    for (const s of sides) await runWrk('wrk', spec(s, warmupS));
    for (let r = 0; r < rounds; r++) {
      for (const s of r % 2 === 0 ? sides : [...sides].reverse()) {
        const pids = processTree(s.proc!.pid);
        for (const pid of pids) callgrindControl('-z', pid);
        const x = await runWrk('wrk', spec(s, durationS));
        for (const pid of pids) callgrindControl('-d', pid);
        if (x.non2xx > 0 || x.errors > 0) throw new Error(`${s.label}: ${x.non2xx} answers other than 2xx and ${x.errors} errors in round ${r + 1}`);
        const byFunction = functions > 0 ? new Map<string, number>() : null;
        const onText = byFunction === null ? undefined : (d: ThreadDump, text: string): void => {
          if (d.pid !== s.proc!.pid && d.thread === 1) addMapped(byFunction, selfCostByFunction(text), PerfMap.ofProcess(d.pid), resolve(s.tree));
        };
        const split = splitByRole(await awaitDumps(s.dir, pids, undefined, onText), s.proc!.pid);
        s.rounds.push({ split, requests: x.requests, functions: byFunction });
        const per = (v: number): string => k(v / x.requests);
        process.stderr.write(`${s.label} round ${r + 1}: ${x.requests} requests, thousand instructions per request: workers' main ${per(split.workersMain)}, workers' other ${per(split.workersOther)}, primary ${per(split.primary)}\n`);
      }
    }
    process.stdout.write(`${rounds} rounds of ${durationS} s after ${warmupS} s of warm-up, ${workers} worker${workers === 1 ? '' : 's'}, thousand instructions per request, medians and the lowest round's total:\n\n`
      + '| side | tree:scenario | workers\' main threads | workers\' other threads | primary | total | range | lowest − A\'s lowest |\n|---|---|---|---|---|---|---|---|\n');
    const totalsOf = (s: Side): number[] => s.rounds.map(roundTotal);
    const lowest = sides.map((s) => Math.min(...totalsOf(s)));
    for (const [i, s] of sides.entries()) {
      const per = (f: (x: Split) => number): number => median(s.rounds.map((x) => f(x.split) / x.requests));
      const all = totalsOf(s);
      process.stdout.write(`| ${s.label} | ${s.tree}:${s.scenario.id} | ${k(per((x) => x.workersMain))} | ${k(per((x) => x.workersOther))} | ${k(per((x) => x.primary))} | ${k(median(all))} | ${k(lowest[i])}–${k(Math.max(...all))} | ${i === 0 ? '' : k(lowest[i] - lowest[0])} |\n`);
    }
    if (functions > 0) printFunctions(sides, functions);
  } finally {
    for (const s of sides) {
      if (s.proc === null) continue;
      const pids = processTree(s.proc.pid);
      await s.proc.stop('SIGTERM');
      for (const pid of pids) {
        try { process.kill(pid, 'SIGKILL'); } catch { /* gone */ }
      }
    }
    await mock.proc.stop('SIGTERM');
    await redis?.proc.stop('SIGTERM');
  }
}

/** A round's instructions per request, every process and thread of the side. */
function roundTotal(x: Side['rounds'][number]): number {
  return (x.split.workersMain + x.split.workersOther + x.split.primary) / x.requests;
}

/** Per side, its lowest round's functions per request; then each side's largest differences from A's. */
function printFunctions(sides: readonly Side[], top: number): void {
  const perRequest = sides.map((s) => {
    const low = s.rounds.reduce((a, b) => (roundTotal(b) < roundTotal(a) ? b : a));
    return new Map([...low.functions!].map(([n, v]) => [n, v / low.requests]));
  });
  const row = ([name, v]: [string, number]): string => `| ${k(v)} | ${name.replaceAll('|', '\\|').slice(0, 140)} |\n`;
  for (const [i, s] of sides.entries()) {
    process.stdout.write(`\n${s.label} (${s.tree}:${s.scenario.id}), lowest round, workers' main threads, thousand instructions per request by function (self):\n\n| k instr | function |\n|---|---|\n`);
    for (const r of largest(perRequest[i], top)) process.stdout.write(row(r));
    if (i === 0) continue;
    process.stdout.write(`\n${s.label} − A, the largest differences by function:\n\n| k instr | function |\n|---|---|\n`);
    for (const r of largest(perRequest[i], top, perRequest[0])) process.stdout.write(row(r));
  }
}

if (process.argv[1]?.endsWith('/instructions.js')) await main();
