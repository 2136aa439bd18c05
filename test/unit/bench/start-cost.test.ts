/**
 * The start-cost tool, run for real on this tree's build with one start of one worker: it prints
 * one row per figure with a median that is a number above 0 (a router started, became ready, was
 * read and stopped), and names the tree.
 */
import { spawnSync } from 'node:child_process';
import { expect, it } from 'vitest';
import { builtFile } from '../../helpers/built-file.js';

const ROOT = new URL('../../../', import.meta.url).pathname;

it('starts the built router, reads it at ready and stops it: every figure above 0', () => {
  const tool = builtFile('bench/start-cost.js', 'bench/start-cost.ts');
  const r = spawnSync(process.execPath, [tool, '--rounds', '1', '--workers', '1'], { cwd: ROOT, encoding: 'utf8', timeout: 60_000, killSignal: 'SIGKILL' });
  expect(r.status, r.stderr).toBe(0);
  expect(r.stdout).toContain(`A: ${ROOT.replace(/\/$/, '')}`);
  const rows = r.stdout.split('\n').filter((l) => /^\| (ready|primary|1 worker|whole)/.test(l));
  expect(rows).toHaveLength(5);
  for (const row of rows) {
    const median = Number(row.split('|')[2].trim().split(' ')[0]);
    expect(median, row).toBeGreaterThan(0);
  }
}, 90_000);
