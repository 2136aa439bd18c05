import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { damonMonitors, describeMonitors, kdamondCpu, kdamondPids, monitorsNow, pauseDamon, type MonitorPaths } from '../../../bench/kernel-monitor.js';

/** A sysfs admin tree and a /proc with the given threads, as the kernel lays them out. */
function fakeMachine(threads: Record<number, { comm: string; ns: number }>, monitors: { state: string; ops: string; sampleUs: number; actions: string[] }[]): MonitorPaths {
  const root = mkdtempSync(join(tmpdir(), 'ir-kernel-monitor-'));
  const proc = join(root, 'proc');
  const admin = join(root, 'kdamonds');
  mkdirSync(proc);
  mkdirSync(admin);
  for (const [pid, t] of Object.entries(threads)) setThread({ admin, proc }, Number(pid), t.comm, t.ns);
  writeFileSync(join(proc, 'self'), '');
  writeFileSync(join(admin, 'nr_kdamonds'), `${monitors.length}\n`);
  monitors.forEach((m, i) => {
    const ctx = join(admin, String(i), 'contexts', '0');
    mkdirSync(join(ctx, 'monitoring_attrs', 'intervals'), { recursive: true });
    writeFileSync(join(admin, String(i), 'state'), `${m.state}\n`);
    writeFileSync(join(ctx, 'operations'), `${m.ops}\n`);
    writeFileSync(join(ctx, 'monitoring_attrs', 'intervals', 'sample_us'), `${m.sampleUs}\n`);
    writeFileSync(join(ctx, 'monitoring_attrs', 'intervals', 'aggr_us'), `${m.sampleUs * 10}\n`);
    mkdirSync(join(ctx, 'schemes'));
    writeFileSync(join(ctx, 'schemes', 'nr_schemes'), `${m.actions.length}\n`);
    m.actions.forEach((a, s) => {
      mkdirSync(join(ctx, 'schemes', String(s)));
      writeFileSync(join(ctx, 'schemes', String(s), 'action'), `${a}\n`);
    });
  });
  return { admin, proc };
}

function setThread(paths: MonitorPaths, pid: number, comm: string, ns: number): void {
  mkdirSync(join(paths.proc, String(pid)), { recursive: true });
  writeFileSync(join(paths.proc, String(pid), 'comm'), `${comm}\n`);
  writeFileSync(join(paths.proc, String(pid), 'schedstat'), `${ns} 1000 7\n`);
}

const PAGEOUT = { state: 'on', ops: 'paddr', sampleUs: 500_000, actions: ['pageout'] };

describe('the kernel memory monitor', () => {
  it('finds kdamond threads by name and no other', () => {
    const m = fakeMachine({ 77: { comm: 'kdamond.0', ns: 5e6 }, 12: { comm: 'node', ns: 9e9 }, 13: { comm: 'kswapd0', ns: 1e6 } }, []);
    expect(kdamondPids(m)).toEqual([77]);
  });

  it('counts the kdamond threads\' CPU since the start, a thread started since from zero', () => {
    const m = fakeMachine({ 77: { comm: 'kdamond.0', ns: 5_000_000 } }, [PAGEOUT]);
    const cpu = kdamondCpu(m);
    setThread(m, 77, 'kdamond.0', 17_500_000);
    setThread(m, 90, 'kdamond.1', 2_000_000);
    expect(cpu.delta()).toBeCloseTo(14.5, 6);
  });

  it('reads no CPU where no kdamond ran', () => {
    const m = fakeMachine({ 12: { comm: 'node', ns: 9e9 } }, []);
    expect(kdamondCpu(m).delta()).toBeNull();
    expect(describeMonitors(damonMonitors(m), kdamondPids(m).length)).toBe('no kdamond thread');
    expect(describeMonitors([], 2)).toBe('2 kdamond thread(s) on, settings not readable here');
  });

  it('describes each monitor from sysfs', () => {
    const m = fakeMachine({}, [PAGEOUT, { state: 'off', ops: 'vaddr', sampleUs: 5000, actions: [] }]);
    const monitors = damonMonitors(m);
    expect(monitors.map((x) => [x.state, x.operations, x.sampleUs, x.aggregationUs, x.actions])).toEqual([
      ['on', 'paddr', 500_000, 5_000_000, ['pageout']],
      ['off', 'vaddr', 5000, 50_000, []],
    ]);
    expect(monitorsNow(m)).toBe(describeMonitors(monitors, 0));
    expect(describeMonitors(monitors, 1)).toBe('DAMON monitor 0 on (paddr, sampling every 500 ms, schemes: pageout); DAMON monitor 1 off (vaddr, sampling every 5 ms)');
  });

  it('turns off the monitors that are on, and on again at restore, leaving the others as they were', () => {
    const m = fakeMachine({}, [PAGEOUT, { ...PAGEOUT, state: 'off' }, PAGEOUT]);
    const state = (i: number): string => readFileSync(join(m.admin, String(i), 'state'), 'utf8').trim();
    const paused = pauseDamon(m);
    expect(paused.paused).toEqual([0, 2]);
    expect([state(0), state(1), state(2)]).toEqual(['off', 'off', 'off']);
    paused.restore();
    expect([state(0), state(1), state(2)]).toEqual(['on', 'off', 'on']);
    paused.restore();
    expect([state(0), state(1), state(2)]).toEqual(['on', 'off', 'on']);
  });

  it('refuses to pause a monitor whose state it cannot read, naming the file', () => {
    const m = fakeMachine({}, [PAGEOUT]);
    writeFileSync(join(m.admin, 'nr_kdamonds'), '2\n');
    expect(() => pauseDamon(m)).toThrow(/monitor 1's state \(.*kdamonds\/1\/state\): pausing it needs root/);
    expect(readFileSync(join(m.admin, '0', 'state'), 'utf8').trim()).toBe('on');
  });
});
