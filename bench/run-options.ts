/** Command line of `npm run bench -- [options]`, parsed and validated once. */
import { availableParallelism } from 'node:os';
import { UsageError, type CommandLine, type CommandSpec } from './cli-args.js';

export interface RunOptions {
  readonly quick: boolean;
  readonly workers: number;
  readonly connections: number;
  readonly durationS: number;
  readonly rounds: number;
  readonly autocannonRounds: number;
  readonly autocannonDurationS: number;
  readonly warmupS: number;
  readonly probeSamples: number;
  readonly micro: boolean;
  readonly profile: boolean;
  /** Scenario ids to run (empty = all). */
  readonly only: readonly string[];
  /** Base name of the files in bench/results/. */
  readonly out: string;
  /** Turn the kernel's DAMON memory monitors off for the run (root; bench/kernel-monitor.ts). */
  readonly pauseDamon: boolean;
}

export const RUN_USAGE = `Usage: npm run bench -- [options]
  --help, -h           this text
  --quick              smoke check (< 2 min): no warm-up, short runs, 2 rounds, no micro benchmarks, no profile
  --workers N          router / proxy / nginx workers (default: available CPUs = ${availableParallelism()})
  --connections N      load generator connections (default 64)
  --duration S         seconds per wrk run (default 6, quick 2)
  --rounds N           interleaved wrk rounds of the closed loop (default 5, quick 2); the autocannon
                       and fixed-rate phases run 3 rounds of their own (quick 1) whatever N is
  --only ID,ID         only these scenarios, e.g. direct,router,nginx (a partial run: results in partial.*
                       unless --out names them, and not counted as a full run)
  --no-micro           skip the limiter micro benchmarks
  --no-profile         skip the CPU profile of the router
  --pause-damon        turn the kernel's DAMON memory monitors off for the run, on again after (root)
  --out NAME           results file name in bench/results/ (default latest; quick: quick; with --only: partial)`;

export const RUN_COMMAND: CommandSpec = {
  usage: RUN_USAGE,
  values: ['--workers', '--connections', '--duration', '--rounds', '--only', '--out'],
  flags: ['--quick', '--no-micro', '--no-profile', '--pause-damon'],
};

export function runOptions(line: CommandLine): RunOptions {
  const quick = line.has('--quick');
  const o = {
    quick,
    workers: availableParallelism(),
    connections: 64,
    durationS: quick ? 2 : 6,
    rounds: quick ? 2 : 5,
    autocannonRounds: quick ? 1 : 3,
    autocannonDurationS: quick ? 1 : 5,
    warmupS: quick ? 0 : 2,
    probeSamples: quick ? 50 : 500,
    micro: !quick,
    profile: !quick,
    only: [] as string[],
    out: quick ? 'quick' : 'latest',
    pauseDamon: false,
  };
  const int = (flag: string, v: string, min: number, max: number): number => {
    const n = Number(v);
    if (!Number.isInteger(n) || n < min || n > max) throw new UsageError(`${flag}: expected an integer from ${min} to ${max}, got ${JSON.stringify(v)}`);
    return n;
  };
  for (const [a, v] of line.options) {
    if (a === '--no-micro') o.micro = false;
    else if (a === '--no-profile') o.profile = false;
    else if (a === '--pause-damon') o.pauseDamon = true;
    else if (a === '--workers') o.workers = int(a, v, 1, 64);
    else if (a === '--connections') o.connections = int(a, v, 1, 10_000);
    else if (a === '--duration') o.durationS = int(a, v, 1, 600);
    else if (a === '--rounds') o.rounds = int(a, v, 1, 100);
    else if (a === '--only') {
      o.only = v.split(',').map((id) => id.trim()).filter(Boolean);
      if (o.only.length === 0) throw new UsageError(`--only: expected scenario ids separated by commas (as in latest.json, e.g. direct,router,nginx), got ${JSON.stringify(v)}`);
    }
    else if (a === '--out') {
      o.out = v;
      if (!/^[\w.-]+$/.test(o.out)) throw new UsageError(`--out: expected a file base name, got ${JSON.stringify(o.out)}`);
    }
  }
  // A run of some scenarios does not replace the full run's results (latest.*) unless named so.
  if (o.only.length > 0 && !quick && !line.has('--out')) o.out = 'partial';
  return Object.freeze(o);
}
