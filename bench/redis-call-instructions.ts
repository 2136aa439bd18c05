/**
 * Instructions the router spends on the global limit with leases off, split into what a script
 * call costs whatever it carries and what each admission (with its settle) adds: the figures
 * that make that mode's CPU per request depend on how many requests of a route arrive in one
 * event-loop turn.
 *
 *   node dist/bench/redis-call-instructions.js [<tree>] [--turns N] [--admissions 1,10] [--limits 1|2] [--functions N]
 *
 * `--limits 2`: each request has a route's and a tenant's limit, both global, admitted together
 * (the admit-all script) and settled on each (batch script calls of their own): a turn is then
 * that call and the settles' calls.
 *
 * Starts a redis-server on a free loopback port (REDIS_SERVER_BIN, default redis-server); for each
 * number of admissions a turn, runs redis-call-instructions-runner.js in its own `node
 * --single-threaded` under callgrind twice, N and 3N turns after the same start-up; the difference
 * of the two totals over 2N is the instructions of a turn (one call). Only the router's process is
 * counted: redis-server's work is not. With two or more numbers of admissions, the lowest and the
 * highest give the split. Needs valgrind.
 *
 * `--functions N` adds, per number of admissions, the N functions with the most instructions of
 * their own per turn (the difference of the two runs' functions over 2N, so start-up and V8's
 * compilations cancel out); Node runs with `--perf-basic-prof` then, whose map names V8's
 * compiled JavaScript (callgrind-functions.ts), as instructions.ts's option of that name does.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { readCommandLine, UsageError, type CommandLine, type CommandSpec } from './cli-args.js';
import { callgrindRun, perCall } from './call-instructions.js';
import { addMapped, largest, PerfMap, selfCostByFunction } from './callgrind-functions.js';
import { startRedis } from './targets.js';
import { stopChildrenOnInterrupt } from './interrupt.js';

export const COMMAND: CommandSpec = {
  usage: 'Usage: node dist/bench/redis-call-instructions.js [<tree>] [--turns N] [--admissions 1,10] [--limits 1|2] [--functions N]',
  values: ['--turns', '--admissions', '--limits', '--functions'],
  positionals: [0, 1],
};

export interface RedisCallInstructionsOptions {
  readonly tree: string;
  readonly turns: number;
  readonly admissions: readonly number[];
  /** 1: a route's limit; 2: a route's and a tenant's, admitted together. */
  readonly limits: 1 | 2;
  /** How many functions to list per number of admissions (their instructions per turn); 0: none. */
  readonly functions: number;
}

/** The tool's settings from its command line. */
export function redisCallInstructionsOptions(line: CommandLine): RedisCallInstructionsOptions {
  const arg = line.value('--admissions') ?? '1,10';
  const admissions = arg.split(',').map(Number);
  if (admissions.some((a) => !Number.isInteger(a) || a < 1 || a > 500)) throw new UsageError(`--admissions: expected whole numbers from 1 to 500 (a batch's most), got "${arg}"`);
  const limits = line.value('--limits') ?? '1';
  if (limits !== '1' && limits !== '2') throw new UsageError(`--limits: expected 1 (a route's limit) or 2 (a route's and a tenant's), got "${limits}"`);
  return { tree: line.positionals[0] ?? '.', turns: line.positiveNumber('--turns') ?? 5_000, admissions, limits: limits === '1' ? 1 : 2, functions: line.positiveNumber('--functions') ?? 0 };
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
  stopChildrenOnInterrupt('redis-call-instructions');
  const { tree, turns, admissions, limits, functions } = readCommandLine(COMMAND, redisCallInstructionsOptions);
  const root = resolve(tree);
  const runner = join(root, 'dist/bench/redis-call-instructions-runner.js');
  if (!existsSync(runner) || !existsSync(join(root, 'dist/ratelimit/redis/limiter.js'))) throw new Error(`${runner} or dist/ratelimit/redis/limiter.js not found: build that tree first (npm run build)`);
  const redis = await startRedis(process.env.REDIS_SERVER_BIN ?? 'redis-server');
  const dir = mkdtempSync(join(tmpdir(), 'ir-redis-calls-'));
  try {
    console.log(`| admissions a turn | instructions per turn | per admission, the turn's share included (${limits === 1 ? 'a route\'s limit' : 'a route\'s and a tenant\'s limit'}; ${turns} and ${3 * turns} turns, ${tree}) |`);
    console.log('|---|---|---|');
    const perTurn: number[] = [];
    const byFunction: [number, [string, number][]][] = [];
    for (const k of admissions) {
      const count = async (n: number): Promise<{ total: number; functions: Map<string, number> | null }> => {
        const out = join(dir, `cg.${k}.${n}`);
        const { total, pid } = await callgrindRun([runner, root, redis.address, String(limits), String(k), String(n)], out, `${k} admissions a call`, functions > 0 ? ['--perf-basic-prof'] : []);
        return { total, functions: functions > 0 ? functionsOf(out, pid, root) : null };
      };
      // One after the other: the two runs share the one redis-server.
      const low = await count(turns);
      const high = await count(3 * turns);
      const t = perCall(low.total, high.total, turns);
      perTurn.push(t);
      console.log(`| ${k} | ${t.toLocaleString('en-US')} | ${Math.round(t / k).toLocaleString('en-US')} |`);
      if (high.functions !== null && low.functions !== null) {
        const perTurnByFunction = new Map([...high.functions].map(([name, v]) => [name, (v - (low.functions!.get(name) ?? 0)) / (2 * turns)]));
        byFunction.push([k, largest(perTurnByFunction, functions)]);
      }
    }
    for (const [k, rows] of byFunction) {
      console.log(`\n${k} admission${k === 1 ? '' : 's'} a turn, instructions per turn by function (self):\n\n| instructions | function |\n|---|---|`);
      for (const [name, v] of rows) console.log(`| ${Math.round(v).toLocaleString('en-US')} | ${name.replaceAll('|', '\\|').slice(0, 140)} |`);
    }
    if (admissions.length >= 2) {
      const lo = admissions.indexOf(Math.min(...admissions));
      const hi = admissions.indexOf(Math.max(...admissions));
      const { call, admission } = splitCallCost(admissions[lo], perTurn[lo], admissions[hi], perTurn[hi]);
      console.log(`\nA turn's calls cost about ${call.toLocaleString('en-US')} instructions whatever they carry; each admission with its settles about ${admission.toLocaleString('en-US')} more.`);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
    await redis.proc.kill('SIGKILL');
  }
}

/** One run's self instructions by function, JavaScript named from its perf map (which is removed: /tmp is shared). */
function functionsOf(dump: string, pid: number, tree: string): Map<string, number> {
  const map = PerfMap.ofProcess(pid);
  rmSync(`/tmp/perf-${pid}.map`, { force: true });
  const named = new Map<string, number>();
  addMapped(named, selfCostByFunction(readFileSync(dump, 'utf8')), map, tree);
  return named;
}

if (process.argv[1]?.endsWith('redis-call-instructions.js')) {
  main().catch((err: unknown) => {
    console.error(err instanceof Error ? err.message : err);
    process.exit(1);
  });
}
