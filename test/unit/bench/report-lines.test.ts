import { describe, expect, it } from 'vitest';
import { kdamondLine, machineLine, residentLine } from '../../../bench/report.js';
import type { LoadResult } from '../../../bench/load-types.js';
import type { Scenario } from '../../../bench/scenarios.js';
import { summarize, type Sample } from '../../../bench/summary.js';

const result = (requests: number): LoadResult => ({
  tool: 'open-loop', requests, seconds: 4, rps: requests / 4, non2xx: 0, errors: 0,
  latencyMs: { p50: 0.3, p99: 2, p999: 4, mean: 0.5, max: 9 }, loadCpuMs: 100,
});

const SCENARIOS = [
  { id: 'direct', n: '1', label: 'direct', target: 'mock', bodies: ['{}'], direct: 'direct', autocannon: false },
  { id: 'router-local', n: '4', label: 'full router', target: 'router-local', bodies: ['{}'], direct: 'direct', autocannon: false },
] as unknown as Scenario[];

describe('the machine lines of a report', () => {
  it('gives the kernel monitor\'s CPU per request and the machine\'s busy share per scenario, median and range over rounds', () => {
    const samples: Sample[] = [
      { scenario: 'direct', round: 0, result: result(40_000), serverCpuMs: 400, kdamondCpuMs: 80, machine: { busy: 0.5, steal: 0 } },
      { scenario: 'router-local', round: 0, result: result(40_000), serverCpuMs: 2800, kdamondCpuMs: 120, machine: { busy: 0.8, steal: 0 } },
      { scenario: 'router-local', round: 1, result: result(40_000), serverCpuMs: 2900, kdamondCpuMs: 200, machine: { busy: 0.9, steal: 0 } },
    ];
    const rows = summarize(SCENARIOS, samples, 'router');
    expect(kdamondLine(rows)).toBe('The kernel\'s memory monitor (kdamond threads) during these runs, CPU µs per request: 1 direct 2.00; 4 full router 4.00 (3.00–5.00).\n');
    expect(machineLine(rows)).toBe('The whole machine during these runs (load generator, mock backend and target together; /proc/stat), percent of all CPUs busy: 1 direct 50; 4 full router 85 (80–90).\n');
  });

  it('prints neither line where nothing was read (no kdamond thread, reports written before)', () => {
    const rows = summarize(SCENARIOS, [{ scenario: 'direct', round: 0, result: result(1000), serverCpuMs: 10, kdamondCpuMs: null }], 'router');
    expect(kdamondLine(rows)).toBeNull();
    expect(machineLine(rows)).toBeNull();
    expect(residentLine(rows)).toBeNull();
  });

  it("gives each target's resident memory after its runs, all and anonymous, in MB", () => {
    const samples: Sample[] = [
      { scenario: 'direct', round: 0, result: result(40_000), serverCpuMs: 400, resident: { rss: 60e6, anon: 20e6 } },
      { scenario: 'router-local', round: 0, result: result(40_000), serverCpuMs: 2800, resident: { rss: 290e6, anon: 140e6 } },
      { scenario: 'router-local', round: 1, result: result(40_000), serverCpuMs: 2900, resident: { rss: 310e6, anon: 150e6 } },
    ];
    expect(residentLine(summarize(SCENARIOS, samples, 'router'))).toBe("Resident memory of each target's processes after its runs (primary and workers; /proc/<pid>/status), MB: "
      + '1 direct 60; 4 full router 300 (290–310). Of it anonymous (heaps and tables, no file behind them), MB: 1 direct 20; 4 full router 145 (140–150).\n');
  });
});
