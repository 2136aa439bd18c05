/**
 * Instructions the router spends on the global limit with leases off, split into what a script
 * call costs whatever it carries and what each admission (with its settle) adds: the figures
 * that make that mode's CPU per request depend on how many requests of a route arrive in one
 * event-loop turn.
 *
 *   node dist/bench/redis-call-instructions.js [<tree>] [--turns N] [--admissions 1,10]
 *
 * Starts a redis-server on a free loopback port (REDIS_SERVER_BIN, default redis-server); for each
 * number of admissions a turn, runs redis-call-instructions-runner.js in its own `node
 * --single-threaded` under callgrind twice, N and 3N turns after the same start-up; the difference
 * of the two totals over 2N is the instructions of a turn (one call). Only the router's process is
 * counted: redis-server's work is not. With two or more numbers of admissions, the lowest and the
 * highest give the split. Needs valgrind.
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { readCommandLine, UsageError, type CommandLine, type CommandSpec } from './cli-args.js';
import { callgrindTotal, perCall } from './call-instructions.js';
import { startRedis } from './targets.js';

export const COMMAND: CommandSpec = {
  usage: 'Usage: node dist/bench/redis-call-instructions.js [<tree>] [--turns N] [--admissions 1,10]',
  values: ['--turns', '--admissions'],
  positionals: [0, 1],
};

export interface RedisCallInstructionsOptions {
  readonly tree: string;
  readonly turns: number;
  readonly admissions: readonly number[];
}

/** The tool's settings from its command line. */
export function redisCallInstructionsOptions(line: CommandLine): RedisCallInstructionsOptions {
  const arg = line.value('--admissions') ?? '1,10';
  const admissions = arg.split(',').map(Number);
  if (admissions.some((a) => !Number.isInteger(a) || a < 1 || a > 500)) throw new UsageError(`--admissions: expected whole numbers from 1 to 500 (a batch's most), got "${arg}"`);
  return { tree: line.positionals[0] ?? '.', turns: line.positiveNumber('--turns') ?? 5_000, admissions };
}

/**
 * What a call costs whatever it carries and what each admission adds, from the instructions of a
 * turn of `fewer` admissions and of one of `more`.
 */
export function splitCallCost(fewer: number, atFewer: number, more: number, atMore: number): { call: number; admission: number } {
  const admission = Math.round((atMore - atFewer) / (more - fewer));
  return { call: atFewer - admission * fewer, admission };
}

async function main(): Promise<void> {
  const { tree, turns, admissions } = readCommandLine(COMMAND, redisCallInstructionsOptions);
  const root = resolve(tree);
  const runner = join(root, 'dist/bench/redis-call-instructions-runner.js');
  if (!existsSync(runner) || !existsSync(join(root, 'dist/ratelimit/redis/limiter.js'))) throw new Error(`${runner} or dist/ratelimit/redis/limiter.js not found: build that tree first (npm run build)`);
  const redis = await startRedis(process.env.REDIS_SERVER_BIN ?? 'redis-server');
  const dir = mkdtempSync(join(tmpdir(), 'ir-redis-calls-'));
  try {
    console.log(`| admissions a call | instructions per call | per admission, the call's share included (${turns} and ${3 * turns} calls, ${tree}) |`);
    console.log('|---|---|---|');
    const perTurn: number[] = [];
    for (const k of admissions) {
      const total = (n: number): Promise<number> => callgrindTotal([runner, root, redis.address, String(k), String(n)], join(dir, `cg.${k}.${n}`), `${k} admissions a call`);
      // One after the other: the two runs share the one redis-server.
      const low = await total(turns);
      const high = await total(3 * turns);
      const t = perCall(low, high, turns);
      perTurn.push(t);
      console.log(`| ${k} | ${t.toLocaleString('en-US')} | ${Math.round(t / k).toLocaleString('en-US')} |`);
    }
    if (admissions.length >= 2) {
      const lo = admissions.indexOf(Math.min(...admissions));
      const hi = admissions.indexOf(Math.max(...admissions));
      const { call, admission } = splitCallCost(admissions[lo], perTurn[lo], admissions[hi], perTurn[hi]);
      console.log(`\nA call costs about ${call.toLocaleString('en-US')} instructions whatever it carries; each admission with its settle about ${admission.toLocaleString('en-US')} more.`);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
    await redis.proc.kill('SIGKILL');
  }
}

if (process.argv[1]?.endsWith('redis-call-instructions.js')) {
  main().catch((err: unknown) => {
    console.error(err instanceof Error ? err.message : err);
    process.exit(1);
  });
}
