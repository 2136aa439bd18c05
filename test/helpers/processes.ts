/**
 * The one process harness of the tests, the benchmarks and the demo: start and stop child
 * processes (the built router, the mock backend, redis-server, nginx, …) on free loopback ports.
 * Every child is remembered, so `stopAll()` (and the exit of this process) ends exactly the
 * processes this run started. Runs from the sources (vitest) and from dist/ (bench).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { closeSync, constants, existsSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { fileURLToPath } from 'node:url';
import { serverPort } from './ports.js';

/** The repository root: the nearest directory above this file holding package.json. */
function findRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'package.json'))) {
    const up = dirname(dir);
    if (up === dir) throw new Error('processes.ts: no package.json above this file');
    dir = up;
  }
  return `${dir}/`;
}

export const ROOT = findRoot();
export const CLI = join(ROOT, 'dist/cli.js');
/** The mock model server (test/mock-backend/), built by bench/tsconfig.json. */
export const MOCK = join(ROOT, 'dist/test/mock-backend/mock-backend.js');

/** Directories tempDir() made in this process: stopAll() removes them (a bench's end), and after each test file temp-dirs-cleanup.ts does. */
const madeDirs = new Set<string>();

export function tempDir(prefix = 'ir-test-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  madeDirs.add(dir);
  return dir;
}

export { freePort, unusedPort } from './ports.js';

export interface Proc {
  readonly name: string;
  readonly child: ChildProcess;
  readonly pid: number;
  stdout: () => string;
  stderr: () => string;
  /** stdout and stderr as they arrived. */
  output: () => string;
  exited: Promise<number | null>;
  /** Sends `signal` (SIGTERM) unless the process has exited; resolves with its exit code. */
  kill(signal?: NodeJS.Signals): Promise<number | null>;
  /** Like kill(), but SIGKILLs a process still running 10 s later. */
  stop(signal?: NodeJS.Signals): Promise<void>;
}

export interface ProcessOptions {
  /** Shown in errors; default: the command and its first argument. */
  name?: string;
  /** Keep only the last this many characters of each output (default: all of it). */
  keepChars?: number;
  /** The Node.js binary for startProcess (default: the one running the tests). */
  node?: string;
  /**
   * Give the process an OS pipe as its stdout, as a container runtime does, read here through
   * `child.stdout` as usual (by default Node gives a child a socket pair).
   */
  stdoutPipe?: boolean;
  /** Give the process this descriptor as its stdout (e.g. a Unix socket to a stand-in journal); `stdout()` is then empty. */
  stdoutFd?: number;
  /** Give the process this descriptor as its stderr (e.g. the journal's stream, as systemd gives a service); `stderr()` is then empty. */
  stderrFd?: number;
}

