/**
 * `npm run demo`: two mock model-server pods plus the router on examples/resources.yaml,
 * with the curl commands to try. Ctrl-C stops everything.
 *
 * Environment: DEMO_PORT (router port, default 8080); the access log goes to stdout (text).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';

const root = fileURLToPath(new URL('../..', import.meta.url));
const port = Number(process.env.DEMO_PORT ?? 8080);
const children: ChildProcess[] = [];

function start(args: string[], env: NodeJS.ProcessEnv = {}): ChildProcess {
  const child = spawn(process.execPath, args, { stdio: 'inherit', env: { ...process.env, ...env } });
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
  for (const c of children) c.kill('SIGTERM');
  setTimeout(() => process.exit(code), 1500).unref();
  Promise.all(children.map((c) => new Promise((r) => (c.exitCode !== null ? r(null) : c.on('exit', r))))).then(() => process.exit(code));
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
  const mock = join(root, 'dist/test/mock-backend/mock-backend.js');
  start([mock, '--port', '18001', '--name', 'sf-pod-a', '--latency-ms', '20', '--tokens-per-second', '200']);
  start([mock, '--port', '18002', '--name', 'sf-pod-b', '--latency-ms', '20', '--tokens-per-second', '200']);
  start([join(root, 'dist/cli.js'), '--resources', join(root, 'examples/resources.yaml'), '--port', String(port), '--workers', '2'],
    { ACCESS_LOG_FORMAT: process.env.ACCESS_LOG_FORMAT ?? 'text' });
  await waitReady(`http://127.0.0.1:${port}/readyz`);
  const base = `http://127.0.0.1:${port}`;
  process.stdout.write(`
inference-router demo: router on ${base}, mock pods sf-pod-a (:18001) and sf-pod-b (:18002).
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
main().catch((err: Error) => {
  process.stderr.write(`demo: ${err.message}\n`);
  stop(1);
});
