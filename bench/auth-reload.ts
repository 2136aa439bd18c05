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
import { request } from 'node:http';
import { join } from 'node:path';
import { readCommandLine, type CommandSpec } from './cli-args.js';
import { routerResources } from './scenarios.js';
import { ChangeWindows, PacedRequests } from './paced-requests.js';
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

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

async function main(): Promise<void> {
  stopChildrenOnInterrupt('auth-reload');
  const dir = tempDir('ir-bench-auth-reload-');
  const authFile = join(dir, 'auth.yaml');
  // Every version made before the load starts: making one takes this process's CPU for a while.
  const versions = Array.from({ length: RELOADS + 1 }, (_, v) => authYaml(v));
  writeFileSync(authFile, versions[0]);
  const mock = await startMock('pod-a');
  const router = await startRouter('router (auth)', routerResources(mock.port, mock.port, { kind: 'local' }), 2, { ACCESS_LOG_ENABLED: 'false', ROUTER_AUTH_CONFIG: authFile });
  const body = JSON.stringify({ model: 'sf-model', prompt: 'San Francisco is a', temperature: 0 });
  // Requests due every 1000/RATE ms, each sent at its time (late ones at once) and timed from it.
  const paced = new PacedRequests({ url: `${router.url}/v1/completions`, body, headers: { 'content-type': 'application/json', authorization: `Bearer ${PROBE_KEY}` }, rate: RATE });
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
  const windows = new ChangeWindows(paced);
  for (let v = 1; v <= RELOADS; v++) await windows.measure(`version ${v} of the auth file`, () => writeFileSync(authFile, versions[v]), () => everyWorkerTakes(`sk-${v}-1`));
  await paced.stop();
  process.stdout.write(`\nAuth file reloads under ${RATE} req/s (2 workers, local limit, ${KEYS} API keys, ${(versions[0].length / 1e6).toFixed(1)} MB a version), requests timed from when they were due:\n\n${windows.table('reload')}`);
  await stopAll();
}

main().catch(async (err: Error) => {
  process.stderr.write(`auth-reload: ${err.stack ?? err.message}\n`);
  await stopAll();
  process.exit(1);
});
