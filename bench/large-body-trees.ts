/**
 * What large request bodies cost two builds of the router, side by side: chats with a picture of
 * `--bytes` (8 MB by default) as a base64 data URL, the bodies a tokenizer thread parses, sent
 * through each router to a pod that drops them unread (targets.ts startBodySink), `--concurrency`
 * at a time, in interleaved rounds (A B, B A, ...).
 *
 *   node dist/bench/large-body-trees.js <treeA> <treeB> [--bytes N] [--bodies K] [--rounds R] [--concurrency C] [--workers W] [--env K=V,...] [--chunked]
 *
 * `--chunked` sends each body chunked (no content-length), in writes of 64 KiB: one chunk each.
 * `--env` adds to both routers' environment, e.g. `ROUTER_TOKENIZER_PARSE_MIN_BYTES=0` for bodies
 * parsed on the event loop instead of in a tokenizer thread.
 * Per side, medians over rounds: the router's CPU per body (primary, workers and their tokenizer
 * threads, from the scheduler's accounting, /proc/<pid>/task/<tid>/schedstat), of it in the kernel
 * (/proc/<pid>/stat stime: tick samples, the mapping of new memory's pages included), the time a
 * body takes from its first byte sent to its answer, and the router's resident memory after its
 * rounds; then B over A. Build the "before" tree as for compare-trees.ts.
 */
import { request, Agent } from 'node:http';
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { readCommandLine, UsageError, type CommandSpec } from './cli-args.js';
import { pictureDataUrl } from './scenarios.js';
import { median } from './order-stats.js';
import { startBodySink, stopAll, type Target } from './targets.js';
import { stopChildrenOnInterrupt } from './interrupt.js';

const COMMAND: CommandSpec = {
  usage: 'Usage: node dist/bench/large-body-trees.js <treeA> <treeB> [--bytes N] [--bodies K] [--rounds R] [--concurrency C] [--workers W] [--env K=V,...] [--chunked]',
  values: ['--bytes', '--bodies', '--rounds', '--concurrency', '--workers', '--env'],
  flags: ['--chunked'],
  positionals: [2, 2],
};

interface Options {
  readonly trees: readonly string[];
  readonly bytes: number;
  readonly bodies: number;
  readonly rounds: number;
  readonly concurrency: number;
  readonly workers: number;
  readonly env: NodeJS.ProcessEnv;
  readonly chunked: boolean;
}

/** `K=V,K=V` as an environment. */
function envOption(text: string | undefined): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  if (text === undefined) return env;
  for (const pair of text.split(',')) {
    const eq = pair.indexOf('=');
    if (eq < 1) throw new UsageError(`--env: "${pair}" is not NAME=VALUE`);
    env[pair.slice(0, eq)] = pair.slice(eq + 1);
  }
  return env;
}

const OPTIONS: Options = readCommandLine(COMMAND, (line) => {
  for (const tree of line.positionals) {
    if (!existsSync(resolve(tree, 'dist/bench/targets.js'))) throw new UsageError(`${tree}: ${resolve(tree, 'dist/bench')} not found: build that tree first (npm run build)`);
  }
  return {
    trees: line.positionals,
    bytes: line.positiveNumber('--bytes') ?? 8_000_000,
    bodies: line.positiveNumber('--bodies') ?? 24,
    rounds: line.positiveNumber('--rounds') ?? 6,
    concurrency: line.positiveNumber('--concurrency') ?? 2,
    workers: line.positiveNumber('--workers') ?? 2,
    env: envOption(line.value('--env')),
    chunked: line.has('--chunked'),
  };
});

interface TreeTargets {
  startRouter(name: string, resourcesYaml: string, workers: number, env: NodeJS.ProcessEnv): Promise<Target>;
  /** Stops the processes that tree's modules started. */
  stopAll(): Promise<void>;
}
interface TreeCpu {
  treeCpu(root: number): { pids: number[]; delta(): number };
  userKernelMs(pid: number): { userMs: number; kernelMs: number };
}
interface TreeMemory {
  residentOf(pids: readonly number[]): { rss: number };
}

interface Side {
  readonly label: string;
  readonly tree: string;
  readonly router: Target;
  readonly targets: TreeTargets;
  readonly cpu: TreeCpu;
  readonly memory: TreeMemory;
  readonly cpuMsPerBody: number[];
  readonly kernelMsPerBody: number[];
  readonly msPerBody: number[];
  residentMb: number;
}

function resources(podPort: number): string {
  return `---
apiVersion: networking.serving.volcano.sh/v1alpha1
kind: ModelServer
metadata: { name: sink, namespace: default }
spec:
  endpoints:
    - { name: pod-sink, address: "127.0.0.1:${podPort}" }
---
apiVersion: networking.serving.volcano.sh/v1alpha1
kind: ModelRoute
metadata: { name: pictures, namespace: default }
spec:
  modelName: sf-model
  rules:
    - name: default
      targetModels:
        - modelServerName: sink
`;
}

/** A chunked body's writes (--chunked): one chunk each. */
const CHUNK_BYTES = 64 * 1024;

