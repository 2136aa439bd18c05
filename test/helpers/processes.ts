import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer } from 'node:net';
import { request as httpRequest } from 'node:http';

export const ROOT = new URL('../..', import.meta.url).pathname;
export const CLI = join(ROOT, 'dist/cli.js');
export const MOCK = join(ROOT, 'dist/bench/mock-backend.js');

export function tempDir(prefix = 'ir-test-'): string {
  return mkdtempSync(join(tmpdir(), prefix));
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.unref();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

export interface Proc {
  child: ChildProcess;
  stdout: () => string;
  stderr: () => string;
  exited: Promise<number | null>;
  kill(signal?: NodeJS.Signals): Promise<number | null>;
}

/** Every process a test started; killed when the test process exits, so a failed test leaks none. */
const live = new Set<ChildProcess>();
process.once('exit', () => {
  for (const c of live) c.kill('SIGKILL');
});

/** Starts `node args` (`node`: another Node.js binary than the one running the tests). */
export function startProcess(args: string[], env: NodeJS.ProcessEnv = {}, node: string = process.execPath): Proc {
  const child = spawn(node, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  live.add(child);
  child.once('exit', () => live.delete(child));
  let out = '';
  let err = '';
  child.stdout!.setEncoding('utf8').on('data', (d: string) => { out += d; });
  child.stderr!.setEncoding('utf8').on('data', (d: string) => { err += d; });
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return {
    child,
    stdout: () => out,
    stderr: () => err,
    exited,
    async kill(signal: NodeJS.Signals = 'SIGTERM') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return exited;
    },
  };
}

export async function waitFor<T>(what: string, fn: () => T | Promise<T>, timeoutMs = 15_000, everyMs = 25): Promise<NonNullable<T>> {
  const end = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v) return v as NonNullable<T>;
    } catch (e) {
      last = e;
    }
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}${last ? `: ${(last as Error).message}` : ''}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

export interface MockBackend extends Proc {
  port: number;
  url: string;
  stats(): Promise<{ requests: number; lastBody: any; lastHeaders: Record<string, string> }>;
}

export async function startMock(name: string, extra: string[] = []): Promise<MockBackend> {
  const p = startProcess([MOCK, '--port', '0', '--name', name, ...extra]);
  const m = await waitFor(`mock ${name} to listen`, () => /listening on http:\/\/[^:]+:(\d+)/.exec(p.stdout()));
  const port = Number(m[1]);
  const url = `http://127.0.0.1:${port}`;
  return Object.assign(p, {
    port,
    url,
    stats: async () => (await fetch(`${url}/stats`)).json() as Promise<any>,
  });
}

export interface Router extends Proc {
  port: number;
  url: string;
  resourcesFile: string;
}

/** Starts the built router as a user would and waits until /readyz says ready. */
export async function startRouter(resourcesYaml: string, opts: { workers?: number; env?: NodeJS.ProcessEnv; dir?: string; args?: string[]; node?: string } = {}): Promise<Router> {
  const dir = opts.dir ?? tempDir();
  const file = join(dir, 'resources.yaml');
  writeFileSync(file, resourcesYaml);
  const port = await freePort();
  const p = startProcess(
    [CLI, '--resources', file, '--port', String(port), '--host', '127.0.0.1', '--workers', String(opts.workers ?? 2), ...(opts.args ?? [])],
    { ACCESS_LOG_ENABLED: 'false', ...opts.env },
    opts.node,
  );
  const url = `http://127.0.0.1:${port}`;
  await waitFor('router to be ready', async () => {
    if (p.child.exitCode !== null) throw new Error(`router exited ${p.child.exitCode}: ${p.stderr()}`);
    const r = await fetch(`${url}/readyz`);
    return r.status === 200;
  }, 60_000);
  return Object.assign(p, { port, url, resourcesFile: file });
}

export function writeFile(path: string, text: string): void {
  writeFileSync(path, text);
}

/** Resources for one model served by the given mock backends. */
export function resourcesFor(backends: { name: string; port: number }[], opts: { model?: string; rateLimit?: string; timeout?: string; serverModel?: string; extraRoutes?: string } = {}): string {
  const model = opts.model ?? 'sf-model';
  return `apiVersion: networking.serving.volcano.sh/v1alpha1
kind: ModelServer
metadata: { name: sf-server, namespace: default }
spec:
${opts.serverModel ? `  model: ${opts.serverModel}\n` : ''}${opts.timeout ? `  trafficPolicy: { timeout: ${opts.timeout} }\n` : ''}  endpoints:
${backends.map((b) => `    - { name: ${b.name}, address: "127.0.0.1:${b.port}" }`).join('\n')}
---
apiVersion: networking.serving.volcano.sh/v1alpha1
kind: ModelRoute
metadata: { name: sf-route, namespace: default }
spec:
  modelName: ${model}
  rules:
    - name: default
      targetModels:
        - modelServerName: sf-server
${opts.rateLimit ? `  rateLimit:\n${opts.rateLimit}\n` : ''}${opts.extraRoutes ?? ''}`;
}

export async function postJson(url: string, body: unknown, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: typeof body === 'string' ? body : JSON.stringify(body) });
}

/** POST on a fresh TCP connection (no keep-alive), as `curl` would. */
export function postFresh(url: string, body: unknown, headers: Record<string, string> = {}): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; text: string }> {
  return new Promise((resolve, reject) => {
    const u = new URL(url);
    const data = Buffer.from(JSON.stringify(body));
    const req = httpRequest({
      host: u.hostname, port: u.port, path: u.pathname + u.search, method: 'POST', agent: false,
      headers: { 'content-type': 'application/json', 'content-length': String(data.length), connection: 'close', ...headers },
    }, (res) => {
      let text = '';
      res.setEncoding('utf8').on('data', (d: string) => { text += d; }).on('end', () => resolve({ status: res.statusCode!, headers: res.headers, text }));
    });
    req.on('error', reject);
    req.end(data);
  });
}

/** Waits until the current UTC minute has at least `marginS` seconds left (window-aligned tests). */
export async function awayFromMinuteBoundary(marginS = 8): Promise<void> {
  const left = 60 - new Date().getUTCSeconds();
  if (left < marginS) await new Promise((r) => setTimeout(r, left * 1000 + 200));
}
