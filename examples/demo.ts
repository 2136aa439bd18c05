/**
 * `npm run demo`: two mock model-server pods plus the router on examples/resources.yaml,
 * with the curl commands to try. Ctrl-C, SIGTERM or the end of the process that started the demo
 * stops everything it started.
 *
 * Environment: DEMO_PORT (router port, default 8080), DEMO_POD_PORTS (the two mock pods' ports,
 * default 18001,18002); the access log goes to stdout (text).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import { probePort } from 'inference-router/primary/port-claim';

const root = fileURLToPath(new URL('../..', import.meta.url));
/** A port from 1 to 65535 in `variable`, or the demo stops naming the variable and what it holds. */
function portsFrom(variable: 'DEMO_PORT' | 'DEMO_POD_PORTS', fallback: string, count: number): number[] {
  const text = process.env[variable] ?? fallback;
  const parts = text.split(',').map((s) => s.trim());
  const ports = parts.map((s) => (/^\d+$/.test(s) ? Number(s) : NaN));
  if (parts.length !== count || ports.some((p) => !(p >= 1 && p <= 65535))) {
    const what = count === 1 ? 'a port from 1 to 65535' : `${count} ports from 1 to 65535, comma-separated (e.g. ${fallback})`;
    process.stderr.write(`demo: ${variable} must be ${what}, got "${text}"\n`);
    process.exit(2);
  }
  return ports;
}
const [port] = portsFrom('DEMO_PORT', '8080', 1) as [number];
const [podA, podB] = portsFrom('DEMO_POD_PORTS', '18001,18002', 2) as [number, number];
// Three processes, three ports: one given twice would be found in use by the demo itself.
if (new Set([port, podA, podB]).size !== 3) {
  process.stderr.write(`demo: the router (DEMO_PORT=${port}) and the two pods (DEMO_POD_PORTS=${podA},${podB}) need three different ports\n`);
  process.exit(2);
}
const children: ChildProcess[] = [];

/**
 * `ownGroup`: the child gets a process group of its own, so that Ctrl-C in the terminal (a SIGINT
 * to the whole foreground group) reaches the demo alone, which stops it in turn: the router with
 * one SIGTERM (had the terminal's SIGINT reached it too, the demo's SIGTERM would come during its
 * drain, which it warns about), the pods after the router (the router, draining, still reads their
 * /metrics).
 */
function start(args: string[], env: NodeJS.ProcessEnv = {}, ownGroup = false): ChildProcess {
  const child = spawn(process.execPath, args, { stdio: 'inherit', env: { ...process.env, ...env }, detached: ownGroup });
  children.push(child);
  child.on('exit', (code, signal) => {
    if (!stopping) {
      process.stderr.write(`demo: ${args[0]} exited (${signal ?? code}); stopping\n`);
      stop(1);
    }
  });
  return child;
}

let stopping = false;
function stop(code = 0): void {
  if (stopping) return;
  stopping = true;
  // The router first, then the pods it drains to: stopped together, the router logged the pods'
  // /metrics refusing its scrapes while it drained.
  const router = children.filter((c) => !podProcs.includes(c));
  for (const c of router) c.kill('SIGTERM');
  // A child that does not stop in time is killed: the demo never leaves a process behind.
  setTimeout(() => {
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    removeTempDir();
    process.exit(code);
  }, 5000).unref();
  void exited(router).then(() => {
    // Its resources file goes once the router has stopped: removed while it drained, the router warned
    // that its file was gone.
    removeTempDir();
    for (const c of podProcs) c.kill('SIGTERM');
    return exited(children);
  }).then(() => process.exit(code));
}

function removeTempDir(): void {
  if (tempDir !== null) rmSync(tempDir, { recursive: true, force: true });
  tempDir = null;
}

function exited(procs: readonly ChildProcess[]): Promise<unknown> {
  return Promise.all(procs.map((c) => new Promise((r) => (c.exitCode !== null || c.signalCode !== null ? r(null) : c.on('exit', r)))));
}

/** The mock pods' processes (stopped after the router). */
const podProcs: ChildProcess[] = [];

let tempDir: string | null = null;

