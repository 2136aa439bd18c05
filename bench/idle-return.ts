/**
 * Load that comes back after a quiet spell: what the first requests of a burst wait for.
 *
 *   node dist/bench/idle-return.js [--target ID] [--rate R] [--quiet S,S,...] [--burst S] [--idle-timeout D] [--slow-ms MS]
 *
 * Starts the mock backend and one target (the full router by default, 2 workers), loads it with
 * open-loop's Poisson arrivals for 4 s, then for each quiet spell in turn waits that long and sends
 * a burst at the same rate. For each burst it prints the p99 and slowest request, the requests at
 * least --slow-ms slow, and the episode of them at the burst's very start (requests scheduled
 * within its first milliseconds, grouped as open-loop groups them). A worker closes a connection to
 * a pod that stayed unused ROUTER_UPSTREAM_IDLE_TIMEOUT (4 s by default; `--idle-timeout` sets it
 * for a router target): after a longer spell a burst opens its connections anew, which is what the
 * comparison of spells below and above it shows (docs/benchmarks.md, "Load after a quiet spell").
 * Each line ends with the connections open to the pod just before the burst and just after it
 * (the kernel's count, /proc/net/tcp): after a spell past the timeout, those the burst opened.
 */
import { openLoopBinary, runOpenLoop } from './load-open-loop.js';
import type { LoadResult, LoadSpec } from './load-types.js';
import { readCommandLine, UsageError, type CommandLine, type CommandSpec } from './cli-args.js';
import { startHttp1Proxy, startMock, startRouter, stopAll, tempDir, type Target } from './targets.js';
import { connectionsTo } from '../test/helpers/tcp-connections.js';
import { LONG_TOKENS, PATH, SCENARIOS, routerEnv, routerResources, limitModeOf, type TargetKey } from './scenarios.js';
import { stopChildrenOnInterrupt } from './interrupt.js';

export const COMMAND: CommandSpec = {
  usage: 'Usage: node dist/bench/idle-return.js [--target router-local|router-log|router-plain|uws-http1-proxy] [--rate R] [--quiet S,S,...] [--burst S] [--idle-timeout D] [--slow-ms MS]',
  values: ['--target', '--rate', '--quiet', '--burst', '--idle-timeout', '--slow-ms'],
};

const TARGETS: ReadonlySet<string> = new Set(['router-local', 'router-log', 'router-plain', 'uws-http1-proxy']);
/** A request scheduled this close to a burst's start opens the burst. */
const START_MS = 5;

export interface IdleReturnOptions {
  readonly target: string;
  readonly rate: number;
  /** Seconds of quiet before each burst, in order. */
  readonly quietS: readonly number[];
  readonly burstS: number;
  /** ROUTER_UPSTREAM_IDLE_TIMEOUT for a router target (undefined: its default). */
  readonly idleTimeout: string | undefined;
  readonly slowMs: number;
}

/** The tool's settings from its command line; --idle-timeout only for a router. */
export function idleReturnOptions(line: CommandLine): IdleReturnOptions {
  const target = line.value('--target') ?? 'router-local';
  if (!TARGETS.has(target)) throw new UsageError(`--target: "${target}" is none of ${[...TARGETS].join(', ')}`);
  const quietRaw = line.value('--quiet') ?? '3,8,3,8';
  const parts = quietRaw.split(',');
  const quietS = parts.map((s) => Number(s));
  if (parts.some((s) => s.trim() === '') || quietS.some((s) => !(s >= 0 && Number.isFinite(s)))) throw new UsageError(`--quiet: "${quietRaw}" is not a list of seconds (0 or more) separated by commas`);
  const idleTimeout = line.value('--idle-timeout');
  if (idleTimeout !== undefined && target === 'uws-http1-proxy') throw new UsageError('--idle-timeout: the bare proxy has no such setting; it applies to a router target');
  return {
    target,
    rate: line.positiveNumber('--rate') ?? 6000,
    quietS,
    burstS: line.positiveNumber('--burst') ?? 2,
    idleTimeout,
    slowMs: line.positiveNumber('--slow-ms') ?? 10,
  };
}

/** Connections open to the pod (the mock) just before a burst and just after it, counted by the kernel. */
export interface PodConnections {
  readonly before: number;
  readonly after: number;
}

/** A burst's line: its tail, its slow requests, the episode at its start (or none), and the connections to the pod. */
export function burstLine(quietS: number, r: LoadResult, pod?: PodConnections): string {
  const slow = r.slow;
  const first = slow?.largest.find((e) => e.at_ms < START_MS);
  const start = first === undefined ? 'none at the start' : `${first.requests} at the start over ${first.span_ms.toFixed(1)} ms (slowest ${first.max_ms.toFixed(1)} ms)`;
  return `after ${quietS} s quiet: ${Math.round(r.rps)} req/s, p99 ${r.latencyMs.p99.toFixed(2)} ms, slowest ${r.latencyMs.max.toFixed(1)} ms; `
    + `${slow === undefined ? '?' : `${slow.requests} requests of ${slow.ms} ms or more in ${slow.episodes} episodes`}, ${start}`
    + (pod === undefined ? '' : `; connections to the pod ${pod.before} before, ${pod.after} after`);
}

async function startTarget(o: IdleReturnOptions, mock: Target, mockLong: Target): Promise<Target> {
  if (o.target === 'uws-http1-proxy') return startHttp1Proxy(mock.url, 2);
  const key = o.target as TargetKey;
  const env = { ...routerEnv(key, `${tempDir('ir-idle-return-')}/access.log`), ...(o.idleTimeout === undefined ? {} : { ROUTER_UPSTREAM_IDLE_TIMEOUT: o.idleTimeout }) };
  return startRouter(`router (${o.target})`, routerResources(mock.port, mockLong.port, limitModeOf(key, null)), 2, env);
}

async function main(): Promise<void> {
  stopChildrenOnInterrupt('idle-return');
  const o = readCommandLine(COMMAND, idleReturnOptions);
  const built = openLoopBinary();
  if (!('bin' in built)) throw new Error(`open-loop is needed: ${built.reason}`);
  const scenario = SCENARIOS.find((s) => s.id === 'router-local')!;
  try {
    const mock = await startMock('mock');
    const mockLong = await startMock('mock-long', ['--output-tokens', String(LONG_TOKENS)]);
    const target = await startTarget(o, mock, mockLong);
    const spec = (durationS: number): LoadSpec => ({ url: `${target.url}${PATH}`, bodies: scenario.bodies, connections: 64, durationS, rate: o.rate, headers: scenario.headers });
    process.stdout.write(`# ${target.name}, ${o.rate} req/s asked (Poisson), bursts of ${o.burstS} s${o.idleTimeout === undefined ? '' : `, ROUTER_UPSTREAM_IDLE_TIMEOUT=${o.idleTimeout}`}\n`);
    await runOpenLoop(built.bin, spec(4), 'poisson', o.slowMs); // warm-up, not read
    for (const quiet of o.quietS) {
      await new Promise((resolve) => setTimeout(resolve, quiet * 1000));
      const before = connectionsTo(mock.port);
      const r = await runOpenLoop(built.bin, spec(o.burstS), 'poisson', o.slowMs);
      process.stdout.write(`${burstLine(quiet, r, { before, after: connectionsTo(mock.port) })}\n`);
    }
  } finally {
    await stopAll();
  }
}

if (process.argv[1]?.endsWith('idle-return.js')) await main();
