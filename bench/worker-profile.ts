/**
 * Where one router worker spends its CPU and its allocations per request, after warm-up, with
 * the start-up left out (the profile of `npm run bench` covers the process's whole life):
 *
 *   node dist/bench/worker-profile.js [--scenario ID] [--duration S] [--rate R] [--top N] [--callers NAME,NAME]
 *
 * Starts the mock backend and the router with one worker and the inspector on a loopback port,
 * loads it with wrk (bench/scenarios.ts; default router-local, the full router), then over the
 * DevTools protocol takes two profiles, one after the other on the same load:
 * - CPU (`Profiler`, 50 µs sampling): self time per function in µs per request; native
 *   functions (uWS's event loop, socket writes) appear by their own names; the idle share says
 *   how often the worker waited for work;
 * - allocations (`HeapProfiler.startSampling`, a sample every 4 KB on average, objects a GC collected included):
 *   bytes allocated per request by the function that allocated them, which is what drives the
 *   young-generation collections.
 * `--callers` adds, for each function named, its self time by the chain of functions that called
 * it (nearest first, up to CALLER_DEPTH): which of the request's steps a native function such as
 * `writeBuffer` or `writeUtf8String` served.
 * The profilers slow the worker (the CPU profile by a few percent); read shares, and compare
 * builds with the same command.
 */
import { WebSocket } from 'undici';
import type { LoadResult, LoadSpec } from './load-types.js';
import { runWrk } from './load-wrk.js';
import { limitModeOf, LONG_TOKENS, routerEnv, routerResources, scenarioPath, SCENARIOS, usesRedis, type Scenario } from './scenarios.js';
import { startMock, startRedis, startRouter, stopAll, tempDir, type Target } from './targets.js';
import { readCommandLine, UsageError, type CommandLine, type CommandSpec } from './cli-args.js';
import { walkSamples, type CallFrame, type CpuProfile, type ProfileNode } from './cpu-profile.js';
import { stopChildrenOnInterrupt } from './interrupt.js';
import { startOtlpCollector } from '../test/helpers/otlp-collector.js';

export const COMMAND: CommandSpec = {
  usage: 'Usage: node dist/bench/worker-profile.js [--scenario ID] [--duration S] [--rate R] [--top N] [--workers N] [--connections N] [--tps R] [--callers NAME,NAME]',
  values: ['--scenario', '--duration', '--rate', '--top', '--workers', '--connections', '--tps', '--callers'],
};
/** Router targets that need nothing beside the mock backends and, for the global limit, a redis-server, or for tracing a mock OTLP collector in this process (no auth file). */
const PROFILED: ReadonlySet<string> = new Set(['router-plain', 'router-trace', 'router-log', 'router-local', 'router-global', 'router-global-no-leases']);

/**
 * Mean bytes between two allocation samples. The profile lists every sample besides the tree: at
 * 256 bytes, 8 s of a busy worker made a 120 MB answer, which the inspector's WebSocket dropped in
 * two runs of three. At 4 KB a second of load still gives over 10,000 samples, plenty for the
 * bytes per request of the functions that allocate most.
 */
const HEAP_SAMPLE_BYTES = 4096;

interface HeapNode { callFrame: CallFrame; selfSize: number; children: HeapNode[] }

/**
 * A DevTools protocol session over the inspector's WebSocket. A call the connection drops before
 * its answer (the socket closed or failed) rejects with what it was waiting for, and so does any
 * call after that: nothing waits for an answer that cannot come.
 */
export class Inspector {
  private next = 0;
  private readonly pending = new Map<number, { method: string; settle: (m: { result?: unknown; error?: { message: string } }) => void; reject: (err: Error) => void }>();
  private closed: string | null = null;
  private constructor(private readonly ws: WebSocket) {
    ws.addEventListener('message', (e) => {
      const m = JSON.parse(String(e.data)) as { id?: number; result?: unknown; error?: { message: string } };
      if (m.id === undefined) return;
      this.pending.get(m.id)?.settle(m);
      this.pending.delete(m.id);
    });
    ws.addEventListener('error', () => this.drop('failed'));
    ws.addEventListener('close', (e) => this.drop(`closed (code ${e.code}${e.reason === '' ? '' : `, ${e.reason}`})`));
  }

  static async open(url: string): Promise<Inspector> {
    const ws = new WebSocket(url);
    await new Promise<void>((resolve, reject) => {
      ws.addEventListener('open', () => resolve());
      ws.addEventListener('error', () => reject(new Error(`cannot open the inspector at ${url}`)));
    });
    return new Inspector(ws);
  }

  call<T>(method: string, params: object = {}): Promise<T> {
    if (this.closed !== null) return Promise.reject(new Error(`${method}: the inspector connection ${this.closed}`));
    const id = ++this.next;
    return new Promise<T>((resolve, reject) => {
      this.pending.set(id, { method, reject, settle: (m) => (m.error !== undefined ? reject(new Error(`${method}: ${m.error.message}`)) : resolve(m.result as T)) });
      this.ws.send(JSON.stringify({ id, method, params }));
    });
  }

