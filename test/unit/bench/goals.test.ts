/**
 * The bench's goals read from its samples: the tail goals, once from wrk's think time and once
 * from open-loop's arrivals where that ran, each the per-round difference to direct (and to nginx).
 */
import { describe, expect, it } from 'vitest';
import { evaluateGoals } from '../../../bench/goals.js';
import type { LoadResult } from '../../../bench/load-types.js';
import type { Sample } from '../../../bench/summary.js';

function sample(scenario: string, round: number, p99: number, tool: LoadResult['tool'] = 'wrk'): Sample {
  return {
    scenario,
    round,
    serverCpuMs: null,
    result: { tool, requests: 1000, seconds: 1, rps: 1000, non2xx: 0, errors: 0, loadCpuMs: 0, latencyMs: { p50: p99 / 4, p99, p999: p99 * 2, mean: p99 / 3, max: p99 * 3 } },
  };
}

/** Rounds 0 and 1 of direct, the full router and nginx with the given p99s (ms). */
function rounds(p99s: Record<string, [number, number]>, tool: LoadResult['tool']): Sample[] {
  return Object.entries(p99s).flatMap(([id, [a, b]]) => [sample(id, 0, a, tool), sample(id, 1, b, tool)]);
}

const tail = (goals: ReturnType<typeof evaluateGoals>) => goals.filter((g) => g.name.includes('p99') || g.name.startsWith('the same'));

describe('evaluateGoals: the tail at half load', () => {
  const thinkTime = rounds({ direct: [0.5, 0.6], 'router-local': [2.0, 3.0], nginx: [1.0, 1.1] }, 'wrk');

  it('reads wrk\'s fixed-rate rounds alone when open-loop did not run', () => {
    expect(tail(evaluateGoals([], thinkTime, 'router-local')).map((g) => [g.name, g.measured, g.met])).toEqual([
      ['p99 added latency at half the full router\'s peak (fixed rate)', '1.95 ms (1.50 ms–2.40 ms)', true],
      ['the same, beyond what nginx adds at that rate (nginx added 0.50 ms (0.50 ms–0.50 ms))', '1.45 ms (1.00 ms–1.90 ms)', true],
    ]);
  });

  it('adds the same two goals from open-loop\'s rounds, after them', () => {
    const open = rounds({ direct: [0.3, 0.2], 'router-local': [4.3, 6.2], nginx: [0.4, 0.4] }, 'open-loop');
    const goals = tail(evaluateGoals([], thinkTime, 'router-local', open));
    expect(goals).toHaveLength(4);
    expect(goals.slice(2).map((g) => [g.name, g.measured, g.met])).toEqual([
      ['p99 added at half load with open-loop arrivals (Poisson, every request at its time)', '5.00 ms (4.00 ms–6.00 ms)', false],
      ['the same with open-loop arrivals, beyond what nginx adds (nginx added 0.15 ms (0.10 ms–0.20 ms))', '4.85 ms (3.90 ms–5.80 ms)', false],
    ]);
  });

  it('a p99 added below 0 (the reference\'s own tail the longer one: noise) is shown, said so, and not judged met', () => {
    const noisy = rounds({ direct: [9.0, 8.0], 'router-local': [2.0, 3.0], nginx: [1.0, 1.1] }, 'wrk');
    const [added] = tail(evaluateGoals([], noisy, 'router-local'));
    expect([added.measured, added.met]).toEqual(['-6.00 ms (-7.00 ms–-5.00 ms) (below 0: noise outweighed the difference; not judged met)', false]);
  });

  it('leaves out the part beyond nginx where nginx did not run', () => {
    const open = rounds({ direct: [0.3, 0.2], 'router-local': [1.3, 1.2] }, 'open-loop');
    const goals = tail(evaluateGoals([], thinkTime, 'router-local', open));
    expect(goals.map((g) => g.name)).toEqual([
      'p99 added latency at half the full router\'s peak (fixed rate)',
      'the same, beyond what nginx adds at that rate (nginx added 0.50 ms (0.50 ms–0.50 ms))',
      'p99 added at half load with open-loop arrivals (Poisson, every request at its time)',
    ]);
    expect(goals[2].met).toBe(true);
  });
});

describe('evaluateGoals: CPU per request', () => {
  /** A wrk round of `scenario` whose server processes spent `us` µs of CPU per request. */
  function cpuSample(scenario: string, round: number, us: number | null): Sample {
    const s = sample(scenario, round, 1);
    return { ...s, serverCpuMs: us === null ? null : (us * s.result.requests) / 1000 };
  }
  const cpu = (goals: ReturnType<typeof evaluateGoals>) => goals.filter((g) => g.name.includes('CPU per request'));

  it('reads the absolute goal and the ratio to nginx in the same round', () => {
    const wrk = [cpuSample('router-local', 0, 60), cpuSample('router-local', 1, 44), cpuSample('nginx', 0, 30), cpuSample('nginx', 1, 20)];
    expect(cpu(evaluateGoals(wrk, [], 'router-local')).map((g) => [g.target, g.measured, g.met])).toEqual([
      ['≤ 50 µs', '52.0 µs (44.0 µs–60.0 µs)', false],
      ['≤ 2.08×', '2.10 (2.00–2.20)×', false],
    ]);
  });

  it('meets the ratio when the hour is slow and the absolute figure misses', () => {
    const wrk = [cpuSample('router-local', 0, 62), cpuSample('nginx', 0, 31)];
    expect(cpu(evaluateGoals(wrk, [], 'router-local')).map((g) => g.met)).toEqual([false, true]);
  });

  it('says not measured when the CPU was not read, and leaves out the ratio without nginx', () => {
    expect(cpu(evaluateGoals([cpuSample('router-local', 0, null)], [], 'router-local')).map((g) => [g.measured, g.met]))
      .toEqual([['not measured', null]]);
    expect(cpu(evaluateGoals([cpuSample('router-local', 0, 40)], [], 'router-local')).map((g) => [g.measured, g.met]))
      .toEqual([['40.0 µs', true]]);
  });
});
