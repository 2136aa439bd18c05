/** Issue 7's goals, evaluated on interleaved samples (reported, never asserted). */
import type { Goal } from './report.js';
import { cpuUsPerRequest, roundDiff, roundRatio, spread, type Sample, type Spread } from './summary.js';

const f2 = (x: number): string => x.toFixed(2);
const show = (s: Spread, fmt: (x: number) => string): string => (s.n > 1 ? `${fmt(s.median)} (${fmt(s.min)}–${fmt(s.max)})` : fmt(s.median));
const pct = (x: number): string => `${(100 * x).toFixed(1)}%`;

function ratioGoal(samples: readonly Sample[], name: string, a: string, b: string, atLeast: number): Goal {
  const r = roundRatio(samples, a, b);
  return { name, target: `≥ ${atLeast}×`, measured: r === null ? 'not run' : `${show(r, f2)}×`, met: r === null ? null : r.median >= atLeast };
}

/** Throughput lost by adding a feature: 1 − rps(with)/rps(without), per round. */
function costGoal(samples: readonly Sample[], name: string, withIt: string, without: string, below: number): Goal {
  const r = roundRatio(samples, withIt, without);
  if (r === null) return { name, target: `< ${pct(below)}`, measured: 'not run', met: null };
  const cost = { median: 1 - r.median, min: 1 - r.max, max: 1 - r.min, n: r.n };
  return { name, target: `< ${pct(below)}`, measured: show(cost, pct), met: cost.median < below };
}

export function evaluateGoals(wrk: readonly Sample[], fixedRate: readonly Sample[], fullRouter: string, openLoop: readonly Sample[] = []): Goal[] {
  const goals = [
    ratioGoal(wrk, 'full router (log + local limit) vs nginx (long-term aim 0.8×)', fullRouter, 'nginx', 0.6),
    ratioGoal(wrk, 'bare-proxy floor (uWS + http1 client) vs nginx', 'uws-http1-proxy', 'nginx', 0.8),
    ratioGoal(wrk, 'full router vs bare uWS + undici proxy', fullRouter, 'uws-proxy', 0.8),
    ratioGoal(wrk, 'full router vs plain Node proxy', fullRouter, 'node-proxy', 1.5),
    costGoal(wrk, 'local limiter cost (scenario 4 vs 3)', fullRouter, 'router-log', 0.05),
    costGoal(wrk, 'Redis limiter cost (scenario 5 vs 3; leases on, the default)', 'router-global', 'router-log', 0.15),
    costGoal(wrk, 'Redis limiter cost with leases off (scenario 5n vs 3)', 'router-global-no-leases', 'router-log', 0.15),
    costGoal(wrk, 'access log cost (scenario 3 vs 2)', 'router-log', 'router', 0.05),
  ];
  goals.push(...cpuGoals(wrk, fullRouter));
  goals.push(...tailGoals(fixedRate, fullRouter, 'p99 added latency at half the full router\'s peak (fixed rate)', 'the same, beyond what nginx adds at that rate'));
  if (openLoop.length > 0) {
    goals.push(...tailGoals(openLoop, fullRouter, 'p99 added at half load with open-loop arrivals (Poisson, every request at its time)', 'the same with open-loop arrivals, beyond what nginx adds'));
  }
  return goals;
}

/**
 * Issue 13's CPU goal: 50 µs of server CPU per request, set when nginx spent 24 µs on the same
 * load. The machines here change speed by up to 2× between hours (nginx has cost 12–46 µs), so
 * beside the absolute figure the goal is also read as what it meant then, a ratio to nginx's CPU
 * in the same round: 50 / 24 ≈ 2.08×.
 */
export const CPU_GOAL_US = 50;
export const NGINX_CPU_WHEN_SET_US = 24;

/** The full router's server CPU per request over nginx's, round by round; null where either was not measured. */
export function cpuRatioToNginx(samples: readonly Sample[], fullRouter: string): Spread | null {
  const measured = (id: string): boolean => {
    const cpu = samples.filter((s) => s.scenario === id).map(cpuUsPerRequest);
    return cpu.length > 0 && cpu.every(Number.isFinite);
  };
  return measured(fullRouter) && measured('nginx') ? roundRatio(samples, fullRouter, 'nginx', cpuUsPerRequest) : null;
}

function cpuGoals(samples: readonly Sample[], fullRouter: string): Goal[] {
  const us = (x: number): string => `${x.toFixed(1)} µs`;
  const own = samples.filter((s) => s.scenario === fullRouter).map(cpuUsPerRequest);
  const cpu = own.length > 0 && own.every(Number.isFinite) ? spread(own) : null;
  const goals: Goal[] = [{
    name: 'full router (log + local limit) server CPU per request',
    target: `≤ ${CPU_GOAL_US} µs`,
    measured: cpu === null ? 'not measured' : show(cpu, us),
    met: cpu === null ? null : cpu.median <= CPU_GOAL_US,
  }];
  const ratio = cpuRatioToNginx(samples, fullRouter);
  if (ratio !== null) {
    const limit = CPU_GOAL_US / NGINX_CPU_WHEN_SET_US;
    goals.push({
      name: `full router's CPU per request over nginx's in the same round (${CPU_GOAL_US} µs was ${f2(limit)}× nginx's ${NGINX_CPU_WHEN_SET_US} µs when the goal was set)`,
      target: `≤ ${f2(limit)}×`,
      measured: `${show(ratio, f2)}×`,
      met: ratio.median <= limit,
    });
  }
  return goals;
}

/** The p99 the full router adds to direct at a fixed rate, and (where nginx ran) the part beyond what nginx adds. */
function tailGoals(samples: readonly Sample[], fullRouter: string, name: string, beyondName: string): Goal[] {
  const p99 = (s: Sample): number => s.result.latencyMs.p99;
  const ms = (x: number): string => `${f2(x)} ms`;
  const added = roundDiff(samples, fullRouter, 'direct', p99);
  const goals: Goal[] = [{ name, target: '< 2 ms', measured: added === null ? 'not run' : judged(added, ms), met: added === null ? null : tailMet(added.median) }];
  // The same rate through nginx: what this machine adds to any proxy's tail (no target of ours).
  const nginx = roundDiff(samples, 'nginx', 'direct', p99);
  if (nginx !== null && added !== null) {
    const ours = roundDiff(samples, fullRouter, 'nginx', p99);
    goals.push({
      name: `${beyondName} (nginx added ${show(nginx, ms)})`,
      target: '< 2 ms',
      measured: ours === null ? 'not run' : judged(ours, ms),
      met: ours === null ? null : tailMet(ours.median),
    });
  }
  return goals;
}

/**
 * A p99 added of 0 to 2 ms meets its goal. Below 0 the reference's own tail was the longer one in
 * the median round: the machine's noise outweighed what the router adds, which such a run cannot
 * tell, so it is not counted as met.
 */
function tailMet(median: number): boolean {
  return median >= 0 && median < 2;
}

function judged(x: Spread, ms: (v: number) => string): string {
  const shown = show(x, ms);
  return x.median < 0 ? `${shown} (below 0: noise outweighed the difference; not judged met)` : shown;
}
