import { spawn } from 'node:child_process';
import { availableParallelism } from 'node:os';
import { afterEach, describe, expect, it } from 'vitest';
import { cpuSplit, cpusOf, pinProcess, pinTree } from '../../../bench/cpu-split.js';

describe('bench/cpu-split', () => {
  const children: ReturnType<typeof spawn>[] = [];
  afterEach(() => {
    for (const c of children.splice(0)) c.kill('SIGKILL');
  });

  it('keeps the first CPUs for the load and gives the targets the others; none when either side would have none', () => {
    expect(cpuSplit(2, 1)).toEqual({ load: '0', targets: '1', loadCpus: [0] });
    expect(cpuSplit(8, 1)).toEqual({ load: '0', targets: '1-7', loadCpus: [0] });
    expect(cpuSplit(8, 3)).toEqual({ load: '0-2', targets: '3-7', loadCpus: [0, 1, 2] });
    expect(cpuSplit(8, 7)).toMatchObject({ load: '0-6', targets: '7' });
    expect(cpuSplit(1, 1)).toBeNull();
    expect(cpuSplit(4, 4)).toBeNull();
    expect(cpuSplit(4, 0)).toBeNull();
    expect(cpuSplit(4, 1.5)).toBeNull();
  });

  it('pins a real process and the process below it, every thread, and reads the pinning back', async () => {
    // A shell that starts a child and waits: a tree of two processes.
    const parent = spawn('sh', ['-c', 'sleep 30 & wait'], { stdio: 'ignore' });
    children.push(parent);
    await new Promise((r) => setTimeout(r, 200));
    const cpu = String(availableParallelism() - 1);
    const pinned = pinTree(parent.pid!, cpu);
    expect(pinned.length).toBe(2);
    for (const pid of pinned) expect(cpusOf(pid)).toBe(cpu);
    pinProcess(parent.pid!, '0');
    expect(cpusOf(parent.pid!)).toBe('0');
  });

  it('names the process when it cannot be pinned', () => {
    expect(() => pinProcess(2 ** 22 + 7, '0')).toThrow(/could not pin process 4194311 to CPUs 0/);
  });
});
