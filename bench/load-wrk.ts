/**
 * wrk as a child process: POST bodies from a generated Lua script whose `done()` prints the
 * summary and latency percentiles (p50/p90/p99/p99.9) as one JSON line, so nothing depends on
 * parsing wrk's human output. wrk's CPU is read from this process's reaped-children times.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadResultOf, type LoadResult, type LoadSpec, type SummaryJson } from './load-types.js';
import { runLoadChild } from './proc-cpu.js';
import { tempDir } from './targets.js';

const MARK = 'WRK_JSON ';

function luaString(s: string): string {
  if (s.includes(']==]')) throw new Error('request body must not contain "]==]"');
  return `[==[${s}]==]`;
}

/**
 * The Lua script: a static request for one body (fastest in wrk), `request()` rotation for more.
 * With `intervalMs`, each connection waits that long on average before its next request
 * (wrk's `delay()`, whole milliseconds, so floor or ceil at random to hit the mean): an
 * approximately fixed rate of connections / (interval + latency), wrk-style think time rather
 * than wrk2's open loop.
 */
export function wrkScript(bodies: readonly string[], intervalMs?: number, headers: Readonly<Record<string, string>> = {}): string {
  if (bodies.length === 0) throw new Error('wrk needs at least one body');
  const rotation = bodies.length === 1 ? '' : `
local bodies = { ${bodies.map(luaString).join(', ')} }
local reqs = {}
local i = 0
init = function(args)
  for k = 1, #bodies do reqs[k] = wrk.format(nil, nil, nil, bodies[k]) end
end
request = function()
  i = i % #reqs + 1
  return reqs[i]
end
`;
  return `wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
${Object.entries(headers).map(([k, v]) => `wrk.headers[ ${luaString(k)} ] = ${luaString(v)}\n`).join('')}wrk.body = ${luaString(bodies[0])}
${rotation}${intervalMs === undefined ? '' : `
local interval = ${intervalMs}
local base = math.floor(interval)
delay = function()
  if math.random() < interval - base then return base + 1 end
  return base
end
`}
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format('${MARK}{"requests":%d,"duration_us":%d,"errors":{"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d},' ..
    '"latency_us":{"mean":%.3f,"max":%d,"p50":%d,"p99":%d,"p999":%d}}\\n',
    summary.requests, summary.duration, e.connect, e.read, e.write, e.status, e.timeout,
    latency.mean, latency.max, latency:percentile(50), latency:percentile(99), latency:percentile(99.9)))
end
`;
}

let scriptDir: string | null = null;

export async function runWrk(bin: string, spec: LoadSpec, threads = 1): Promise<LoadResult> {
  scriptDir ??= tempDir('ir-bench-wrk-');
  const script = join(scriptDir, `s${Math.random().toString(36).slice(2)}.lua`);
  writeFileSync(script, wrkScript(spec.bodies, spec.rate === undefined ? undefined : (spec.connections * 1000) / spec.rate, spec.headers));
  const args = ['-t', String(threads), '-c', String(spec.connections), '-d', `${spec.durationS}s`, '--timeout', '5s', '-s', script, spec.url];
  const { json, loadCpuMs } = await runLoadChild<SummaryJson>('wrk', bin, args, MARK, spec.url);
  return loadResultOf('wrk', json, loadCpuMs);
}
