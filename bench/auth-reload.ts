/**
 * What a reload of a large auth file costs the requests being served meanwhile: one router (2
 * workers, log off, the local token limit per second, whose leases the primary hands out) on a
 * mock backend, an auth file of `--keys` API keys, requests at a fixed rate with a key every
 * version of the file keeps, each timed from when it was due. The file
 * is rewritten `--reloads` times (another set of keys each time); a reload's window runs from the
 * write until the change applies in every worker (eight requests in a row with one of its new
 * keys, each on a connection of its own, answered 200), plus 200 ms. Prints the latency of the
 * requests due in those windows beside those due in the quiet second before each write.
 *
 *   npm run build && node dist/bench/auth-reload.js [--keys 20000] [--reloads 3] [--rate 400]
 */
import { createHash } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { join } from 'node:path';
import { readCommandLine, type CommandSpec } from './cli-args.js';
import { routerResources } from './scenarios.js';
import { percentile } from './order-stats.js';
import { startMock, startRouter, stopAll, tempDir } from './targets.js';
import { stopChildrenOnInterrupt } from './interrupt.js';

const COMMAND: CommandSpec = {
  usage: 'Usage: node dist/bench/auth-reload.js [--keys N] [--reloads N] [--rate REQ_PER_S]',
  values: ['--keys', '--reloads', '--rate'],
};
const { KEYS, RELOADS, RATE } = readCommandLine(COMMAND, (line) => ({
  KEYS: line.positiveNumber('--keys') ?? 20_000,
  RELOADS: line.positiveNumber('--reloads') ?? 3,
  RATE: line.positiveNumber('--rate') ?? 400,
}));
const PROBE_KEY = 'sk-auth-reload-probe-0123456789';
const sha = (k: string): string => createHash('sha256').update(k).digest('hex');

/** The auth file of version `v`: the probe's key, then KEYS - 1 keys of that version. */
function authYaml(v: number): string {
  const lines = ['apiKeys:', `  - name: probe\n    sha256: "${sha(PROBE_KEY)}"`];
  for (let i = 1; i < KEYS; i++) lines.push(`  - name: tenant-${v}-${i}\n    sha256: "${sha(`sk-${v}-${i}`)}"\n    models: ["sf-model", "llama-*"]`);
  return `${lines.join('\n')}\n`;
}

interface Probe { readonly due: number; ms: number; status: number }

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Waits until every request due before `until` has its answer (at most 30 s). */
async function answered(probes: readonly Probe[], until: number): Promise<void> {
  const give = performance.now() + 30_000;
  while (probes.some((p) => p.due < until && p.ms < 0)) {
    if (performance.now() > give) throw new Error('requests due during a reload were not answered within 30 s');
    await sleep(20);
  }
}

function describe(ms: number[]): string {
  if (ms.length === 0) return 'no requests';
  const sorted = [...ms].sort((a, b) => a - b);
  return `${ms.length} requests, p50 ${percentile(sorted, 0.5).toFixed(2)} ms, p99 ${percentile(sorted, 0.99).toFixed(2)} ms, max ${sorted[sorted.length - 1].toFixed(2)} ms`;
}