  private drop(how: string): void {
    this.closed ??= how;
    for (const p of this.pending.values()) p.reject(new Error(`${p.method}: the inspector connection ${how} before the answer came`));
    this.pending.clear();
  }

  close(): void {
    this.ws.close();
  }
}

/** `name file:line` of a profile's call frame, paths shortened to dist/… or the package. */
export function frameName(f: CallFrame): string {
  const where = f.url === '' ? '' : ` ${f.url.replace(/^.*\/(dist|node_modules)\//, '').replace(/^file:\/\//, '')}:${f.lineNumber + 1}`;
  return `${f.functionName === '' ? '(anonymous)' : f.functionName}${where}`;
}

/** Self time per function (µs) and idle time (µs) of a CPU profile. */
export function cpuSelfTimes(p: CpuProfile): { busy: number; idle: number; byFunction: Map<string, number> } {
  const byFunction = new Map<string, number>();
  let busy = 0;
  const idle = walkSamples(p, (frame, us) => {
    busy += us;
    const k = frameName(frame);
    byFunction.set(k, (byFunction.get(k) ?? 0) + us);
  });
  return { busy, idle, byFunction };
}

/** Frames above a function that `--callers` names. */
export const CALLER_DEPTH = 7;

/**
 * Self time (µs) of the samples in functions named `name`, by the chain of their callers (frame
 * names nearest first, joined by " < ", at most `depth`; "(no caller)" for a frame under the root).
 */
export function callerChains(p: CpuProfile, name: string, depth = CALLER_DEPTH): Map<string, number> {
  const byId = new Map<number, ProfileNode>();
  const parent = new Map<number, ProfileNode>();
  for (const n of p.nodes) {
    byId.set(n.id, n);
    for (const c of n.children ?? []) parent.set(c, n);
  }
  const chains = new Map<string, number>();
  for (let i = 0; i < p.samples.length; i++) {
    const n = byId.get(p.samples[i]);
    if (n === undefined || n.callFrame.functionName !== name) continue;
    const names: string[] = [];
    for (let q = parent.get(n.id); q !== undefined && q.callFrame.functionName !== '(root)' && names.length < depth; q = parent.get(q.id)) {
      names.push(frameName(q.callFrame));
    }
    const key = names.length === 0 ? '(no caller)' : names.join(' < ');
    chains.set(key, (chains.get(key) ?? 0) + (p.timeDeltas[i] ?? 0));
  }
  return chains;
}

/** A `--callers` table: one function's self time per request by its callers, the largest `top` chains. */
function callersTable(name: string, chains: Map<string, number>, perRequest: (v: number) => number, top: number): string {
  let total = 0;
  for (const v of chains.values()) total += v;
  if (total === 0) return `\nCallers of \`${name}\`: no sample in it\n`;
  const rows = [...chains].sort((a, b) => b[1] - a[1]).slice(0, top);
  return `\nCallers of \`${name}\` (${perRequest(total).toFixed(2)} µs per request; nearest caller first)\n\n| callers | µs per request | share |\n|---|---|---|\n`
    + rows.map(([k, v]) => `| \`${k}\` | ${perRequest(v).toFixed(2)} | ${(100 * v / total).toFixed(1)}% |`).join('\n') + '\n';
}

/** Bytes allocated per function of a sampling heap profile, and their sum. */
export function allocatedBytes(head: HeapNode): { total: number; byFunction: Map<string, number> } {
  const byFunction = new Map<string, number>();
  let total = 0;
  const stack: HeapNode[] = [head];
  while (stack.length > 0) {
    const n = stack.pop()!;
    if (n.selfSize > 0) {
      total += n.selfSize;
      const k = frameName(n.callFrame);
      byFunction.set(k, (byFunction.get(k) ?? 0) + n.selfSize);
    }
    for (const c of n.children) stack.push(c);
  }
  return { total, byFunction };
}

function table(byFunction: Map<string, number>, perRequest: (v: number) => number, unit: string, total: number, top: number): string {
  const rows = [...byFunction].sort((a, b) => b[1] - a[1]).slice(0, top);
  return `| function | ${unit} per request | share |\n|---|---|---|\n`
    + rows.map(([k, v]) => `| \`${k}\` | ${perRequest(v).toFixed(unit === 'µs' ? 2 : 0)} | ${(100 * v / total).toFixed(1)}% |`).join('\n') + '\n';
}

export interface WorkerProfileOptions {
  readonly scenario: Scenario; readonly durationS: number; readonly rate: number | undefined; readonly top: number; readonly workers: number;
  /** wrk's connections (64 unless given). */
  readonly connections: number;
  /** Tokens a second the mocks pace their answers at, as a model server sends them; undefined: as fast as they can. */
  readonly tps: number | undefined;
  /** Functions whose callers the report breaks their time down by (--callers). */
  readonly callers: readonly string[];
}

