import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { machineBusy, parseCpuTicks } from '../../../bench/machine-busy.js';

const line = (user: number, system: number, idle: number, iowait: number, softirq: number, steal: number): string =>
  `cpu  ${user} 0 ${system} ${idle} ${iowait} 0 ${softirq} ${steal} 0 0\ncpu0 1 2 3 4 5 6 7 8 0 0\nintr 1 2 3\n`;

describe('machine busy', () => {
  it('reads the all-CPU line of /proc/stat: busy is neither idle nor waiting for I/O', () => {
    expect(parseCpuTicks(line(100, 50, 300, 10, 40, 0))).toEqual({ total: 500, busy: 190, steal: 0 });
    expect(parseCpuTicks('cpu 10 0 5 85\n')).toEqual({ total: 100, busy: 15, steal: 0 });
    expect(() => parseCpuTicks('cpu0 1 2 3 4\n')).toThrow(/not the all-CPU line/);
  });

  it('reads chosen CPUs from their own lines, summed; names a CPU the file lacks', () => {
    const stat = 'cpu  30 0 30 140 0 0 0 0 0 0\ncpu0 20 0 10 70 0 0 0 0 0 0\ncpu1 10 0 20 70 0 0 0 0 0 0\ncpu10 1 0 1 1 0 0 0 0 0 0\n';
    expect(parseCpuTicks(stat, [0])).toEqual({ total: 100, busy: 30, steal: 0 });
    expect(parseCpuTicks(stat, [1])).toEqual({ total: 100, busy: 30, steal: 0 });
    expect(parseCpuTicks(stat, [0, 1])).toEqual({ total: 200, busy: 60, steal: 0 });
    expect(() => parseCpuTicks(stat, [2])).toThrow(/no line for CPU 2/);
  });

  it('gives the busy and stolen share of the ticks between its start and now', () => {
    const path = join(mkdtempSync(join(tmpdir(), 'ir-machine-busy-')), 'stat');
    writeFileSync(path, line(1000, 500, 3000, 100, 400, 0));
    const busy = machineBusy(path);
    writeFileSync(path, line(1600, 700, 3100, 100, 500, 100));
    const d = busy.delta()!;
    expect(d.busy).toBeCloseTo(900 / 1100, 9);
    expect(d.steal).toBeCloseTo(100 / 1100, 9);
    writeFileSync(path, line(1000, 500, 3000, 100, 400, 0));
    const cpu0 = machineBusy(path, [0]);
    writeFileSync(path, line(1000, 500, 3000, 100, 400, 0).replace('cpu0 1 2 3 4', 'cpu0 5 2 3 8'));
    expect(cpu0.delta()!.busy).toBeCloseTo(4 / 8, 9);
  });

  it('reads nothing when the counters did not move or cannot be read', () => {
    const path = join(mkdtempSync(join(tmpdir(), 'ir-machine-busy-')), 'stat');
    writeFileSync(path, line(1, 1, 1, 0, 0, 0));
    expect(machineBusy(path).delta()).toBeNull();
    expect(machineBusy(join(path, 'missing')).delta()).toBeNull();
  });
});
