import { spawn, type ChildProcess } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import { pauseTrees, whileStopped } from '../../../bench/pause-targets.js';
import { processState, processTree } from '../../../bench/proc-cpu.js';
import { waitFor } from '../../helpers/processes.js';

/** A node process with one child of its own, each printing a tick every 20 ms. */
function startTree(): { parent: ChildProcess; ticks: () => number } {
  const script = `
    const { spawn } = require('node:child_process');
    spawn(process.execPath, ['-e', 'setInterval(() => process.stdout.write("c"), 20)'], { stdio: ['ignore', 'inherit', 'inherit'] });
    setInterval(() => process.stdout.write('p'), 20);`;
  const parent = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  parent.stdout!.on('data', (d: Buffer) => { out += d.toString(); });
  return { parent, ticks: () => out.length };
}

const started: ChildProcess[] = [];
afterEach(() => {
  for (const p of started.splice(0)) {
    for (const pid of processTree(p.pid!).reverse()) {
      try { process.kill(pid, 'SIGCONT'); process.kill(pid, 'SIGKILL'); } catch { /* gone */ }
    }
  }
});

describe('pauseTrees', () => {
  it('stops every process of a tree until resumed, then lets it run again', async () => {
    const { parent, ticks } = startTree();
    started.push(parent);
    const tree = await waitFor('the child process', () => { const t = processTree(parent.pid!); return t.length === 2 ? t : null; });
    await waitFor('both to tick', () => ticks() >= 6 || null);

    const resume = pauseTrees([parent.pid!]);
    await waitFor('both stopped', () => tree.every((pid) => processState(pid) === 'T') || null);
    // Ticks written just before the stop may still be in the pipe: let them arrive first.
    await new Promise((r) => setTimeout(r, 50));
    const frozen = ticks();
    await new Promise((r) => setTimeout(r, 150));
    expect(ticks()).toBe(frozen);

    resume();
    resume(); // a second call does nothing
    await waitFor('both running', () => tree.every((pid) => processState(pid) !== 'T') || null);
    await waitFor('ticks again', () => ticks() >= frozen + 4 || null);
  });

  it('skips a tree whose process has exited, and leaves other processes alone', async () => {
    const gone = spawn(process.execPath, ['-e', '0']);
    await new Promise((r) => gone.once('exit', r));
    const { parent } = startTree();
    started.push(parent);
    const resume = pauseTrees([gone.pid!]);
    expect(processState(parent.pid!)).not.toBe('T');
    resume();
  });

  it('whileStopped holds the tree stopped for the length of the call, and continues it when the call throws', async () => {
    const { parent, ticks } = startTree();
    started.push(parent);
    await waitFor('it to tick', () => ticks() >= 2 || null);
    // A stop takes effect once the process is next scheduled: wait for it inside the call.
    const stopped = await whileStopped([parent.pid!], () => waitFor('stopped', () => processState(parent.pid!) === 'T' || null, 5000));
    expect(stopped).toBe(true);
    await waitFor('running again', () => processState(parent.pid!) !== 'T' || null);
    await expect(whileStopped([parent.pid!], async () => { throw new Error('boom'); })).rejects.toThrow('boom');
    await waitFor('running after the throw', () => processState(parent.pid!) !== 'T' || null);
  });
});
