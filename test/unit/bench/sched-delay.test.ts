import { describe, expect, it } from 'vitest';
import { delayStats, parseTimehist, roleOf, type Roles } from '../../../bench/sched-delay.js';

/** As `perf sched timehist` prints it (perf 6.1): header, then one line per switch. */
const TIMEHIST = `           time    cpu  task name                       wait time  sch delay   run time
                        [tid/pid]                          (msec)     (msec)     (msec)
--------------- ------  ------------------------------  ---------  ---------  ---------
    2386.585356 [0000]  perf[10477]                         0.000      0.000      0.000 
    2386.585379 [0001]  node[11059]                         0.120      0.004      0.031 
    2386.585400 [0000]  node[11061/11059]                   1.000      0.300      0.010 
    2386.585420 [0001]  wrk[11118/11117]                    0.050      0.587      0.022 
    2386.585500 [0000]  kworker/u8:2-flush-254:0[35]        0.000      0.011      0.002 
    2386.585600 [0001]  memfd:sealed 91[4200]               0.000      0.020      0.001 
    2386.585700 [0000]  node[11026]                         0.400      1.250      0.050 
`;

describe('parseTimehist', () => {
  it('reads each switch: thread, process, delay and run time, main threads as task[pid]', () => {
    const s = parseTimehist(TIMEHIST);
    expect(s).toHaveLength(7);
    expect(s[1]).toEqual({ comm: 'node', tid: 11059, pid: 11059, delayMs: 0.004, runMs: 0.031 });
    expect(s[2]).toEqual({ comm: 'node', tid: 11061, pid: 11059, delayMs: 0.3, runMs: 0.01 });
    expect(s[4].comm).toBe('kworker/u8:2-flush-254:0');
    expect(s[5]).toMatchObject({ comm: 'memfd:sealed 91', tid: 4200, pid: 4200 });
  });

  it('skips headers, summaries and empty input', () => {
    expect(parseTimehist('')).toEqual([]);
    expect(parseTimehist('Samples do not have callchains.\n  Total number of unique tasks: 4\n')).toEqual([]);
  });
});

describe('roleOf', () => {
  const roles: Roles = { primary: 11048, workers: new Set([11059, 11060]), backend: 11026 };
  const [, worker, workerHelper, wrk, kworker, , backend] = parseTimehist(TIMEHIST);

  it('names the main threads of the servers and every wrk thread', () => {
    expect(roleOf(worker, roles)).toBe('workers');
    expect(roleOf(backend, roles)).toBe('backend');
    expect(roleOf(wrk, roles)).toBe('wrk');
    expect(roleOf({ ...worker, tid: 11048, pid: 11048 }, roles)).toBe('primary');
  });

  it('leaves out helper threads and other processes', () => {
    expect(roleOf(workerHelper, roles)).toBeNull();
    expect(roleOf(kworker, roles)).toBeNull();
  });
});

describe('delayStats', () => {
  it('gives nearest-rank percentiles of the delays and the summed run time', () => {
    const switches = Array.from({ length: 1000 }, (_, i) => ({ comm: 'node', tid: 1, pid: 1, delayMs: (i + 1) / 1000, runMs: 0.01 }));
    const s = delayStats(switches)!;
    expect(s.wakes).toBe(1000);
    expect(s.p50).toBe(0.5);
    expect(s.p90).toBe(0.9);
    expect(s.p99).toBe(0.99);
    expect(s.p999).toBe(0.999);
    expect(s.max).toBe(1);
    expect(s.runMs).toBeCloseTo(10, 9);
  });

  it('is null without switches and exact for one', () => {
    expect(delayStats([])).toBeNull();
    expect(delayStats([{ comm: 'wrk', tid: 2, pid: 1, delayMs: 0.2, runMs: 1 }])).toMatchObject({ p50: 0.2, p99: 0.2, max: 0.2 });
  });
});