/** An OS pipe (a FIFO whose name is gone once both ends are open): its read end, non-blocking, and its write end. */
function osPipe(): { readFd: number; writeFd: number } {
  const dir = mkdtempSync(join(tmpdir(), 'ir-pipe-'));
  const path = join(dir, 'stdout');
  try {
    const made = spawnSync('mkfifo', [path]);
    if (made.status !== 0) throw new Error(`mkfifo ${path} failed: ${made.stderr?.toString() ?? made.error?.message}`);
    const readFd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
    return { readFd, writeFd: openSync(path, constants.O_WRONLY) };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Every process started here and not yet exited; killed when this process exits, so a failed run leaks none. */
const live = new Set<ChildProcess>();
process.once('exit', () => {
  // Its own children first (nginx's workers, a router's): they outlive a parent killed alone.
  for (const c of live) {
    if (c.pid !== undefined) for (const pid of descendants(c.pid)) killQuietly(pid);
    c.kill('SIGKILL');
  }
});

/** Every descendant of `pid` (Linux /proc; none elsewhere), the deepest first. */
function descendants(pid: number): number[] {
  const out: number[] = [];
  let tasks: string[] = [];
  try {
    tasks = readdirSync(`/proc/${pid}/task`);
  } catch {
    return out;
  }
  for (const t of tasks) {
    let children = '';
    try {
      children = readFileSync(`/proc/${pid}/task/${t}/children`, 'utf8');
    } catch {
      continue;
    }
    for (const c of children.split(' ').filter(Boolean).map(Number)) out.push(...descendants(c), c);
  }
  return out;
}

function killQuietly(pid: number): void {
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    // gone already
  }
}

/** The pids of the processes started here that have not exited (for an interrupted bench tool: bench/interrupt.ts). */
export function livePids(): number[] {
  return [...live].flatMap((c) => (c.pid === undefined ? [] : [c.pid]));
}

/** Counts `child`, started elsewhere, among the processes started here (killed at exit, listed by livePids). */
export function trackProcess(child: ChildProcess): void {
  if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
  live.add(child);
  child.once('exit', () => live.delete(child));
}

/** Starts `command args` with this process's environment plus `env`, capturing its output. */
export function spawnProcess(command: string, args: string[], env: NodeJS.ProcessEnv = {}, opts: ProcessOptions = {}): Proc {
  const pipe = opts.stdoutPipe === true ? osPipe() : null;
  const child = spawn(command, args, { env: { ...process.env, ...env }, stdio: ['ignore', opts.stdoutFd ?? pipe?.writeFd ?? 'pipe', opts.stderrFd ?? 'pipe'] });
  const name = opts.name ?? `${command} ${args[0] ?? ''}`.trim();
  if (pipe !== null) {
    closeSync(pipe.writeFd); // the child holds it; the read end sees the end once the child and its own children exit
    child.stdout = new Socket({ fd: pipe.readFd, readable: true, writable: false });
  }
  if (child.pid === undefined) throw new Error(`could not start ${name} (${command})`);
  trackProcess(child);
  const keep = opts.keepChars ?? Infinity;
  const bound = (s: string): string => (s.length > keep ? s.slice(-keep) : s);
  let out = '';
  let err = '';
  let all = '';
  child.stdout?.setEncoding('utf8').on('data', (d: string) => { out = bound(out + d); all = bound(all + d); });
  child.stderr?.setEncoding('utf8').on('data', (d: string) => { err = bound(err + d); all = bound(all + d); });
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const kill = async (signal: NodeJS.Signals = 'SIGTERM'): Promise<number | null> => {
    if (child.exitCode === null && child.signalCode === null) child.kill(signal);
    return exited;
  };
  return {
    name,
    child,
    pid: child.pid,
    stdout: () => out,
    stderr: () => err,
    output: () => all,
    exited,
    kill,
    async stop(signal: NodeJS.Signals = 'SIGTERM') {
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await kill(signal);
      clearTimeout(timer);
    },
  };
}

/** Starts `node args`. */
export function startProcess(args: string[], env: NodeJS.ProcessEnv = {}, opts: ProcessOptions = {}): Proc {
  return spawnProcess(opts.node ?? process.execPath, args, env, { name: opts.name ?? args[0], ...opts });
}

/** Stops every process started here that is still running. */
/**
 * Stops every process started here and removes the directories tempDir() made (a bench's routers'
 * files and access logs: a full `npm run bench` left about 240 MB of them in /tmp).
 */
export async function stopAll(): Promise<void> {
  await Promise.all([...live].map((c) => new Promise<void>((resolve) => {
    if (c.exitCode !== null || c.signalCode !== null) return resolve();
    const timer = setTimeout(() => c.kill('SIGKILL'), 10_000);
    c.once('exit', () => { clearTimeout(timer); resolve(); });
    c.kill('SIGTERM');
  })));
  removeTempDirs();
}

/** Removes the directories tempDir() made in this process (stopAll(), and a bench tool interrupted: bench/interrupt.ts). */
export function removeTempDirs(): void {
  for (const dir of madeDirs) rmSync(dir, { recursive: true, force: true });
  madeDirs.clear();
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

/** Like waitFor(), but fails at once, with the output, when `proc` exits first. */
export async function waitWhileRunning<T>(what: string, proc: Proc, fn: () => T | Promise<T>, timeoutMs = 20_000): Promise<NonNullable<T>> {
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

export interface MockBackend extends Proc {
  port: number;
  url: string;
  stats(): Promise<{ pod: string; requests: number; lastBody: any; lastHeaders: Record<string, string>; lastPath: string | null; metricsRequests: number }>;
}

/** The mock model server (test/mock-backend/) on a free port. */
export async function startMock(name: string, extra: string[] = [], opts: ProcessOptions = {}): Promise<MockBackend> {
  const p = startProcess([MOCK, '--port', '0', '--name', name, ...extra], {}, { name: `mock ${name}`, ...opts });
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

export interface RouterOptions extends ProcessOptions {
  workers?: number;
  env?: NodeJS.ProcessEnv;
  dir?: string;
  /** More router flags. */
  args?: string[];
  /** Arguments of node itself (node:cluster passes them on to the workers). */
  nodeArgs?: string[];
}

/** What the router prints when another process holds its port (src/primary/port-claim.ts). */
const PORT_TAKEN = /is in use by another process|is already served by another inference-router/;

/**
 * Whether `p` has said on stderr that its workers listen on `port` (the primary's "ready" line,
 * src/primary/primary.ts, on the host given or the one it fell back to), followed as the output
 * arrives (the output a Proc keeps may be cut).
 */
export function announcedListening(p: Proc, port: number): () => boolean {
  const line = new RegExp(`listening on \\S*:${port}\\b`);
  let seen = false;
  let tail = '';
  const onData = (d: string): void => {
    const text = tail + d;
    if (line.test(text)) {
      seen = true;
      p.child.stderr!.off('data', onData);
    }
    tail = text.slice(-100);
  };
  p.child.stderr!.on('data', onData);
  return () => seen;
}

/**
 * Starts the built router as a user would and waits until /readyz says ready. The port is one
 * the kernel had free a moment before; when a test running beside this one took it meanwhile, the
 * router refuses it (port-claim.ts) and it starts again on another.
 */
export async function startRouter(resourcesYaml: string, opts: RouterOptions = {}): Promise<Router> {
  const dir = opts.dir ?? tempDir();
  const file = join(dir, 'resources.yaml');
  writeFileSync(file, resourcesYaml);
  return Object.assign(await startRouterWith(['--resources', file], opts), { resourcesFile: file });
}

/** A router started by startLoggedRouter(): its JSON access log's path beside the rest. */
export interface LoggedRouter extends Router {
  logFile: string;
}

/**
 * startRouter() with a JSON access log (`access.log` in the router's directory), one worker unless
 * `opts.workers` says otherwise; `opts.env` comes on top of the log's settings.
 */
export async function startLoggedRouter(resourcesYaml: string, opts: RouterOptions = {}): Promise<LoggedRouter> {
  const dir = opts.dir ?? tempDir();
  const logFile = join(dir, 'access.log');
  const env = { ACCESS_LOG_ENABLED: 'true', ACCESS_LOG_FORMAT: 'json', ACCESS_LOG_OUTPUT: logFile, ...opts.env };
  return Object.assign(await startRouter(resourcesYaml, { workers: 1, ...opts, dir, env }), { logFile });
}

/** `server` listening on a port of the loopback address the kernel chose: that port. */
export async function listenLocal(server: { listen(port: number, host: string, cb: () => void): unknown; address(): unknown }): Promise<number> {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return (server.address() as { port: number }).port;
}

/** As startRouter(), with the resources' source given as flags (e.g. `--kubernetes`). */
export async function startRouterWith(sourceArgs: string[], opts: RouterOptions = {}, readyTimeoutMs = 60_000): Promise<Proc & { port: number; url: string }> {
  for (let attempt = 1; ; attempt++) {
    // Below the kernel's ephemeral range (ports.ts): no other test's listen(0) or connection takes
    // it between the pick and the router's bind; another router picked at once may, and then this
    // one exits on a port in use and is started again on another.
    const port = await serverPort();
    const p = startProcess(
      [...(opts.nodeArgs ?? []), CLI, ...sourceArgs, '--port', String(port), '--host', '127.0.0.1', '--workers', String(opts.workers ?? 2), ...(opts.args ?? [])],
      // No load balancer in tests: SIGTERM closes the listener at once unless a test sets a delay.
      { ACCESS_LOG_ENABLED: 'false', ROUTER_DRAIN_DELAY: '0', ...opts.env },
      { name: 'router', ...opts },
    );
    // With the router's own TLS listener the readiness probe (and the caller) speak HTTPS.
    const tls = (opts.env?.ROUTER_TLS_CERT_FILE ?? '') !== '';
    const url = `${tls ? 'https' : 'http'}://127.0.0.1:${port}`;
    let taken = false;
    let exited: Error | null = null;
    // Ready is this router's own "listening on" line as well as /readyz: another test's router
    // that picked the same port a moment earlier answers /readyz there while this one is still
    // starting (it then exits on the port taken), and a test would talk to that other router.
    const announced = announcedListening(p, port);
    await waitFor('router to be ready', async () => {
      if (p.child.exitCode !== null) {
        taken = attempt < 5 && p.child.exitCode === 2 && PORT_TAKEN.test(p.stderr());
        // Stop waiting at once (waitFor would take a throw for "not yet" and wait out its timeout).
        if (!taken) exited = new Error(`router exited ${p.child.exitCode}: ${p.stderr()}`);
        return true;
      }
      if (!announced()) return false;
      return (tls ? await statusOverTls(`${url}/readyz`) : (await fetch(`${url}/readyz`)).status) === 200;
    }, readyTimeoutMs);
    if (exited !== null) throw exited;
    if (!taken) return Object.assign(p, { port, url });
  }
}

/**
 * The status of a request (GET unless said) over HTTPS without checking the certificate (a router's own throwaway one):
 * fetch cannot be told to trust it.
 */
export function statusOverTls(url: string, opts: { method?: string; headers?: Record<string, string>; body?: string } = {}): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = httpsRequest(url, { rejectUnauthorized: false, method: opts.method ?? 'GET', headers: opts.headers }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end(opts.body);
  });
}

export function writeFile(path: string, text: string): void {
  writeFileSync(path, text);
}

/** The records of a JSON access log written to `file` (ACCESS_LOG_FORMAT=json), in order; none while it does not exist. */
export function accessLogRecords(file: string): any[] {
  return existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter((l) => l.length > 0).map((l) => JSON.parse(l)) : [];
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
  await awayFromWindowEnd(60, marginS);
}

/**
 * Waits past the end of the current UTC window of `windowS` seconds (an hour: 3600) when fewer than
 * `marginS` seconds of it are left, so that a test's requests all fall in one window.
 */
export async function awayFromWindowEnd(windowS: number, marginS: number): Promise<void> {
  const leftMs = windowS * 1000 - (Date.now() % (windowS * 1000));
  if (leftMs < marginS * 1000) await new Promise((r) => setTimeout(r, leftMs + 200));
}

/** The pids of `pid`'s child processes (a router's workers, a demo's pods and router). */
/** Whether a process of that pid is there (signal 0: nothing sent; it is gone when that fails). */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

export function childPids(pid: number): number[] {
  return spawnSync('pgrep', ['-P', String(pid)], { encoding: 'utf8' }).stdout.split('\n').filter(Boolean).map(Number);
}

/**
 * Kills one of a 2-worker router's workers with SIGKILL and waits until the primary has forked its
 * replacement. Returns the pid killed.
 */
export async function killOneWorker(router: Pick<Proc, 'pid'>): Promise<number> {
  const pids = childPids(router.pid);
  if (pids.length !== 2) throw new Error(`expected 2 workers, found ${pids.length}: ${pids.join(', ')}`);
  process.kill(pids[0], 'SIGKILL');
  await waitFor('a replacement worker', () => {
    const now = childPids(router.pid);
    return now.length === 2 && !now.includes(pids[0]);
  }, 10_000);
  return pids[0];
}
