/**
 * autocannon (programmatic API) in a child process of its own, so that its CPU is measurable
 * (reaped-children times) and it never shares an event loop with the orchestrator.
 *   parent: runAutocannon(spec) spawns `node load-autocannon.js '<spec JSON>'`;
 *   child:  runs autocannon and prints one JSON line.
 * Bodies rotate per connection through autocannon's `requests` array. `rate` maps to
 * autocannon's `overallRate` (fixed-rate, wrk2-style load).
 */
import { fileURLToPath } from 'node:url';
import type { LoadResult, LoadSpec } from './load-types.js';
import { runLoadChild } from './proc-cpu.js';

const MARK = 'AUTOCANNON_JSON ';
const SELF = fileURLToPath(import.meta.url);

export async function runAutocannon(spec: LoadSpec): Promise<LoadResult> {
  const { json, loadCpuMs } = await runLoadChild<Omit<LoadResult, 'loadCpuMs'>>(
    'autocannon', process.execPath, [SELF, JSON.stringify(spec)], MARK, spec.url);
  return { ...json, loadCpuMs };
}

interface AutocannonOut {
  requests: { total: number };
  duration: number;
  non2xx: number;
  errors: number;
  timeouts: number;
  latency: { p50: number; p99: number; p99_9: number; mean: number; max: number };
}

async function child(spec: LoadSpec): Promise<void> {
  const { default: autocannon } = await import('autocannon');
  const headers = { 'content-type': 'application/json', ...spec.headers };
  const opts: Record<string, unknown> = {
    url: spec.url,
    connections: spec.connections,
    duration: spec.durationS,
    method: 'POST',
    headers,
    body: spec.bodies[0],
    timeout: 5,
  };
  if (spec.bodies.length > 1) opts.requests = spec.bodies.map((body) => ({ method: 'POST', headers, body }));
  if (spec.rate !== undefined) opts.overallRate = spec.rate;
  const r = (await autocannon(opts as never)) as unknown as AutocannonOut;
  const result: Omit<LoadResult, 'loadCpuMs'> = {
    tool: 'autocannon',
    requests: r.requests.total,
    seconds: r.duration,
    rps: r.requests.total / r.duration,
    non2xx: r.non2xx,
    errors: r.errors, // autocannon counts its timeouts among its errors already
    latencyMs: { p50: r.latency.p50, p99: r.latency.p99, p999: r.latency.p99_9, mean: r.latency.mean, max: r.latency.max },
  };
  process.stdout.write(`${MARK}${JSON.stringify(result)}\n`);
}

if (process.argv[1] === SELF) {
  child(JSON.parse(process.argv[2] ?? 'null') as LoadSpec).catch((err: Error) => {
    process.stderr.write(`${err.stack ?? err.message}\n`);
    process.exit(1);
  });
}
