/**
 * What a router's start costs: the built router of one or two trees started again and again,
 * alternated (A B, B A, A B, ...), each time on the repository's example resources
 * (examples/resources.yaml), with the access log off and no drain delay, as the tests start it:
 *
 *   node dist/bench/start-cost.js [<treeA> [<treeB>]] [--rounds N] [--workers N]
 *
 * Per start it reads:
 *   - the time from the spawn until GET /readyz answers 200 (polled every 5 ms);
 *   - the CPU of the primary and of its workers (all their threads: /proc/<pid>/task/<tid>/schedstat)
 *     1 s after that, when what a worker starts besides its listener (its tokenizer thread) has started,
 *     and the workers' resident memory then;
 *   - the CPU of the whole life: the start, 1 s ready, SIGTERM, the exit (this process's cutime and
 *     cstime once it has reaped the router, which hold the workers the router reaped: tick samples).
 * It prints each side's medians (min–max) and B's over A's. A tree is a checkout built with
 * `npm run build` (default: this one); a worktree of another commit beside it gives a before and
 * after (compare-trees.ts says how).
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { readCommandLine, UsageError } from './cli-args.js';
import { processTree, reapedChildrenCpuMs, schedStat } from './proc-cpu.js';
import { median } from './order-stats.js';
import { residentOf } from './proc-memory.js';
import { stopChildrenOnInterrupt } from './interrupt.js';
import { freePort, trackProcess } from '../test/helpers/processes.js';

const USAGE = 'Usage: node dist/bench/start-cost.js [<treeA> [<treeB>]] [--rounds N (default 8)] [--workers N (default 2)]';

const ROOT = resolve(new URL('../..', import.meta.url).pathname);
const RESOURCES = resolve(ROOT, 'examples/resources.yaml');
const SETTLE_MS = 1_000;

interface Options { trees: string[]; rounds: number; workers: number }

interface Start { readyMs: number; primaryMs: number; workersMs: number; lifeMs: number; workersMb: number }

const options = readCommandLine<Options>({ usage: USAGE, values: ['--rounds', '--workers'], positionals: [0, 2] }, (line) => {
  const trees = (line.positionals.length === 0 ? ['.'] : line.positionals).map((t) => resolve(t));
  for (const t of trees) if (!existsSync(resolve(t, 'dist/cli.js'))) throw new UsageError(`${t}: no dist/cli.js (build that tree with npm run build)`);
  const rounds = line.positiveNumber('--rounds') ?? 8;
  const workers = line.positiveNumber('--workers') ?? 2;
  if (!Number.isInteger(rounds) || !Number.isInteger(workers)) throw new UsageError('--rounds and --workers take whole numbers');
  return { trees, rounds, workers };
});

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

async function ready(port: number): Promise<boolean> {
  try {
    const r = await fetch(`http://127.0.0.1:${port}/readyz`);
    await r.arrayBuffer();
    return r.status === 200;
  } catch {
    return false;
  }
}

async function startOnce(tree: string, workers: number): Promise<Start> {
  const port = await freePort();
  const lifeBefore = reapedChildrenCpuMs();
  const t0 = performance.now();
  const child = spawn(process.execPath, [resolve(tree, 'dist/cli.js'), '--resources', RESOURCES, '--port', String(port), '--host', '127.0.0.1', '--workers', String(workers)], {
    env: { ...process.env, ACCESS_LOG_ENABLED: 'false', ROUTER_DRAIN_DELAY: '0' },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  trackProcess(child);
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => { stderr += d.toString(); });
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  let alive = true;
  void exited.then(() => { alive = false; });
  while (!(await ready(port))) {
    if (!alive) throw new Error(`${tree}: the router exited before it was ready:\n${stderr.slice(-2000)}`);
    if (performance.now() - t0 > 60_000) throw new Error(`${tree}: not ready after 60 s`);
    await sleep(5);
  }
  const readyMs = performance.now() - t0;
  await sleep(SETTLE_MS);
  const pids = processTree(child.pid!);
  const primaryMs = schedStat(child.pid!).cpuNs / 1e6;
  const workersMs = pids.slice(1).reduce((sum, pid) => sum + schedStat(pid).cpuNs / 1e6, 0);
  const workersMb = residentOf(pids.slice(1)).rss / 2 ** 20;
  child.kill('SIGTERM');
  await exited;
  return { readyMs, primaryMs, workersMs, lifeMs: reapedChildrenCpuMs() - lifeBefore, workersMb };
}

function spread(values: readonly number[]): string {
  return `${median(values).toFixed(0)} (${Math.min(...values).toFixed(0)}–${Math.max(...values).toFixed(0)})`;
}

async function main(): Promise<void> {
  stopChildrenOnInterrupt('start-cost');
  const { trees, rounds, workers } = options;
  const results: Start[][] = trees.map(() => []);
  // A first start of each tree, not read: the page cache then holds both trees' files.
  for (const t of trees) await startOnce(t, workers);
  for (let r = 0; r < rounds; r++) {
    const order = r % 2 === 0 ? trees.map((_, i) => i) : trees.map((_, i) => trees.length - 1 - i);
    for (const i of order) results[i].push(await startOnce(trees[i], workers));
  }
  const fields: [string, keyof Start][] = [
    ['ready after, ms', 'readyMs'], ['primary CPU at ready + 1 s, ms', 'primaryMs'],
    [`${workers} worker(s) CPU at ready + 1 s, ms`, 'workersMs'], [`${workers} worker(s) resident at ready + 1 s, MB`, 'workersMb'],
    ['whole life CPU (start, stop), ms', 'lifeMs'],
  ];
  const names = trees.map((t, i) => `${String.fromCharCode(65 + i)}: ${t}`);
  process.stdout.write(`start-cost: ${rounds} starts of each tree, alternated, ${workers} worker(s), examples/resources.yaml\n${names.join('\n')}\n\n`);
  const head = ['figure (median, min–max)', ...trees.map((_, i) => String.fromCharCode(65 + i))];
  if (trees.length === 2) head.push('B / A');
  process.stdout.write(`| ${head.join(' | ')} |\n|${head.map(() => '---').join('|')}|\n`);
  for (const [label, key] of fields) {
    const cells = results.map((rs) => spread(rs.map((x) => x[key])));
    if (trees.length === 2) cells.push(`${(median(results[1].map((x) => x[key])) / median(results[0].map((x) => x[key]))).toFixed(2)}`);
    process.stdout.write(`| ${label} | ${cells.join(' | ')} |\n`);
  }
}

main().catch((err: Error) => {
  process.stderr.write(`start-cost: ${err.message}\n`);
  process.exit(1);
});
