/**
 * Start and stop what a benchmark run needs: mock backends, routers, reference proxies, nginx and
 * redis-server, each a child process on a free loopback port. Every child is remembered so that
 * `stopAll()` (and process exit) ends exactly the processes this run started.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { createServer, connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const CLI = join(ROOT, 'dist/cli.js');
const MOCK = join(ROOT, 'dist/bench/mock-backend.js');
const DIST_BENCH = join(ROOT, 'dist/bench');

export interface Proc {
  readonly name: string;
  readonly child: ChildProcess;
  readonly pid: number;
  /** Captured stdout and stderr (bounded to the last 64 KiB each). */
  output(): string;
  stop(signal?: NodeJS.Signals): Promise<void>;
}

export interface Target {
  readonly name: string;
  readonly url: string;
  readonly port: number;
  /** The process whose CPU (with its child processes) counts as the server's. */
  readonly proc: Proc;
}

const running = new Set<Proc>();

export function tempDir(prefix: string): string {
  return mkdtempSync(join(tmpdir(), prefix));
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

/** True when `bin` can be executed (absolute path or found on PATH). */
export function haveBinary(bin: string): boolean {
  return spawnSync('sh', ['-c', `command -v ${bin}`], { stdio: 'ignore' }).status === 0;
}

export function startProcess(name: string, command: string, args: string[], env: NodeJS.ProcessEnv = {}): Proc {
  const child = spawn(command, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  const keep = (d: string): void => {
    out += d;
    if (out.length > 65_536) out = out.slice(-65_536);
  };
  child.stdout!.setEncoding('utf8').on('data', keep);
  child.stderr!.setEncoding('utf8').on('data', keep);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const proc: Proc = {
    name,
    child,
    pid: child.pid ?? -1,
    output: () => out,
    async stop(signal: NodeJS.Signals = 'SIGTERM') {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill(signal);
        const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
        await exited;
        clearTimeout(timer);
      }
      running.delete(proc);
    },
  };
  if (proc.pid < 0) throw new Error(`could not start ${name} (${command})`);
  running.add(proc);
  return proc;
}

export async function stopAll(): Promise<void> {
  await Promise.all([...running].map((p) => p.stop()));
}

process.once('exit', () => {
  for (const p of running) if (p.child.exitCode === null) p.child.kill('SIGKILL');
});

export async function waitFor<T>(what: string, proc: Proc, fn: () => T | Promise<T>, timeoutMs = 20_000): Promise<NonNullable<T>> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    if (proc.child.exitCode !== null) throw new Error(`${proc.name} exited (${proc.child.exitCode}) while waiting for ${what}:\n${proc.output()}`);
    try {
      const v = await fn();
      if (v) return v as NonNullable<T>;
    } catch { /* not yet */ }
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}:\n${proc.output()}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function httpOk(url: string): Promise<boolean> {
  return (await fetch(url)).status === 200;
}

/** The uWS mock backend from bench/mock-backend.ts. */
export async function startMock(name: string, extra: string[] = []): Promise<Target> {
  const proc = startProcess(`mock ${name}`, process.execPath, [MOCK, '--port', '0', '--name', name, ...extra]);
  const m = await waitFor(`mock ${name} to listen`, proc, () => /listening on http:\/\/[^:]+:(\d+)/.exec(proc.output()));
  const port = Number(m[1]);
  return { name, url: `http://127.0.0.1:${port}`, port, proc };
}

/**
 * The built router (dist/cli.js) on a resources file written into a fresh temp dir. `nodeArgs`
 * go to node itself; node:cluster passes them on to the workers (execArgv).
 */
export async function startRouter(name: string, resourcesYaml: string, workers: number, env: NodeJS.ProcessEnv, nodeArgs: string[] = []): Promise<Target> {
  const dir = tempDir('ir-bench-router-');
  const file = join(dir, 'resources.yaml');
  writeFileSync(file, resourcesYaml);
  const port = await freePort();
  const proc = startProcess(name, process.execPath,
    [...nodeArgs, CLI, '--resources', file, '--port', String(port), '--host', '127.0.0.1', '--workers', String(workers)], env);
  const url = `http://127.0.0.1:${port}`;
  await waitFor(`${name} /readyz`, proc, () => httpOk(`${url}/readyz`));
  return { name, url, port, proc };
}

/** bench/reference-<kind>-proxy.ts: a proxy to `upstream` with `workers` node:cluster workers. */
export async function startReferenceProxy(kind: 'node' | 'uws', upstream: string, workers: number): Promise<Target> {
  const port = await freePort();
  const name = `reference ${kind} proxy`;
  const proc = startProcess(name, process.execPath,
    [join(DIST_BENCH, `reference-${kind}-proxy.js`), '--port', String(port), '--upstream', upstream, '--workers', String(workers)]);
  const url = `http://127.0.0.1:${port}`;
  await waitFor(`${name} to be ready`, proc, () => new RegExp(`ready with ${workers} workers`).test(proc.output()));
  return { name, url, port, proc };
}

export function nginxConfig(dir: string, port: number, upstreamPort: number, workers: number): string {
  return `# generated by bench/processes.ts
${process.getuid?.() === 0 ? 'user root;\n' : ''}worker_processes ${workers};
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
events { worker_connections 8192; }
http {
  access_log off;
  client_body_temp_path ${dir}/client_body;
  proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi;
  scgi_temp_path ${dir}/scgi;
  keepalive_requests 1000000;
  upstream backend {
    server 127.0.0.1:${upstreamPort};
    keepalive 64;
  }
  server {
    listen 127.0.0.1:${port} reuseport;
    location / {
      proxy_pass http://backend;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_buffering off;
    }
  }
}
`;
}

/** nginx as a foreground child with a generated config in a temp dir. */
export async function startNginx(bin: string, upstreamPort: number, workers: number): Promise<Target> {
  const dir = tempDir('ir-bench-nginx-');
  chmodSync(dir, 0o755);
  mkdirSync(join(dir, 'logs'));
  const port = await freePort();
  writeFileSync(join(dir, 'nginx.conf'), nginxConfig(dir, port, upstreamPort, workers));
  const proc = startProcess('nginx', bin, ['-p', dir, '-c', join(dir, 'nginx.conf'), '-g', 'daemon off;']);
  const url = `http://127.0.0.1:${port}`;
  await waitFor('nginx to listen', proc, () => httpOk(`${url}/healthz`));
  return { name: 'nginx', url, port, proc };
}

function tcpUp(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect(port, '127.0.0.1', () => {
      s.destroy();
      resolve(true);
    }).on('error', () => resolve(false));
  });
}

export async function startRedis(bin: string): Promise<{ proc: Proc; address: string }> {
  const port = await freePort();
  const proc = startProcess('redis-server', bin, ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no']);
  await waitFor('redis-server to listen', proc, () => tcpUp(port));
  return { proc, address: `127.0.0.1:${port}` };
}
