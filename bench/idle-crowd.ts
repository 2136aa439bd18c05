/**
 * What idle routers beside a loaded one do to its latency, on this machine:
 *
 *   node dist/bench/idle-crowd.js [--idle N] [--rate R] [--rounds N] [--duration S]
 *
 * Starts the mock backend, the full router (scenario router-local, 2 workers) and N more full
 * routers that stay idle (each served one short burst, so their upstream pools hold connections,
 * as the bench's targets do between their rounds). Then, in alternating rounds, loads the mock
 * directly and the measured router at the fixed rate R (wrk think time, as the bench's fixed-rate
 * run), once with the idle routers stopped (SIGSTOP, what `npm run bench` now does) and once with
 * them running. Prints per condition: direct and router p50/p99, the router's CPU per request,
 * and the idle routers' CPU and wake-ups per second.
 */
import { whileStopped } from './pause-targets.js';
import { processTree, schedStat } from './proc-cpu.js';
import { runWrk } from './load-wrk.js';
import type { LoadResult, LoadSpec } from './load-types.js';
import { limitModeOf, LONG_TOKENS, PATH, routerEnv, routerResources, SCENARIOS } from './scenarios.js';
import { startMock, startRouter, stopAll, tempDir, type Target } from './targets.js';
import { readCommandLine, type CommandSpec } from './cli-args.js';
import { median } from './order-stats.js';
import { stopChildrenOnInterrupt } from './interrupt.js';

const COMMAND: CommandSpec = {
  usage: 'Usage: node dist/bench/idle-crowd.js [--idle N] [--rate R] [--rounds N] [--duration S]',
  values: ['--idle', '--rate', '--rounds', '--duration'],
};
const FULL = SCENARIOS.find((s) => s.id === 'router-local')!;

interface Row { direct: LoadResult; router: LoadResult; routerCpuUs: number; idleCpuMsPerS: number; idleWakeupsPerS: number }


/** CPU ns and times put on a CPU, summed over every thread of the given processes. */
function sched(pids: readonly number[]): { cpuNs: number; slices: number } {
  return pids.map(schedStat).reduce((a, b) => ({ cpuNs: a.cpuNs + b.cpuNs, slices: a.slices + b.slices }), { cpuNs: 0, slices: 0 });
}

async function main(): Promise<void> {
  stopChildrenOnInterrupt('idle-crowd');
  const { idle, rate, rounds, durationS } = readCommandLine(COMMAND, (line) => ({
    idle: line.positiveNumber('--idle') ?? 12,
    rate: line.positiveNumber('--rate') ?? 16_000,
    rounds: line.positiveNumber('--rounds') ?? 3,
    durationS: line.positiveNumber('--duration') ?? 5,
  }));
  const mock = await startMock('mock');
  const mockLong = await startMock('mock-long', ['--output-tokens', String(LONG_TOKENS)]);
  const start = (name: string): Promise<Target> => startRouter(name, routerResources(mock.port, mockLong.port, limitModeOf('router-local', null)), 2,
    routerEnv('router-local', `${tempDir('ir-crowd-')}/access.log`));
  const spec = (t: Target, d: number, r?: number): LoadSpec => ({ url: `${t.url}${PATH}`, bodies: FULL.bodies, connections: 64, durationS: d, rate: r, headers: FULL.headers });
  try {
    const router = await start('measured');
    const crowd: Target[] = [];
    for (let i = 0; i < idle; i++) {
      const t = await start(`idle-${i}`);
      await runWrk('wrk', spec(t, 1));
      crowd.push(t);
    }
    await runWrk('wrk', spec(router, 2, rate));
    const routerPids = processTree(router.proc.pid);
    const crowdPids = crowd.flatMap((t) => processTree(t.proc.pid));
    const rows = new Map<string, Row[]>([['stopped', []], ['running', []]]);
    for (let r = 0; r < rounds; r++) {
      for (const condition of r % 2 === 0 ? ['stopped', 'running'] : ['running', 'stopped']) {
        await whileStopped(condition === 'stopped' ? crowd.map((t) => t.proc.pid) : [], async () => {
          const direct = await runWrk('wrk', spec(mock, durationS, rate));
          const c0 = sched(crowdPids);
          const r0 = sched(routerPids);
          const t0 = performance.now();
          const routed = await runWrk('wrk', spec(router, durationS, rate));
          const s = (performance.now() - t0) / 1000;
          const c1 = sched(crowdPids);
          const r1 = sched(routerPids);
          rows.get(condition)!.push({
            direct, router: routed, routerCpuUs: (r1.cpuNs - r0.cpuNs) / 1000 / Math.max(1, routed.requests),
            idleCpuMsPerS: (c1.cpuNs - c0.cpuNs) / 1e6 / s, idleWakeupsPerS: (c1.slices - c0.slices) / s,
          });
          process.stderr.write(`round ${r + 1}, ${idle} idle routers ${condition}: direct p99 ${direct.latencyMs.p99.toFixed(2)} ms, router p50 ${routed.latencyMs.p50.toFixed(2)} p99 ${routed.latencyMs.p99.toFixed(2)} ms\n`);
        });
      }
    }
    process.stdout.write(`${idle} idle full routers beside the measured one; fixed rate ${rate} req/s asked, ${rounds} rounds of ${durationS} s, medians:\n\n`
      + '| idle routers | direct p50 / p99 ms | router p50 / p99 ms | router p99 added ms | router CPU µs/request | idle routers: CPU ms/s, times on a CPU /s |\n|---|---|---|---|---|---|\n');
    for (const [condition, rs] of rows) {
      const m = (f: (x: Row) => number): number => median(rs.map(f));
      process.stdout.write(`| ${condition} | ${m((x) => x.direct.latencyMs.p50).toFixed(2)} / ${m((x) => x.direct.latencyMs.p99).toFixed(2)} | ${m((x) => x.router.latencyMs.p50).toFixed(2)} / ${m((x) => x.router.latencyMs.p99).toFixed(2)} | `
        + `${m((x) => x.router.latencyMs.p99 - x.direct.latencyMs.p99).toFixed(2)} | ${m((x) => x.routerCpuUs).toFixed(1)} | ${m((x) => x.idleCpuMsPerS).toFixed(1)}, ${Math.round(m((x) => x.idleWakeupsPerS))} |\n`);
    }
  } finally {
    await stopAll();
  }
}

await main();
