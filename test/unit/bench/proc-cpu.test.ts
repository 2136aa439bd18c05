import { spawn, type ChildProcess } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import { allStats, othersCpu, processesChanged, processState, processTree, treeCpu, userKernelMs } from '../../../bench/proc-cpu.js';
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

describe('processesChanged', () => {
  it('names the processes of a tree that exited and the ones that replaced them, as a restarted worker; null when the same', async () => {
    // A parent that keeps one child, replacing it when it exits (as the router's primary replaces a worker).
    const script = `
      const { spawn } = require('node:child_process');
      const keep = () => spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' }).on('exit', keep);
      keep();
      setInterval(() => {}, 1000);`;
    const parent = spawn(process.execPath, ['-e', script], { stdio: 'ignore' });
    started.push(parent);
    const before = await waitFor('the child', () => { const t = processTree(parent.pid!); return t.length === 2 ? t : null; });
    expect(processesChanged(before, processTree(parent.pid!))).toBeNull();
    process.kill(before[1], 'SIGKILL');
    const after = await waitFor('its replacement', () => { const t = processTree(parent.pid!); return t.length === 2 && t[1] !== before[1] ? t : null; });
    expect(processesChanged(before, after)).toEqual({ exited: [before[1]], started: [after[1]] });
    expect(processesChanged(before, [before[0]])).toEqual({ exited: [before[1]], started: [] });
  });

  it('counts a child that exited but is not reaped yet (a zombie) as exited, and not again in the next run', async () => {
    // After the exec, `sleep 100` is the parent of the short sleep and never reaps it.
    const parent = spawn('sh', ['-c', 'sleep 0.2 & exec sleep 100'], { stdio: 'ignore' });
    started.push(parent);
    const before = await waitFor('the child', () => { const t = processTree(parent.pid!); return t.length === 2 ? t : null; });
    await waitFor('the child to exit', () => (processState(before[1]) === 'Z' ? true : null));
    expect(processTree(parent.pid!)).toEqual([before[0]]);
    expect(processesChanged(before, processTree(parent.pid!))).toEqual({ exited: [before[1]], started: [] });
    // Read at a run's start, a zombie is not among the processes: not named as exited again.
    expect(processesChanged(processTree(parent.pid!), processTree(parent.pid!))).toBeNull();
  });
});

describe('userKernelMs', () => {
  it('puts a busy loop in user space and a stream of system calls in the kernel', async () => {
    // Each child, told "go" once started, works until it has used 400 ms of CPU (however busy the
    // machine), then says so and idles: one spins in JavaScript (a million steps between two reads
    // of its CPU time, itself a system call), the other reads 1 MiB of /dev/zero per system call
    // (the kernel fills the buffer).
    const child = (body: string, perCheck: number): string => `const fs = require('node:fs'); const fd = fs.openSync('/dev/zero', 'r'); const b = Buffer.alloc(1048576);
      let x = 0; process.stdout.write('ready\\n');
      process.stdin.once('data', () => {
        const t = process.cpuUsage();
        for (;;) { for (let i = 0; i < ${perCheck}; i++) { ${body} } const u = process.cpuUsage(t); if (u.user + u.system >= 400000) break; }
        process.stdout.write('done ' + x + '\\n'); setInterval(() => {}, 1000);
      });`;
    const spin = spawn(process.execPath, ['-e', child('x = (x + i) % 7;', 1_000_000)], { stdio: ['pipe', 'pipe', 'inherit'] });
    const calls = spawn(process.execPath, ['-e', child('x += fs.readSync(fd, b);', 5)], { stdio: ['pipe', 'pipe', 'inherit'] });
    started.push(spin, calls);
    let out = '';
    for (const p of [spin, calls]) p.stdout!.on('data', (d: Buffer) => { out += d.toString(); });
    await waitFor('both children to start', () => (out.split('ready').length === 3 ? true : null));
    const before = [userKernelMs(spin.pid!), userKernelMs(calls.pid!)];
    spin.stdin!.write('go\n');
    calls.stdin!.write('go\n');
    await waitFor('both children to finish', () => (out.split('done').length === 3 ? true : null));
    const [s, c] = [userKernelMs(spin.pid!), userKernelMs(calls.pid!)].map((a, i) => ({ user: a.userMs - before[i].userMs, kernel: a.kernelMs - before[i].kernelMs }));
    // 400 ms each, give or take a tick sample; the spin's almost all user time, the reads' largely
    // kernel. How the ticks of the reads split varies with the host (half and half was seen on a
    // busy VM), so their kernel share is compared with the spin's, not with a fixed fraction.
    const kernelShare = (x: { user: number; kernel: number }): number => x.kernel / (x.user + x.kernel);
    expect(s.user + s.kernel).toBeGreaterThan(300);
    expect(c.user + c.kernel).toBeGreaterThan(300);
    expect(s.user).toBeGreaterThan(4 * s.kernel);
    expect(c.kernel).toBeGreaterThanOrEqual(100);
    expect(kernelShare(c)).toBeGreaterThan(kernelShare(s) + 0.2);
    expect(userKernelMs(2 ** 22 + 12_345)).toEqual({ userMs: 0, kernelMs: 0 });
  });
});

describe('othersCpu', () => {
  it('counts the CPU of the processes outside the given trees, one that exited through its parent', async () => {
    // Told "go": `mine` spins 300 ms of CPU itself; `outside` runs a child that spins 300 ms and
    // waits for it to exit (reaped, its CPU moves to the parent's cutime).
    const spin = (ms: number): string => `const t = process.cpuUsage(); let x = 0; for (;;) { for (let i = 0; i < 1e6; i++) x = (x + i) % 7; const u = process.cpuUsage(t); if (u.user + u.system >= ${ms * 1000}) break; }`;
    const mine = spawn(process.execPath, ['-e', `process.stdin.once('data', () => { ${spin(300)}; process.stdout.write('done\\n'); setInterval(() => {}, 1000); });`], { stdio: ['pipe', 'pipe', 'inherit'] });
    const outside = spawn(process.execPath, ['-e', `const { spawnSync } = require('node:child_process');
      process.stdin.once('data', () => { spawnSync(process.execPath, ['-e', ${JSON.stringify(spin(300))}]); process.stdout.write('done\\n'); setInterval(() => {}, 1000); });`],
      { stdio: ['pipe', 'pipe', 'inherit'] });
    started.push(mine, outside);
    let out = '';
    for (const p of [mine, outside]) p.stdout!.on('data', (d: Buffer) => { out += d.toString(); });
    await new Promise((r) => setTimeout(r, 500)); // both started (their start-up is not measured)
    // The same window read three ways, from the same two readings of /proc: whatever else runs
    // meanwhile (tests beside this one start and stop processes) is in all three alike.
    let frame = allStats();
    const read = () => new Map(frame);
    const everything = othersCpu([], read);
    const notMine = othersCpu([mine.pid!], read);
    const neither = othersCpu([mine.pid!, outside.pid!], read);
    mine.stdin!.write('go\n');
    outside.stdin!.write('go\n');
    await waitFor('both to finish', () => (out.split('done').length === 3 ? true : null));
    frame = allStats();
    const [e, m, n] = [everything.delta(), notMine.delta(), neither.delta()];
    // `mine`'s 300 ms is counted only where its tree is not a root; `outside`'s child's 300 ms
    // only where `outside` is not one (tick samples: 10 ms steps, and start-up of the child).
    expect(e - m).toBeGreaterThanOrEqual(270);
    expect(e - m).toBeLessThan(450);
    expect(m - n).toBeGreaterThanOrEqual(270);
    expect(m - n).toBeLessThan(600);
  });
});
