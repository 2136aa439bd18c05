/**
 * Instructions per turn of the event loop, by how its end-of-turn work is queued: each task an
 * Immediate of its own, or every task through atTurnEnd (src/turn-end.ts, one Immediate a turn).
 * At light load each request has turns of its own, so what a turn costs is paid per request.
 *
 *   node dist/bench/turn-instructions.js [<tree>] [--turns N] [--tasks 1,2,3]
 *
 * Each way and number of tasks runs in its own `node --single-threaded` under callgrind twice, N
 * and 3N turns after the same start-up; the difference of the two totals over 2N is the
 * instructions per turn (a turn: libuv's loop iteration, Node's Immediate processing and the
 * tasks, which do almost nothing). Needs valgrind.
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { readCommandLine, UsageError, type CommandLine, type CommandSpec } from './cli-args.js';
import { callgrindTotal, perCall } from './call-instructions.js';

export const COMMAND: CommandSpec = {
  usage: 'Usage: node dist/bench/turn-instructions.js [<tree>] [--turns N] [--tasks 1,2,3]',
  values: ['--turns', '--tasks'],
  positionals: [0, 1],
};

export interface TurnInstructionsOptions {
  readonly tree: string;
  readonly turns: number;
  readonly tasks: readonly number[];
}

/** The tool's settings from its command line. */
export function turnInstructionsOptions(line: CommandLine): TurnInstructionsOptions {
  const tasksArg = line.value('--tasks') ?? '1,2,3';
  const tasks = tasksArg.split(',').map(Number);
  if (tasks.some((t) => !Number.isInteger(t) || t < 1)) throw new UsageError(`--tasks: expected whole numbers of 1 or more, got "${tasksArg}"`);
  return { tree: line.positionals[0] ?? '.', turns: line.positiveNumber('--turns') ?? 100_000, tasks };
}

function totalFor(runner: string, tree: string, way: string, tasks: number, turns: number, dir: string): Promise<number> {
  return callgrindTotal([runner, tree, way, String(tasks), String(turns)], join(dir, `cg.${way}.${tasks}.${turns}`), `${way} with ${tasks} tasks`);
}

async function main(): Promise<void> {
  const { tree, turns, tasks } = readCommandLine(COMMAND, turnInstructionsOptions);
  const root = resolve(tree);
  const runner = join(root, 'dist/bench/turn-instructions-runner.js');
  if (!existsSync(runner) || !existsSync(join(root, 'dist/turn-end.js'))) throw new Error(`${runner} or dist/turn-end.js not found: build that tree first (npm run build)`);
  const dir = mkdtempSync(join(tmpdir(), 'ir-turns-'));
  try {
    console.log(`| end-of-turn tasks | instructions per turn, an Immediate each | through atTurnEnd (${turns} and ${3 * turns} turns, ${tree}) |`);
    console.log('|---|---|---|');
    for (const k of tasks) {
      const counts = await Promise.all(['immediates', 'turn-end'].map(async (way) => {
        const [low, high] = await Promise.all([totalFor(runner, root, way, k, turns, dir), totalFor(runner, root, way, k, 3 * turns, dir)]);
        return perCall(low, high, turns);
      }));
      console.log(`| ${k} | ${counts[0]} | ${counts[1]} |`);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv[1]?.endsWith('turn-instructions.js')) {
  main().catch((err: unknown) => {
    console.error(err instanceof Error ? err.message : err);
    process.exit(1);
  });
}
