/**
 * What one call of the global limit's batch script (src/ratelimit/redis/lua/batch.ts) costs
 * inside Redis, by the shape of the batch, for one or two builds side by side: the time Redis
 * spent running the calls (INFO commandstats `usec` over `calls`; reading and writing the
 * sockets not counted), on a redis-server this benchmark starts on a free loopback port.
 *
 *   node dist/bench/redis-script-micro.js [<treeA> [<treeB>]] [--calls N] [--rounds R]
 *
 * Each tree's script is loaded from its dist (default: this tree alone), so two builds compare.
 * Every round runs each case for each tree (N calls, 50 in flight, one route), the trees'
 * order alternating between rounds; the table has the median over rounds.
 */
import { resolve, join } from 'node:path';
import { existsSync } from 'node:fs';
import { Redis } from 'ioredis';
import { readCommandLine, type CommandLine, type CommandSpec } from './cli-args.js';
import { infoCommandstats, scriptCallsIn, scriptUsecIn } from './redis-stats.js';
import { startRedis, stopAll } from './targets.js';
import { median } from './order-stats.js';
import { stopChildrenOnInterrupt } from './interrupt.js';

export const COMMAND: CommandSpec = {
  usage: 'Usage: node dist/bench/redis-script-micro.js [<treeA> [<treeB>]] [--calls N] [--rounds R]',
  values: ['--calls', '--rounds'],
  positionals: [0, 2],
};
const IN_FLIGHT = 50;

/** A batch's shape: its input correction, output charge, lease asked for and admissions (input tokens each). */
interface Shape {
  readonly name: string;
  readonly delta: number;
  readonly out: number;
  readonly lease: number;
  readonly admissions: number;
}

/** Input tokens of each admission (the bench's prompt is about this size). */
const TOKENS = 30;

export const SHAPES: readonly Shape[] = [
  { name: 'settles alone (correction and output charge)', delta: -5, out: 40, lease: 0, admissions: 0 },
  { name: '1 admission', delta: 0, out: 0, lease: 0, admissions: 1 },
  { name: '10 admissions', delta: 0, out: 0, lease: 0, admissions: 10 },
  { name: 'settles + 3 admissions', delta: -5, out: 40, lease: 0, admissions: 3 },
  { name: 'settles + 10 admissions', delta: -5, out: 40, lease: 0, admissions: 10 },
  { name: 'settles + 1 admission + a lease asked', delta: -5, out: 40, lease: 10_000, admissions: 1 },
];

/**
 * The batch script's key and arguments for one call of `shape` (store-limiter.ts batchCall, the
 * server's clock; the corrections' window not known). `correctionWindow`: whether the script reads
 * that argument (a tree built before it was added does not: script.usesCorrectionWindow).
 */
export function batchArgs(base: string, shape: Shape, correctionWindow = true): (string | number)[] {
  const args: (string | number)[] = [base, 'day', '', shape.delta, shape.out, Number.MAX_SAFE_INTEGER, -1, shape.lease, 0, 0, 0, '', shape.delta < 0 ? -shape.delta : 0];
  if (correctionWindow) args.push(-1);
  for (let i = 0; i < shape.admissions; i++) args.push(TOKENS);
  return args;
}

async function loadScript(tree: string): Promise<string> {
  const file = join(resolve(tree), 'dist/ratelimit/redis/lua/batch.js');
  if (!existsSync(file)) throw new Error(`${file} not found: build that tree first (npm run build)`);
  return (await import(file) as { BATCH_LUA: string }).BATCH_LUA;
}

/** Whether a tree's batch script reads the corrections' window (ARGV[13]; its admissions then start at ARGV[14]). */
export function usesCorrectionWindow(script: string): boolean {
  return script.includes('for i = 14, n do');
}

/** µs Redis ran per call, over `calls` calls of `shape` with script `sha` (the stats reset first). */
async function usecPerCall(redis: Redis, address: string, sha: string, shape: Shape, calls: number, base: string, correctionWindow: boolean): Promise<number> {
  await redis.config('RESETSTAT');
  const args = batchArgs(base, shape, correctionWindow);
  for (let done = 0; done < calls; done += IN_FLIGHT) {
    const replies: Promise<unknown>[] = [];
    for (let k = 0; k < IN_FLIGHT; k++) replies.push(redis.evalsha(sha, 1, ...args));
    await Promise.all(replies);
  }
  const info = await infoCommandstats(address);
  const n = scriptCallsIn(info);
  if (n < calls) throw new Error(`redis-server counted ${n} script calls, ${calls} were sent`);
  return scriptUsecIn(info) / n;
}

/** The tool's settings from its command line: the trees (this one by default), calls per case, rounds. */
export function scriptMicroOptions(line: CommandLine): { trees: readonly string[]; calls: number; rounds: number } {
  return {
    trees: line.positionals.length === 0 ? ['.'] : line.positionals,
    calls: line.positiveNumber('--calls') ?? 20_000,
    rounds: line.positiveNumber('--rounds') ?? 3,
  };
}

async function main(): Promise<void> {
  stopChildrenOnInterrupt('redis-script-micro');
  const { trees, calls, rounds } = readCommandLine(COMMAND, scriptMicroOptions);
  const scripts = await Promise.all(trees.map(loadScript));
  const { address } = await startRedis(process.env.REDIS_SERVER_BIN ?? 'redis-server');
  const redis = new Redis(`redis://${address}`, { enableAutoPipelining: false, lazyConnect: true });
  try {
    await redis.connect();
    const shas = await Promise.all(scripts.map((s) => redis.script('LOAD', s) as Promise<string>));
    const samples = SHAPES.map(() => trees.map((): number[] => []));
    for (let r = 0; r < rounds; r++) {
      for (let s = 0; s < SHAPES.length; s++) {
        const order = r % 2 === 0 ? trees.map((_, i) => i) : trees.map((_, i) => trees.length - 1 - i);
        for (const t of order) {
          // Each tree and round counts on a route of its own, so one tree's counts never slow the other's.
          samples[s][t].push(await usecPerCall(redis, address, shas[t], SHAPES[s], calls, `ir:{bench/t${t}r${r}s${s}}`, usesCorrectionWindow(scripts[t])));
        }
      }
    }
    const head = trees.map((t) => `${t}: µs per call`).join(' | ');
    process.stdout.write(`batch script inside redis-server, ${calls} calls per case, ${IN_FLIGHT} in flight, median of ${rounds} rounds\n\n`
      + `| batch | ${head}${trees.length === 2 ? ' | B / A' : ''} |\n|---|${trees.map(() => '---|').join('')}${trees.length === 2 ? '---|' : ''}\n`);
    for (let s = 0; s < SHAPES.length; s++) {
      const m = samples[s].map((xs) => median(xs));
      process.stdout.write(`| ${SHAPES[s].name} | ${m.map((x) => x.toFixed(2)).join(' | ')}${m.length === 2 ? ` | ${(m[1] / m[0]).toFixed(2)}` : ''} |\n`);
    }
  } finally {
    redis.disconnect();
    await stopAll();
  }
}

if (process.argv[1]?.endsWith('redis-script-micro.js')) {
  main().catch((err: unknown) => {
    console.error(err instanceof Error ? err.message : err);
    process.exit(1);
  });
}
