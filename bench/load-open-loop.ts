/**
 * bench/open-loop/open-loop.c as a child process: a fixed rate whose arrivals are spaced in
 * microseconds (Poisson by default), latency counted from each request's scheduled time. wrk's
 * think time paces a rate with millisecond timers, so its "fixed rate" arrives as a burst of
 * rate/1000 requests every millisecond; this is the generator of the bench's fixed-rate runs
 * where a C compiler is at hand (docs/benchmarks.md, "Latency at half load").
 *
 * The binary is compiled on first use into dist/bench/open-loop/ with `cc` (again when the source
 * is newer). Its CPU is read from this process's reaped-children times, as wrk's.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadResultOf, type LoadResult, type LoadSpec, type SlowEpisodes, type SummaryJson } from './load-types.js';
import { runLoadChild } from './proc-cpu.js';
import { ROOT, tempDir } from './targets.js';

const MARK = 'OPEN_LOOP_JSON ';
const SOURCE = join(ROOT, 'bench/open-loop/open-loop.c');
const BINARY = join(ROOT, 'dist/bench/open-loop/open-loop');

export type Arrivals = 'poisson' | 'uniform';
/**
 * Which free connection a request goes out on: the one free longest (fifo, the default: a rate
 * below the connections' capacity is spread over all of them, as wrk spreads it), or the one freed
 * last (lifo: as an HTTP client's keep-alive pool does, which keeps a light load on few connections).
 */
export type ConnectionPick = 'fifo' | 'lifo';

/** The compiled generator's path, or why there is none (no C compiler, or it failed). */
export function openLoopBinary(): { bin: string } | { reason: string } {
  if (existsSync(BINARY) && statSync(BINARY).mtimeMs >= statSync(SOURCE).mtimeMs) return { bin: BINARY };
  mkdirSync(join(ROOT, 'dist/bench/open-loop'), { recursive: true });
  const cc = spawnSync('cc', ['-O2', '-o', BINARY, SOURCE, '-lm'], { encoding: 'utf8' });
  if (cc.error !== undefined) return { reason: `no C compiler (cc: ${cc.error.message})` };
  if (cc.status !== 0) return { reason: `cc failed on ${SOURCE}: ${(cc.stderr ?? '').trim().split('\n')[0]}` };
  return { bin: BINARY };
}

/** The HTTP/1.1 requests of `spec`, as wrk sends them: POST with a JSON body and the spec's headers. */
export function rawRequests(spec: LoadSpec): Buffer[] {
  const url = new URL(spec.url);
  const extra = Object.entries(spec.headers ?? {}).map(([k, v]) => `${k}: ${v}\r\n`).join('');
  return spec.bodies.map((body) => {
    const b = Buffer.from(body, 'utf8');
    if (b.includes(0)) throw new Error('a request body must not contain a NUL byte');
    const head = `POST ${url.pathname}${url.search} HTTP/1.1\r\nHost: ${url.host}\r\nContent-Type: application/json\r\n${extra}Content-Length: ${b.length}\r\n\r\n`;
    return Buffer.concat([Buffer.from(head, 'latin1'), b]);
  });
}

interface OpenLoopJson extends SummaryJson {
  /** The answers that came by the end of the run's duration (`requests` counts the later ones too). */
  in_window: number;
  late: number;
  slow?: SlowEpisodes;
}

let requestDir: string | null = null;

/**
 * One run at `spec.rate` (required) for `spec.durationS`, on `spec.connections` keep-alive
 * connections. `slowMs`: also group the requests at least that slow by when they were scheduled
 * (`slow` in the result), to tell a stall from queueing. `pick`: which free connection a request
 * takes (ConnectionPick).
 */
export async function runOpenLoop(bin: string, spec: LoadSpec, arrivals: Arrivals = 'poisson', slowMs?: number, pick: ConnectionPick = 'fifo'): Promise<LoadResult> {
  if (spec.rate === undefined) throw new Error('open-loop needs a rate');
  requestDir ??= tempDir('ir-bench-open-loop-');
  const file = join(requestDir, `r${Math.random().toString(36).slice(2)}.bin`);
  const reqs = rawRequests(spec);
  writeFileSync(file, Buffer.concat(reqs.flatMap((r, i) => (i === 0 ? [r] : [Buffer.from([0]), r]))));
  const url = new URL(spec.url);
  const args = ['--addr', url.host, '--requests', file, '--rate', String(spec.rate), '--duration', String(spec.durationS),
    '--connections', String(spec.connections), '--arrivals', arrivals, '--pick', pick, ...(slowMs === undefined ? [] : ['--slow-ms', String(slowMs)])];
  const { json, loadCpuMs } = await runLoadChild<OpenLoopJson>('open-loop', bin, args, MARK, spec.url);
  const r = loadResultOf('open-loop', json, loadCpuMs);
  // The rate is what was answered within the run, as wrk counts it: a target falling behind the
  // asked rate answers the rest after the window (their latencies are in the percentiles).
  return { ...r, rps: json.in_window / r.seconds, late: json.late, ...(json.slow === undefined ? {} : { slow: json.slow }) };
}
