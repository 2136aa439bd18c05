/**
 * What streamed answers cost when their chunks come as a model server sends them, one token at a
 * time, paced:
 *
 *   node dist/bench/paced-streams.js [--streams N] [--tps R] [--rounds N] [--duration S] [--workers N]
 *
 * The bench's SSE scenarios have the mock write a whole answer at once, so a proxy reads its 16 or
 * 64 chunks in one or two reads; that measures the router's work per event, not what a chunk costs
 * when it arrives alone. Here two mock backends pace their answers at R tokens a second (16 and 64
 * tokens a stream; a chunk is written per token, the last one with the usage and `[DONE]`), and N
 * wrk connections each ask for one streamed answer after another, so about N × R chunks a second
 * pass through the proxy, each a read of its own and a write of its own, as from a server that
 * decodes N sequences in one batch. Sides, in alternating order each round (the others stopped):
 * direct to the mocks, nginx (`proxy_buffering off`), the floor (uWS + the router's HTTP/1.1
 * client) and the full router (access log, local limit; scenario router-local), each proxy first
 * warmed with 2 s of each length. For each: the CPU
 * of its processes (read over the middle of each run, not its first 1.5 s nor its last 0.5 s) per
 * stream of 16 and of 64 chunks, and from their difference the CPU per chunk;
 * the CPU a second at the 64-chunk load; the CPU per chunk against nginx's. Direct's CPU is the
 * mocks' (which every side also spends, uncounted).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { whileStopped } from './pause-targets.js';
import { treeCpu } from './proc-cpu.js';
import { runWrk } from './load-wrk.js';
import type { LoadResult } from './load-types.js';
import { PATH, PROMPT, routerEnv, routerResources } from './scenarios.js';
import { haveBinary, startHttp1Proxy, startMock, startNginx, startRouter, stopAll, tempDir, type Target } from './targets.js';
import { readCommandLine, UsageError, type CommandLine, type CommandSpec } from './cli-args.js';
import { median } from './order-stats.js';
import { stopChildrenOnInterrupt } from './interrupt.js';

export const COMMAND: CommandSpec = {
  usage: 'Usage: node dist/bench/paced-streams.js [--streams N] [--tps R] [--rounds N] [--duration S] [--workers N]',
  values: ['--streams', '--tps', '--rounds', '--duration', '--workers'],
};

export interface PacedOptions {
  readonly streams: number;
  readonly tps: number;
  readonly rounds: number;
  readonly durationS: number;
  readonly workers: number;
}

export function pacedOptions(line: CommandLine): PacedOptions {
  const tps = line.positiveNumber('--tps') ?? 50;
  const durationS = line.positiveNumber('--duration') ?? 8;
  if (durationS < READ_FROM_S + READ_UNTIL_END_S + 1) throw new UsageError(`--duration: ${durationS} s leaves under a second to read between the run's first ${READ_FROM_S} s and its last ${READ_UNTIL_END_S} s`);
  // wrk gives up on an answer after 5 s (load-wrk.ts).
  if (LONG_CHUNKS / tps > 4) throw new UsageError(`--tps: ${tps} tokens a second makes a ${LONG_CHUNKS}-token stream last over 4 s; at least ${LONG_CHUNKS / 4}`);
  return {
    streams: Math.round(line.positiveNumber('--streams') ?? 256),
    tps,
    rounds: Math.round(line.positiveNumber('--rounds') ?? 3),
    durationS,
    workers: Math.round(line.positiveNumber('--workers') ?? 2),
  };
}

/** Token chunks of the two stream lengths. */
export const SHORT_CHUNKS = 16;
export const LONG_CHUNKS = 64;

/** One length's run on a side: its processes' CPU over the part read, that part's seconds, the mean time of a stream and the connections. */
export interface PacedRun {
  readonly cpuMs: number;
  readonly seconds: number;
  readonly meanMs: number;
  readonly connections: number;
}

/** One side's measurement of one round, for each length. */
export interface PacedRound {
  readonly short: PacedRun;
  readonly long: PacedRun;
}

