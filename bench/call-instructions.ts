/**
 * Instructions per call of one small hot-path function, counted by valgrind's callgrind: the
 * figure behind a single change's "N thousand instructions" where the router's own count
 * (instructions.ts) is too coarse to show it.
 *
 *   node dist/bench/call-instructions.js [<tree>] [--calls N] [--only name,name]
 *
 * Each call of CALLS (call-instructions-cases.ts, loaded from `<tree>`'s dist, default this tree,
 * so two builds compare) runs in its own `node --single-threaded` under callgrind twice, N and 3N
 * times after the same start-up; the difference of the two totals over 2N is the instructions
 * per call, with Node's start-up, the warm-up and V8's compilations cancelled out. Needs valgrind.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { exitWithUsageError, readCommandLine, type CommandLine, type CommandSpec } from './cli-args.js';

const run = promisify(execFile);
export const COMMAND: CommandSpec = {
  usage: 'Usage: node dist/bench/call-instructions.js [<tree>] [--calls N] [--only name,name]',
  values: ['--calls', '--only'],
  positionals: [0, 1],
};

export interface CallInstructionsOptions {
  readonly tree: string;
  readonly calls: number;
  /** Case names to run, or null for every case (checked against the tree's cases once loaded). */
  readonly only: ReadonlySet<string> | null;
}

/** The tool's settings from its command line. */
export function callInstructionsOptions(line: CommandLine): CallInstructionsOptions {
  const only = line.value('--only');
  return {
    tree: line.positionals[0] ?? '.',
    calls: line.positiveNumber('--calls') ?? 200_000,
    only: only === undefined ? null : new Set(only.split(',')),
  };
}

/** The total callgrind prints at exit (`==pid== Collected : N`), or null. */
export function collectedTotal(stderr: string): number | null {
  const m = /Collected : (\d+)/.exec(stderr);
  return m === null ? null : Number(m[1]);
}

/** The process id callgrind prints its lines with (`==pid== Collected : N`), or null. */
export function collectedPid(stderr: string): number | null {
  const m = /==(\d+)== Collected : \d+/.exec(stderr);
  return m === null ? null : Number(m[1]);
}

/** Instructions per call from the totals of `calls` and of 3 × `calls` calls. */
export function perCall(low: number, high: number, calls: number): number {
  return Math.round((high - low) / (2 * calls));
}

/**
 * Total instructions callgrind counted in `node --single-threaded <args>` (the whole process),
 * its output file `out`; `what` names the run in an error.
 */
export async function callgrindTotal(args: readonly string[], out: string, what: string): Promise<number> {
  return (await callgrindRun(args, out, what)).total;
}

/**
 * callgrindTotal, with `nodeFlags` before the script (`--perf-basic-prof` for names of
 * JavaScript functions) and the id of the process counted (its perf map's name).
 */
export async function callgrindRun(args: readonly string[], out: string, what: string, nodeFlags: readonly string[] = []): Promise<{ total: number; pid: number }> {
  const { stderr } = await run('valgrind', ['--tool=callgrind', `--callgrind-out-file=${out}`, process.execPath, '--single-threaded', ...nodeFlags, ...args], { maxBuffer: 16 << 20 });
  const total = collectedTotal(stderr);
  const pid = collectedPid(stderr);
  if (total === null || pid === null) throw new Error(`callgrind printed no total for ${what}:\n${stderr.slice(-2000)}`);
  return { total, pid };
}

/** Total instructions callgrind counted for `calls` calls of case `name` (the runner's whole process). */
function totalFor(runner: string, tree: string, name: string, calls: number, dir: string): Promise<number> {
  return callgrindTotal([runner, tree, name, String(calls)], join(dir, `cg.${calls}.${name.replace(/\W+/g, '-')}`), name);
}

async function main(): Promise<void> {
  const { tree, calls, only } = readCommandLine(COMMAND, callInstructionsOptions);
  const root = resolve(tree);
  const cases = join(root, 'dist/bench/call-instructions-cases.js');
  if (!existsSync(cases)) throw new Error(`${cases} not found: build that tree first (npm run build)`);
  const runner = join(root, 'dist/bench/call-instructions-runner.js');
  const { CALLS } = await import(cases) as typeof import('./call-instructions-cases.js');
  const names = Object.keys(CALLS).filter((n) => only === null || only.has(n));
  if (only !== null && names.length !== only.size) exitWithUsageError(COMMAND, `--only: known cases are ${Object.keys(CALLS).join(', ')}`);
  const dir = mkdtempSync(join(tmpdir(), 'ir-calls-'));
  try {
    console.log(`| call | instructions per call (${calls} and ${3 * calls} calls, ${tree}) |`);
    console.log('|---|---|');
    // Two cases at a time: the counts do not depend on sharing the CPUs.
    for (let i = 0; i < names.length; i += 2) {
      const batch = names.slice(i, i + 2);
      const rows = await Promise.all(batch.map(async (name) => {
        const [low, high] = await Promise.all([totalFor(runner, root, name, calls, dir), totalFor(runner, root, name, 3 * calls, dir)]);
        return `| ${name} | ${perCall(low, high, calls)} |`;
      }));
      for (const r of rows) console.log(r);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

// The path's last part exactly: redis-call-instructions.js, which imports this module, ends the same way.
if (process.argv[1]?.endsWith('/call-instructions.js')) {
  main().catch((err: unknown) => {
    console.error(err instanceof Error ? err.message : err);
    process.exit(1);
  });
}
