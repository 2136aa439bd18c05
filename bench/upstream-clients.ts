/**
 * The upstream-client comparison: undici `Pool.dispatch` (as the router today), undici `Client`
 * per connection with the raw-header legacy handler, and the purpose-built HTTP/1.1 client of
 * src/upstream/http1, each behind the same bare uWS front (bench/upstream-proxy.ts) in front of
 * the same mock backend, loaded with wrk in interleaved rounds (order rotated each round).
 * Prints req/s and server CPU µs per request (proxy process tree) per candidate and load, and
 * the ratios to undici Pool, medians over the rounds of ONE run.
 *
 *   npm run build && node dist/bench/upstream-clients.js [--rounds 3] [--duration 5] [--connections 64] [--workers 2]
 */
import { join } from 'node:path';
import { runWrk } from './load-wrk.js';
import { treeCpu } from './proc-cpu.js';
import { median } from './order-stats.js';
import { freePort, spawnProcess, waitWhileRunning } from '../test/helpers/processes.js';
import { haveBinary, ROOT, startMock, stopAll, type Target } from './targets.js';
import { CANDIDATES, type CandidateKind } from './upstream-candidates.js';
import { PATH, PROMPT } from './scenarios.js';
import { readCommandLine, type CommandSpec } from './cli-args.js';
import { stopChildrenOnInterrupt } from './interrupt.js';

const log = (m: string): void => { process.stderr.write(`[upstream-clients] ${m}\n`); };

const LOADS = [
  { id: 'json', body: JSON.stringify({ model: 'sf-model', prompt: PROMPT, temperature: 0 }) },
  { id: 'sse16', body: JSON.stringify({ model: 'sf-model', prompt: PROMPT, temperature: 0, stream: true }) },
] as const;

const COMMAND: CommandSpec = {
  usage: 'Usage: node dist/bench/upstream-clients.js [--rounds N] [--duration S] [--connections N] [--workers N]',
  values: ['--rounds', '--duration', '--connections', '--workers'],
};

async function startCandidate(kind: CandidateKind, upstream: string, workers: number): Promise<Target> {
  const port = await freePort();
  const proc = spawnProcess(process.execPath,
    [join(ROOT, 'dist/bench/upstream-proxy.js'), '--client', kind, '--port', String(port), '--upstream', upstream, '--workers', String(workers)], {}, { name: `proxy ${kind}` });
  await waitWhileRunning(`proxy ${kind} to be ready`, proc, () => /ready with/.test(proc.output()));
  return { name: kind, url: `http://127.0.0.1:${port}`, port, proc };
}

/** Every candidate answers exactly what the mock answers (status, body bytes but for the id/created fields). */
async function sanity(targets: Map<CandidateKind, Target>, mock: Target): Promise<void> {
  const norm = (s: string): string => s.replace(/"(id|created)":("[^"]*"|\d+)/g, '"$1":0');
  for (const load of LOADS) {
    const want = await fetch(`${mock.url}${PATH}`, { method: 'POST', body: load.body, headers: { 'content-type': 'application/json' } });
    const wantText = norm(await want.text());
    for (const [kind, t] of targets) {
      const got = await fetch(`${t.url}${PATH}`, { method: 'POST', body: load.body, headers: { 'content-type': 'application/json' } });
      const text = norm(await got.text());
      if (got.status !== want.status || text !== wantText || got.headers.get('content-type') !== want.headers.get('content-type')) {
        throw new Error(`sanity check: ${kind} on ${load.id} answered ${got.status} ${text.slice(0, 200)}; the mock ${want.status} ${wantText.slice(0, 200)}`);
      }
    }
  }
}

interface Sample { kind: CandidateKind; load: string; rps: number; cpuUs: number; errors: number }

async function main(): Promise<void> {
  stopChildrenOnInterrupt('upstream-clients');
  const { rounds, durationS, connections, workers } = readCommandLine(COMMAND, (line) => ({
    rounds: line.positiveNumber('--rounds') ?? 3,
    durationS: line.positiveNumber('--duration') ?? 5,
    connections: line.positiveNumber('--connections') ?? 64,
    workers: line.positiveNumber('--workers') ?? 2,
  }));
  const wrk = ['wrk', '/usr/bin/wrk'].find((b) => haveBinary(b));
  if (wrk === undefined) throw new Error('wrk is required (apt-get install wrk)');
  const mock = await startMock('pod-a');
  const targets = new Map<CandidateKind, Target>();
  for (const kind of CANDIDATES) targets.set(kind, await startCandidate(kind, mock.url, workers));
  await sanity(targets, mock);
  log(`warm-up; then ${rounds} rounds × ${CANDIDATES.length} candidates × ${LOADS.length} loads, ${durationS}s each, ${connections} connections, ${workers} workers`);
  for (const [, t] of targets) for (const load of LOADS) await runWrk(wrk, { url: `${t.url}${PATH}`, bodies: [load.body], connections, durationS: 1 });
  const samples: Sample[] = [];
  for (let r = 0; r < rounds; r++) {
    for (const load of LOADS) {
      for (let i = 0; i < CANDIDATES.length; i++) {
        const kind = CANDIDATES[(i + r) % CANDIDATES.length];
        const t = targets.get(kind)!;
        const cpu = treeCpu(t.proc.pid);
        const res = await runWrk(wrk, { url: `${t.url}${PATH}`, bodies: [load.body], connections, durationS });
        const cpuUs = (cpu.delta() * 1000) / res.requests;
        samples.push({ kind, load: load.id, rps: res.rps, cpuUs, errors: res.errors + res.non2xx });
        log(`round ${r + 1} ${load.id} ${kind}: ${Math.round(res.rps)} req/s, ${cpuUs.toFixed(1)} µs CPU/req, errors ${res.errors + res.non2xx}`);
      }
    }
  }
  await stopAll();
  const lines = [
    `upstream clients, ${rounds} interleaved rounds × ${durationS}s, wrk ${connections} connections, ${workers} proxy workers (medians)`,
    '| load | client | req/s | × pool req/s | server CPU µs/req | × pool CPU | errors |',
    '|---|---|---|---|---|---|---|',
  ];
  const result: Record<string, Record<string, { rps: number; cpuUs: number }>> = {};
  for (const load of LOADS) {
    const of = (k: CandidateKind): Sample[] => samples.filter((s) => s.load === load.id && s.kind === k);
    const base = { rps: median(of('pool').map((s) => s.rps)), cpu: median(of('pool').map((s) => s.cpuUs)) };
    result[load.id] = {};
    for (const kind of CANDIDATES) {
      const rps = median(of(kind).map((s) => s.rps));
      const cpuUs = median(of(kind).map((s) => s.cpuUs));
      result[load.id][kind] = { rps: Math.round(rps), cpuUs: Math.round(cpuUs * 10) / 10 };
      const errors = of(kind).reduce((n, s) => n + s.errors, 0);
      lines.push(`| ${load.id} | ${kind} | ${Math.round(rps)} | ${(rps / base.rps).toFixed(2)} | ${cpuUs.toFixed(1)} | ${(cpuUs / base.cpu).toFixed(2)} | ${errors} |`);
    }
  }
  process.stdout.write(`${lines.join('\n')}\nUPSTREAM_CLIENTS_JSON ${JSON.stringify(result)}\n`);
}

main().catch(async (err: Error) => {
  log(`failed: ${err.stack ?? err.message}`);
  await stopAll();
  process.exit(1);
});