/**
 * CPU µs per stream: the CPU a second times the seconds one connection's stream takes, over the
 * connections (each connection streams all the time, one answer after another). Dividing the CPU
 * by the streams completed instead would count the streams cut at the run's end, whose chunks the
 * CPU includes, as nothing: up to one stream per connection, a sixth of an 8 s run of 1.3 s streams.
 */
export function cpuPerStreamUs(run: PacedRun): number {
  return ((run.cpuMs / run.seconds) * (run.meanMs / 1000) / run.connections) * 1000;
}

/** What one round says of a side: CPU µs per stream of each length, per extra chunk, and ms per second at the long streams' load. */
export interface PacedFigures {
  readonly shortUs: number;
  readonly longUs: number;
  readonly chunkUs: number;
  readonly cpuMsPerS: number;
}

export function pacedFigures(r: PacedRound): PacedFigures {
  const shortUs = cpuPerStreamUs(r.short);
  const longUs = cpuPerStreamUs(r.long);
  return { shortUs, longUs, chunkUs: (longUs - shortUs) / (LONG_CHUNKS - SHORT_CHUNKS), cpuMsPerS: r.long.cpuMs / r.long.seconds };
}

interface Side {
  readonly id: string;
  readonly label: string;
  /** Where the 16- and 64-chunk streams are asked for, and the model each asks. */
  readonly short: Target;
  readonly long: Target;
  /** The processes whose CPU counts (direct: the mocks). */
  readonly roots: readonly number[];
  /** The processes stopped while other sides are measured (none for direct). */
  readonly own: readonly number[];
  readonly rounds: PacedRound[];
}

const streamBody = (model: string): string => JSON.stringify({ model, prompt: PROMPT, temperature: 0, stream: true });
const SHORT_BODY = [streamBody('sf-model')];
const LONG_BODY = [streamBody('sf-model-long')];

function cpuOf(roots: readonly number[]): () => number {
  const snaps = roots.map(treeCpu);
  return () => snaps.reduce((sum, s) => sum + s.delta(), 0);
}

/** Seconds of each run before its CPU is read (connections opened, streams under way) and at its end not read (streams cut). */
export const READ_FROM_S = 1.5;
export const READ_UNTIL_END_S = 0.5;
/** Seconds of each length through each proxy before the first round. */
export const WARM_UP_S = 2;

/**
 * One run per length: wrk for the whole duration, the side's CPU read over its middle only. A run
 * opens its connections and every proxy its connections to the pod at its start, and cuts every
 * stream under way at its end (a proxy then closes the pod's connection too): neither is what a
 * stream costs in steady state.
 */
async function measure(side: Side, o: PacedOptions): Promise<{ load: LoadResult; run: PacedRun }[]> {
  const out: { load: LoadResult; run: PacedRun }[] = [];
  for (const [target, bodies] of [[side.short, SHORT_BODY], [side.long, LONG_BODY]] as const) {
    const loading = runWrk('wrk', { url: `${target.url}${PATH}`, bodies, connections: o.streams, durationS: o.durationS });
    await sleep(READ_FROM_S * 1000);
    const cpu = cpuOf(side.roots);
    const t0 = performance.now();
    await sleep((o.durationS - READ_FROM_S - READ_UNTIL_END_S) * 1000);
    const cpuMs = cpu();
    const seconds = (performance.now() - t0) / 1000;
    const load = await loading;
    if (load.non2xx > 0 || load.errors > 0) throw new Error(`${side.label}: ${load.non2xx} answers other than 2xx and ${load.errors} socket errors`);
    out.push({ load, run: { cpuMs, seconds, meanMs: load.latencyMs.mean, connections: o.streams } });
  }
  return out;
}

function fixed(n: number, digits: number): string {
  return Number.isFinite(n) ? n.toFixed(digits) : '–';
}

