import { spawn, type ChildProcess } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import { processTree, treeCpu } from '../../../bench/proc-cpu.js';
import { waitFor } from '../../helpers/processes.js';

/**
 * A node process whose child, told "go" on its stdin, spins until it has itself used 300 ms of
 * CPU (process.cpuUsage), then prints how much it used and idles.
 */
function startBurner(): { parent: ChildProcess; output: () => string } {
  const child = `
    process.stdin.once('data', () => {
      const start = process.cpuUsage();
      let used = 0;
      while (used < 300_000) { const u = process.cpuUsage(start); used = u.user + u.system; }
      process.stdout.write('used ' + used + '\\n');
      setInterval(() => {}, 1000);
    });`;
  const script = `
    const { spawn } = require('node:child_process');
    spawn(process.execPath, ['-e', ${JSON.stringify(child)}], { stdio: ['inherit', 'inherit', 'inherit'] });
    setInterval(() => {}, 1000);`;
  const parent = spawn(process.execPath, ['-e', script], { stdio: ['pipe', 'pipe', 'inherit'] });
  let out = '';
  parent.stdout!.on('data', (d: Buffer) => { out += d.toString(); });
  return { parent, output: () => out };
}

const started: ChildProcess[] = [];
afterEach(() => {
  for (const p of started.splice(0)) {
    for (const pid of processTree(p.pid!).reverse()) {
      try { process.kill(pid, 'SIGKILL'); } catch { /* gone */ }
    }
  }
});

describe('treeCpu', () => {
  it('gives the CPU ms a process tree used between the snapshot and delta(), its children included', async () => {
    const { parent, output } = startBurner();
    started.push(parent);
    await waitFor('the child process', () => processTree(parent.pid!).length === 2 || null);
    // Let both finish starting (their start-up CPU is not what is measured).
    await new Promise((r) => setTimeout(r, 300));
    const cpu = treeCpu(parent.pid!);
    expect(cpu.pids).toHaveLength(2);
    parent.stdin!.write('go\n');
    const line = await waitFor('the burn to end', () => /used (\d+)/.exec(output()));
    const usedMs = Number(line[1]) / 1000;
    const ms = cpu.delta();
    // At least what the child counted itself; not more than that and a little of the idle
    // processes' own (never the nanoseconds or the seconds of a wrong unit).
    expect(ms).toBeGreaterThanOrEqual(usedMs * 0.95);
    expect(ms).toBeLessThan(usedMs + 150);
  });
});