async function main(): Promise<void> {
  stopChildrenOnInterrupt('auth-reload');
  const dir = tempDir('ir-bench-auth-reload-');
  const authFile = join(dir, 'auth.yaml');
  // Every version made before the load starts: making one takes this process's CPU for a while.
  const versions = Array.from({ length: RELOADS + 1 }, (_, v) => authYaml(v));
  writeFileSync(authFile, versions[0]);
  const mock = await startMock('pod-a');
  const router = await startRouter('router (auth)', routerResources(mock.port, mock.port, { kind: 'local' }), 2, { ACCESS_LOG_ENABLED: 'false', ROUTER_AUTH_CONFIG: authFile });
  const agent = new Agent({ keepAlive: true, maxSockets: 32 });
  const body = JSON.stringify({ model: 'sf-model', prompt: 'San Francisco is a', temperature: 0 });
  const probes: Probe[] = [];
  let running = true;
  const send = (p: Probe): void => {
    const req = request(`${router.url}/v1/completions`, { method: 'POST', agent, headers: { 'content-type': 'application/json', authorization: `Bearer ${PROBE_KEY}` } }, (res) => {
      res.resume();
      res.on('end', () => { p.ms = performance.now() - p.due; p.status = res.statusCode ?? 0; });
    });
    req.on('error', () => { p.ms = performance.now() - p.due; p.status = 0; });
    req.end(body);
  };
  // Requests due every 1000/RATE ms, each sent at its time (late ones at once) and timed from it.
  const every = 1000 / RATE;
  const start = performance.now();
  const pace = async (): Promise<void> => {
    let n = 0;
    while (running) {
      const due = start + n * every;
      const wait = due - performance.now();
      if (wait > 1) await sleep(wait - 0.5);
      else if (wait > 0) await new Promise((r) => setImmediate(r));
      if (performance.now() < due) continue;
      const p: Probe = { due, ms: -1, status: -1 };
      probes.push(p);
      send(p);
      n++;
    }
  };
  const pacing = pace();
  await sleep(2000); // warm-up, not read
  /** Eight requests in a row with `key`, each on a connection of its own (spread over the workers by the kernel), answered 200. */
  const everyWorkerTakes = async (key: string): Promise<boolean> => {
    for (let i = 0; i < 8; i++) {
      const status = await new Promise<number>((resolve) => {
        const req = request(`${router.url}/v1/completions`, { method: 'POST', agent: false, headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` } }, (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode ?? 0));
        });
        req.on('error', () => resolve(0));
        req.end(body);
      });
      if (status !== 200) return false;
    }
    return true;
  };
  const quiet: number[][] = [];
  const reloading: number[][] = [];
  const took: number[] = [];
  for (let v = 1; v <= RELOADS; v++) {
    const quietFrom = performance.now();
    await sleep(1000);
    const wrote = performance.now();
    writeFileSync(authFile, versions[v]);
    while (!(await everyWorkerTakes(`sk-${v}-1`))) {
      if (performance.now() - wrote > 60_000) throw new Error(`version ${v} of the auth file was not applied by both workers within 60 s`);
      await sleep(5);
    }
    took.push(performance.now() - wrote);
    const until = performance.now() + 200;
    await sleep(200);
    await answered(probes, until);
    quiet.push(probes.filter((p) => p.due >= quietFrom && p.due < wrote).map((p) => p.ms));
    reloading.push(probes.filter((p) => p.due >= wrote && p.due < until).map((p) => p.ms));
  }
  running = false;
  await pacing;
  await sleep(500);
  const failed = probes.filter((p) => p.status !== 200 && p.status !== -1).length;
  process.stdout.write(`\nAuth file reloads under ${RATE} req/s (2 workers, local limit, ${KEYS} API keys, ${(versions[0].length / 1e6).toFixed(1)} MB a version), requests timed from when they were due:\n\n`);
  process.stdout.write('| reload | written until applied in every worker | quiet second before | from the write until 200 ms after applied |\n|---|---|---|---|\n');
  for (let i = 0; i < RELOADS; i++) process.stdout.write(`| ${i + 1} | ${took[i].toFixed(0)} ms | ${describe(quiet[i])} | ${describe(reloading[i])} |\n`);
  process.stdout.write(`\nall windows: quiet ${describe(quiet.flat())}; during reloads ${describe(reloading.flat())}; answers not 200: ${failed}\n`);
  agent.destroy();
  await stopAll();
}

main().catch(async (err: Error) => {
  process.stderr.write(`auth-reload: ${err.stack ?? err.message}\n`);
  await stopAll();
  process.exit(1);
});