/** examples/resources.yaml, with the pods' ports when DEMO_POD_PORTS moves them (the endpoints' addresses, not the comments that name them). */
function resources(): string {
  const file = join(root, 'examples/resources.yaml');
  if (podA === 18001 && podB === 18002) return file;
  tempDir = mkdtempSync(join(tmpdir(), 'ir-demo-'));
  const copy = join(tempDir, 'resources.yaml');
  const text = readFileSync(file, 'utf8');
  const moved = text.replace(/(address:\s*"?127\.0\.0\.1:)18001\b/g, `$1${podA}`).replace(/(address:\s*"?127\.0\.0\.1:)18002\b/g, `$1${podB}`);
  if (moved === text) throw new Error(`${file}: no endpoint address 127.0.0.1:18001 or :18002 to move to DEMO_POD_PORTS`);
  writeFileSync(copy, moved);
  return copy;
}

async function waitReady(url: string): Promise<void> {
  for (let i = 0; i < 200; i++) {
    try {
      if ((await fetch(url)).status === 200) return;
    } catch { /* not yet */ }
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`${url} did not become ready`);
}

async function main(): Promise<void> {
  // Checked before anything starts: otherwise a demo started beside a running one would find the
  // other's pods and router ready on these ports and print its banner before its own failed.
  for (const [what, host, p, variable] of [['router', '0.0.0.0', port, 'DEMO_PORT'], ['pod', '127.0.0.1', podA, 'DEMO_POD_PORTS'], ['pod', '127.0.0.1', podB, 'DEMO_POD_PORTS']] as const) {
    const err = await probePort(host, p);
    if (err === null) continue;
    // Only a port in use hints at another demo; any other refusal (a privileged port) says its own.
    if (err.code === 'EADDRINUSE') {
      throw new Error(`port ${p} (the ${what}'s) is in use by another process: is a demo already running? Stop it, or move the ports with ${variable}`);
    }
    throw new Error(`port ${p} (the ${what}'s) cannot be listened on (${err.message}): move the ports with ${variable}`);
  }
  const mock = join(root, 'dist/test/mock-backend/mock-backend.js');
  // /metrics as vLLM serves it: the ModelServer says inferenceEngine vLLM, so the router scrapes it.
  for (const [p, name] of [[podA, 'sf-pod-a'], [podB, 'sf-pod-b']] as const) {
    podProcs.push(start([mock, '--port', String(p), '--name', name, '--latency-ms', '20', '--tokens-per-second', '200', '--metrics-engine', 'vllm'], {}, true));
  }
  // The pods listen before the router starts: its first scrape of their /metrics finds them.
  await Promise.all([waitReady(`http://127.0.0.1:${podA}/metrics`), waitReady(`http://127.0.0.1:${podB}/metrics`)]);
  // No load balancer in front of the demo: stop at once on Ctrl-C (ROUTER_DRAIN_DELAY 0).
  start([join(root, 'dist/cli.js'), '--resources', resources(), '--port', String(port), '--workers', '2'],
    { ACCESS_LOG_FORMAT: process.env.ACCESS_LOG_FORMAT ?? 'text', ROUTER_DRAIN_DELAY: process.env.ROUTER_DRAIN_DELAY ?? '0' }, true);
  await waitReady(`http://127.0.0.1:${port}/readyz`);
  const base = `http://127.0.0.1:${port}`;
  process.stdout.write(`
inference-router demo: router on ${base}, mock pods sf-pod-a (:${podA}) and sf-pod-b (:${podB}).
Try (the access log prints below):

  curl -s ${base}/v1/models
  curl -s ${base}/v1/completions -H 'Content-Type: application/json' \\
       -d '{"model":"sf-model","prompt":"San Francisco is a","temperature":0}'
  curl -sN ${base}/v1/chat/completions -H 'Content-Type: application/json' \\
       -d '{"model":"sf-model","messages":[{"role":"user","content":"Hello"}],"stream":true}'
  # the documented limit (10 input tokens a minute): the third call is 429
  for i in 1 2 3; do curl -s -o /dev/null -w '%{http_code}\\n' ${base}/v1/completions \\
       -H 'Content-Type: application/json' -d '{"model":"sf-model-limited","prompt":"San Francisco is a"}'; done

Ctrl-C stops the demo.
`);
}

process.on('SIGINT', () => stop(0));
process.on('SIGTERM', () => stop(0));
process.on('SIGHUP', () => stop(0));
// The process that started the demo went away (this one was re-parented): stop too.
const parent = process.ppid;
setInterval(() => {
  if (process.ppid !== parent) stop(0);
}, 250).unref();
main().catch((err: Error) => {
  process.stderr.write(`demo: ${err.message}\n`);
  stop(1);
});