/** Posts `body` to `url`, `count` times, `concurrency` at a time; the milliseconds of each. */
async function send(url: string, body: Buffer, count: number, concurrency: number, agent: Agent): Promise<number[]> {
  const u = new URL(`${url}/v1/chat/completions`);
  const times: number[] = [];
  let started = 0;
  const one = (): Promise<void> => new Promise((done, fail) => {
    const t0 = performance.now();
    const length = OPTIONS.chunked ? { 'transfer-encoding': 'chunked' } : { 'content-length': body.length };
    const req = request({ host: u.hostname, port: u.port, path: u.pathname, method: 'POST', agent, headers: { 'content-type': 'application/json', ...length } }, (res) => {
      res.resume();
      res.on('end', () => {
        if (res.statusCode !== 200) fail(new Error(`${url}: status ${res.statusCode}`));
        else {
          times.push(performance.now() - t0);
          done();
        }
      });
    });
    req.on('error', fail);
    if (OPTIONS.chunked) {
      for (let at = 0; at < body.length; at += CHUNK_BYTES) req.write(body.subarray(at, at + CHUNK_BYTES));
      req.end();
    } else {
      req.end(body);
    }
  });
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (started < count) {
      started++;
      await one();
    }
  }));
  return times;
}

async function round(side: Side, body: Buffer, agent: Agent): Promise<void> {
  const root = side.router.proc.pid!;
  const cpu = side.cpu.treeCpu(root);
  const kernelBefore = cpu.pids.reduce((n, pid) => n + side.cpu.userKernelMs(pid).kernelMs, 0);
  const times = await send(side.router.url, body, OPTIONS.bodies, OPTIONS.concurrency, agent);
  const kernelAfter = cpu.pids.reduce((n, pid) => n + side.cpu.userKernelMs(pid).kernelMs, 0);
  side.cpuMsPerBody.push(cpu.delta() / OPTIONS.bodies);
  side.kernelMsPerBody.push((kernelAfter - kernelBefore) / OPTIONS.bodies);
  side.msPerBody.push(median(times));
  side.residentMb = side.memory.residentOf(cpu.pids).rss / 1e6;
}

async function main(): Promise<void> {
  stopChildrenOnInterrupt('large-body-trees');
  const body = Buffer.from(JSON.stringify({
    model: 'sf-model',
    messages: [{ role: 'user', content: [{ type: 'text', text: 'What is in this picture?' }, { type: 'image_url', image_url: { url: pictureDataUrl(OPTIONS.bytes) } }] }],
  }));
  const sink = await startBodySink('body sink');
  const sides: Side[] = [];
  try {
    for (const [i, tree] of OPTIONS.trees.entries()) {
      const dist = resolve(tree, 'dist/bench');
      const targets = await import(`${dist}/targets.js`) as TreeTargets;
      const router = await targets.startRouter(`router ${tree}`, resources(sink.port), OPTIONS.workers, { ACCESS_LOG_ENABLED: 'false', ...OPTIONS.env });
      sides.push({
        label: i === 0 ? 'A' : 'B', tree, router, targets,
        cpu: await import(`${dist}/proc-cpu.js`) as TreeCpu,
        memory: await import(`${dist}/proc-memory.js`) as TreeMemory,
        cpuMsPerBody: [], kernelMsPerBody: [], msPerBody: [], residentMb: 0,
      });
    }
    const agent = new Agent({ keepAlive: true, maxSockets: OPTIONS.concurrency });
    // A warm-up round each: the first bodies compile the parse and fill the pools.
    for (const side of sides) await send(side.router.url, body, OPTIONS.concurrency * 2, OPTIONS.concurrency, agent);
    for (let r = 0; r < OPTIONS.rounds; r++) {
      const order = r % 2 === 0 ? sides : [...sides].reverse();
      for (const side of order) await round(side, body, agent);
    }
    agent.destroy();
    const env = Object.entries(OPTIONS.env).map(([k, v]) => `${k}=${v}`).join(' ');
    console.log(`${OPTIONS.rounds} rounds of ${OPTIONS.bodies} chats with a picture (${(body.length / 1e6).toFixed(2)} MB each), ${OPTIONS.concurrency} at a time, ${OPTIONS.workers} workers${OPTIONS.chunked ? ', sent chunked' : ''}${env === '' ? '' : `, ${env}`}; medians (min–max):\n`);
    console.log('| side | tree | router CPU ms per body | of it in the kernel | ms per body (sent to answered) | resident MB after |');
    console.log('|---|---|---|---|---|---|');
    const range = (v: number[]): string => `${median(v).toFixed(2)} (${Math.min(...v).toFixed(2)}–${Math.max(...v).toFixed(2)})`;
    for (const s of sides) console.log(`| ${s.label} | ${s.tree} | ${range(s.cpuMsPerBody)} | ${range(s.kernelMsPerBody)} | ${range(s.msPerBody)} | ${s.residentMb.toFixed(0)} |`);
    if (sides.length === 2) {
      const [a, b] = sides;
      console.log(`\nB over A: CPU per body ${(median(b.cpuMsPerBody) / median(a.cpuMsPerBody)).toFixed(2)}×, time per body ${(median(b.msPerBody) / median(a.msPerBody)).toFixed(2)}×`);
    }
  } finally {
    for (const side of sides) await side.targets.stopAll();
    await stopAll();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
