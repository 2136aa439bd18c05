/**
 * An interrupted bench tool stops what it started (bench/interrupt.ts), run for real: a built
 * tool-like script starts a tree of two processes and a second process it then stops (SIGSTOP, as a
 * measurement holds the idle targets), and is sent SIGINT or SIGTERM.
 */
import { spawn } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { processState } from '../../../bench/proc-cpu.js';
import { tempDir, waitFor } from '../../helpers/processes.js';
import { builtFile } from '../../helpers/built-file.js';

/** The script: prints the pids it started (the tree's two, the stopped one's) and a directory it made through the harness, then waits. */
function fixture(install: boolean): string {
  const dir = tempDir('ir-interrupt-');
  const file = join(dir, 'tool.mjs');
  writeFileSync(file, `
    import { startProcess, tempDir } from ${JSON.stringify(builtFile('test/helpers/processes.js', 'test/helpers/processes.ts'))};
    import { stopChildrenOnInterrupt } from ${JSON.stringify(builtFile('bench/interrupt.js', 'bench/interrupt.ts'))};
    import { pauseTrees } from ${JSON.stringify(builtFile('bench/pause-targets.js', 'bench/pause-targets.ts'))};
    import { processTree } from ${JSON.stringify(builtFile('bench/proc-cpu.js', 'bench/proc-cpu.ts'))};
    if (${install}) stopChildrenOnInterrupt('tool');
    const tree = startProcess(['-e', "require('node:child_process').spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' }); setInterval(() => {}, 1000)"]);
    const idle = startProcess(['-e', 'setInterval(() => {}, 1000)']);
    let pids = processTree(tree.pid);
    while (pids.length < 2) { await new Promise((r) => setTimeout(r, 20)); pids = processTree(tree.pid); }
    pauseTrees([idle.pid]);
    const made = tempDir('ir-interrupt-made-');
    console.log(JSON.stringify([...pids, idle.pid]) + '\\n' + made);
    setInterval(() => {}, 1000);
  `);
  return file;
}

/** Runs the script, waits for its pids, sends `signal`: its exit code or signal, stderr, the pids. */
async function interrupt(signal: NodeJS.Signals, install: boolean): Promise<{ code: number | null; signal: NodeJS.Signals | null; stderr: string; pids: number[]; made: string }> {
  const child = spawn(process.execPath, [fixture(install)], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => { out += d; });
  child.stderr.setEncoding('utf8').on('data', (d: string) => { stderr += d; });
  const exited = new Promise<[number | null, NodeJS.Signals | null]>((resolve) => child.once('exit', (c, s) => resolve([c, s])));
  const pids = await waitFor('the pids started', () => (out.split('\n').length > 2 ? JSON.parse(out.split('\n')[0]) as number[] : null));
  const made = out.split('\n')[1];
  child.kill(signal);
  const [code, sig] = await exited;
  return { code, signal: sig, stderr, pids, made };
}

/** A process gone, or a zombie waiting for a parent that will not reap it (this machine's init). */
const ended = (pid: number): boolean => { const s = processState(pid); return s === null || s === 'Z'; };

function cleanUp(pids: readonly number[]): void {
  for (const pid of pids) {
    try { process.kill(pid, 'SIGCONT'); process.kill(pid, 'SIGKILL'); } catch { /* gone */ }
  }
}

describe('an interrupted bench tool', () => {
  it('on SIGINT continues and kills every process it started, the stopped ones and their children included, removes the directories it made, says so and exits 130', async () => {
    const r = await interrupt('SIGINT', true);
    try {
      expect(r.pids).toHaveLength(3);
      expect(r.code).toBe(130);
      expect(r.made).toMatch(/ir-interrupt-made-/);
      expect(existsSync(r.made)).toBe(false);
      expect(r.stderr).toContain('tool: interrupted (SIGINT): stopped the 3 processes it had started; exiting');
      await waitFor('every process started to end', () => r.pids.every(ended) || null, 5_000);
    } finally {
      cleanUp(r.pids);
    }
  });

  it('on SIGTERM exits 143 with nothing left behind', async () => {
    const r = await interrupt('SIGTERM', true);
    try {
      expect(r.code).toBe(143);
      await waitFor('every process started to end', () => r.pids.every(ended) || null, 5_000);
    } finally {
      cleanUp(r.pids);
    }
  });

  it('without the handler, the processes it started outlive it and the stopped one stays stopped (what the handler is for)', async () => {
    const r = await interrupt('SIGINT', false);
    try {
      expect(r.signal).toBe('SIGINT');
      await new Promise((res) => setTimeout(res, 300));
      expect(r.pids.filter((pid) => !ended(pid))).toHaveLength(3);
      expect(processState(r.pids[2])).toBe('T');
    } finally {
      cleanUp(r.pids);
    }
  });
});