/** The tool's settings from its command line; a scenario not on a profiled target is a usage error. */
export function workerProfileOptions(line: CommandLine): WorkerProfileOptions {
  const id = line.value('--scenario') ?? 'router-local';
  const scenario = SCENARIOS.find((s) => s.id === id);
  if (scenario === undefined || !PROFILED.has(scenario.target)) {
    throw new UsageError(`--scenario: "${id}" is none of the scenarios on ${[...PROFILED].join(', ')} (bench/scenarios.ts)`);
  }
  return {
    scenario,
    durationS: line.positiveNumber('--duration') ?? 8,
    rate: line.positiveNumber('--rate'),
    top: line.positiveNumber('--top') ?? 30,
    workers: line.positiveNumber('--workers') ?? 1,
    connections: line.positiveNumber('--connections') ?? 64,
    tps: line.positiveNumber('--tps'),
    callers: callerNames(line.value('--callers')),
  };
}

function callerNames(list: string | undefined): string[] {
  if (list === undefined) return [];
  const names = list.split(',').map((n) => n.trim());
  if (names.some((n) => n === '')) throw new UsageError(`--callers: "${list}" has an empty name; give function names separated by commas`);
  return names;
}

async function main(): Promise<void> {
  stopChildrenOnInterrupt('worker-profile');
  const { scenario, durationS, rate, top, workers, connections, tps, callers } = readCommandLine(COMMAND, workerProfileOptions);
  const target = scenario.target as Parameters<typeof routerEnv>[0];
  const paced = tps === undefined ? [] : ['--tokens-per-second', String(tps)];
  const mock = await startMock('mock', paced);
  const mockLong = await startMock('mock-long', ['--output-tokens', String(LONG_TOKENS), ...paced]);
  const redis = usesRedis(target) ? await startRedis('redis-server') : null;
  const collector = target === 'router-trace' ? await startOtlpCollector({ keepSpans: false }) : null;
  let inspector: Inspector | null = null;
  try {
    const router: Target = await startRouter(`router (${workers} worker${workers === 1 ? '' : 's'}, inspector on the last)`, routerResources(mock.port, mockLong.port, limitModeOf(target, redis?.address ?? null)), workers,
      routerEnv(target, `${tempDir('ir-worker-profile-')}/access.log`, collector?.url ?? null), ['--inspect=127.0.0.1:0']);
    // The primary prints its inspector address first, then the worker's (cluster passes --inspect on with a port of its own).
    const urls = [...router.proc.output().matchAll(/Debugger listening on (ws:\/\/\S+)/g)].map((m) => m[1]);
    if (urls.length < 2) throw new Error(`the worker's inspector address is not in the router's output:\n${router.proc.output()}`);
    inspector = await Inspector.open(urls[urls.length - 1]);
    const spec = (d: number): LoadSpec => ({ url: `${router.url}${scenarioPath(scenario)}`, bodies: scenario.bodies, connections, durationS: d, rate, headers: scenario.headers });
    await runWrk('wrk', spec(3)); // warm-up: the JIT settles before anything is sampled

    await inspector.call('Profiler.enable');
    await inspector.call('Profiler.setSamplingInterval', { interval: 50 });
    await inspector.call('Profiler.start');
    const cpuLoad: LoadResult = await runWrk('wrk', spec(durationS));
    const { profile } = await inspector.call<{ profile: CpuProfile }>('Profiler.stop');
    const cpu = cpuSelfTimes(profile);
    const cpuRequests = cpuLoad.rps * durationS / workers; // the profiled worker's share of the requests

    await inspector.call('HeapProfiler.enable');
    await inspector.call('HeapProfiler.startSampling', { samplingInterval: HEAP_SAMPLE_BYTES, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true });
    const heapLoad: LoadResult = await runWrk('wrk', spec(durationS));
    const heap = await inspector.call<{ profile: { head: HeapNode } }>('HeapProfiler.stopSampling');
    const alloc = allocatedBytes(heap.profile.head);
    const heapRequests = heapLoad.rps * durationS / workers;

    const load = `${rate === undefined ? 'closed loop' : `${rate} req/s asked`}, ${connections} connections${tps === undefined ? '' : `, answers paced at ${tps} tokens a second`}`;
    process.stdout.write(`# One worker${workers === 1 ? '' : ` of ${workers} (per request: the worker's CPU over 1/${workers} of all requests)`} of scenario ${scenario.id} (${scenario.label}), ${load}, ${durationS} s per profile\n\n`
      + `CPU: ${Math.round(cpuLoad.rps)} req/s; busy ${(cpu.busy / cpuRequests).toFixed(2)} µs per request, idle ${(100 * cpu.idle / (cpu.busy + cpu.idle)).toFixed(1)}% of the time\n\n`
      + table(cpu.byFunction, (v) => v / cpuRequests, 'µs', cpu.busy, top)
      + callers.map((name) => callersTable(name, callerChains(profile, name), (v) => v / cpuRequests, Math.min(top, 10))).join('')
      + `\nAllocations: ${Math.round(heapLoad.rps)} req/s; ${(alloc.total / heapRequests).toFixed(0)} bytes allocated per request (sampled every ${HEAP_SAMPLE_BYTES} bytes)\n\n`
      + table(alloc.byFunction, (v) => v / heapRequests, 'bytes', alloc.total, top));
  } finally {
    inspector?.close();
    await stopAll();
    await collector?.close();
  }
}

if (process.argv[1]?.endsWith('worker-profile.js')) await main();