async function main(): Promise<void> {
  stopChildrenOnInterrupt('paced-streams');
  const o = readCommandLine(COMMAND, pacedOptions);
  for (const bin of ['wrk', 'nginx']) if (!haveBinary(bin)) throw new Error(`${bin} is not installed (Debian package ${bin === 'nginx' ? 'nginx-light' : bin})`);
  const paced = ['--tokens-per-second', String(o.tps)];
  const short = await startMock('paced-16', ['--output-tokens', String(SHORT_CHUNKS), ...paced]);
  const long = await startMock('paced-64', ['--output-tokens', String(LONG_CHUNKS), ...paced]);
  try {
    const router = await startRouter('full router', routerResources(short.port, long.port, { kind: 'local' }), o.workers,
      routerEnv('router-local', `${tempDir('ir-paced-')}/access.log`));
    const nginxShort = await startNginx('nginx', short.port, o.workers);
    const nginxLong = await startNginx('nginx', long.port, o.workers);
    const floorShort = await startHttp1Proxy(short.url, o.workers);
    const floorLong = await startHttp1Proxy(long.url, o.workers);
    const pid = (t: Target): number => t.proc.pid;
    const sides: Side[] = [
      { id: 'direct', label: 'direct to the mocks', short, long, roots: [pid(short), pid(long)], own: [], rounds: [] },
      { id: 'nginx', label: 'nginx proxy_pass', short: nginxShort, long: nginxLong, roots: [pid(nginxShort), pid(nginxLong)], own: [pid(nginxShort), pid(nginxLong)], rounds: [] },
      { id: 'floor', label: 'floor (uWS + the router\'s client)', short: floorShort, long: floorLong, roots: [pid(floorShort), pid(floorLong)], own: [pid(floorShort), pid(floorLong)], rounds: [] },
      { id: 'router', label: 'full router', short: router, long: router, roots: [pid(router)], own: [pid(router)], rounds: [] },
    ];
    // The JIT compiles the proxies' paths under load: without this the first side measured in the
    // first round (the full router's 16-chunk streams, most code of all) ran cold.
    for (const side of sides) {
      if (side.own.length === 0) continue;
      for (const [target, bodies] of [[side.short, SHORT_BODY], [side.long, LONG_BODY]] as const) {
        await runWrk('wrk', { url: `${target.url}${PATH}`, bodies, connections: o.streams, durationS: WARM_UP_S });
      }
    }
    for (let r = 0; r < o.rounds; r++) {
      const order = r % 2 === 0 ? sides : [...sides].reverse();
      for (const side of order) {
        const others = sides.filter((s) => s !== side).flatMap((s) => s.own);
        const [s, l] = await whileStopped(others, () => measure(side, o));
        const round: PacedRound = { short: s.run, long: l.run };
        side.rounds.push(round);
        const f = pacedFigures(round);
        process.stderr.write(`round ${r + 1}, ${side.label}: ${s.load.requests} + ${l.load.requests} streams, `
          + `${fixed(f.shortUs, 1)} / ${fixed(f.longUs, 1)} µs per stream, ${fixed(f.chunkUs, 2)} µs per chunk, p99 of a ${LONG_CHUNKS}-chunk stream ${fixed(l.load.latencyMs.p99, 1)} ms\n`);
      }
    }
    const nginxChunk = median(sides.find((s) => s.id === 'nginx')!.rounds.map((x) => pacedFigures(x).chunkUs));
    process.stdout.write(`${o.streams} streams at once, ${o.tps} tokens a second each (about ${Math.round(o.streams * o.tps)} chunks a second), `
      + `${o.workers} workers per proxy, ${o.rounds} rounds of ${o.durationS} s per length, medians:\n\n`
      + `| side | CPU µs per ${SHORT_CHUNKS}-chunk stream | per ${LONG_CHUNKS}-chunk stream | per chunk | × nginx per chunk | CPU ms a second (${LONG_CHUNKS}-chunk streams) |\n|---|---|---|---|---|---|\n`);
    for (const side of sides) {
      const m = (f: (x: PacedFigures) => number): number => median(side.rounds.map((x) => f(pacedFigures(x))));
      const chunk = m((x) => x.chunkUs);
      process.stdout.write(`| ${side.label} | ${fixed(m((x) => x.shortUs), 1)} | ${fixed(m((x) => x.longUs), 1)} | ${fixed(chunk, 2)} | `
        + `${side.id === 'direct' ? '–' : fixed(chunk / nginxChunk, 2)} | ${fixed(m((x) => x.cpuMsPerS), 0)} |\n`);
    }
  } finally {
    await stopAll();
  }
}

if (process.argv[1]?.endsWith('paced-streams.js')) await main();
