/**
 * A few built bench tools, run for real with --help and with a wrong argument: both end before
 * the tool starts anything (no server, no load), so running them here is cheap. They cover the
 * shapes: options read in main (worker-profile), two positionals required (compare-trees),
 * options read at module level (auth-load), a cluster primary (ipc-wakeup), a positional (runs-table).
 */
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { builtFile } from '../../helpers/built-file.js';

const ROOT = new URL('../../../', import.meta.url).pathname;

/** The tool's built file, or an error when it is missing or older than its source or cli-args.ts. */
const built = (tool: string): string => builtFile(`bench/${tool}.js`, `bench/${tool}.ts`, 'bench/cli-args.ts');

function run(tool: string, args: string[]): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [built(tool), ...args], { cwd: ROOT, encoding: 'utf8', timeout: 20_000, killSignal: 'SIGKILL' });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

const CASES: readonly { tool: string; wrong: string[]; error: string }[] = [
  { tool: 'worker-profile', wrong: ['--scenario', 'router-local', '--duraton', '3'], error: 'worker-profile: unknown option "--duraton"' },
  { tool: 'compare-trees', wrong: ['.'], error: 'compare-trees: expected 2 arguments besides the options, got 1' },
  { tool: 'auth-load', wrong: ['--rounds'], error: 'auth-load: --rounds: expected a value' },
  { tool: 'ipc-wakeup', wrong: ['soon'], error: 'ipc-wakeup: seconds per interval: expected a positive number, got "soon"' },
  { tool: 'runs-table', wrong: ['--dir', 'bench/results'], error: 'runs-table: unknown option "--dir"' },
  { tool: 'runs-table', wrong: ['--since', '2026-11-25 23:27'], error: 'runs-table: --since: only with --read-across' },
  { tool: 'paced-streams', wrong: ['--tps', '5'], error: 'paced-streams: --tps: 5 tokens a second makes a 64-token stream last over 4 s; at least 16' },
  { tool: 'latency-sweep', wrong: ['--fractions', '2'], error: 'latency-sweep: --fractions: "2" is not a fraction of the peak above 0 and at most 1' },
  { tool: 'response-parser-micro', wrong: ['--rounds', '3'], error: 'response-parser-micro: unknown option "--rounds"' },
  { tool: 'start-cost', wrong: ['--rounds', '0'], error: 'start-cost: --rounds: expected a positive number, got "0"' },
  { tool: 'large-body-trees', wrong: ['.', '.', '--bytes', 'many'], error: 'large-body-trees: --bytes: expected a positive number, got "many"' },
  { tool: 'auth-reload', wrong: ['--keys', 'all'], error: 'auth-reload: --keys: expected a positive number, got "all"' },
  { tool: 'resources-change-scale', wrong: ['--changes', '0'], error: 'resources-change-scale: --changes: expected a positive number, got "0"' },
  { tool: 'metrics-scrape-scale', wrong: ['--routes', 'many'], error: 'metrics-scrape-scale: --routes: expected a positive number, got "many"' },
  { tool: 'idle-return', wrong: ['--quiet', 'later'], error: 'idle-return: --quiet: "later" is not a list of seconds (0 or more) separated by commas' },
];

describe('bench tools on --help and on a wrong argument', () => {
  for (const { tool, wrong, error } of CASES) {
    it(`${tool}: --help and -h print the usage and exit 0; ${wrong.join(' ')} prints one line and the usage on stderr and exits 2`, () => {
      for (const help of ['--help', '-h']) {
        const r = run(tool, [help]);
        expect(r.status, `${help}: ${r.stderr}`).toBe(0);
        expect(r.stdout).toMatch(new RegExp(`^Usage: node dist/bench/${tool}\\.js`));
        expect(r.stderr).toBe('');
      }
      const r = run(tool, wrong);
      expect(r.status, r.stderr).toBe(2);
      expect(r.stdout).toBe('');
      const lines = r.stderr.trimEnd().split('\n');
      expect(lines[0]).toBe(error);
      expect(lines[1]).toMatch(new RegExp(`^Usage: node dist/bench/${tool}\\.js`));
      expect(lines).toHaveLength(2); // no stack trace
    });
  }
});
