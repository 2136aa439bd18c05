/**
 * `npm run bench [-- options]`: starts the mock backends, the router variants, the reference
 * proxies (nginx, plain Node, bare uWS) and a redis-server; runs every scenario with wrk in
 * interleaved rounds (A B C… A B C…), a subset with autocannon, a fixed-rate run at half the
 * full router's peak (wrk think time, then open-loop's scheduled arrivals), a streaming latency probe, the limiter micro benchmarks and a CPU profile;
 * writes bench/results/<out>.json|.md|.svg. See docs/benchmarks.md.
 */
import { createHash } from 'node:crypto';
import { existsSync, statSync, truncateSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, release, totalmem } from 'node:os';
import { join } from 'node:path';
import { evaluateGoals } from './goals.js';
import { runAutocannon } from './load-autocannon.js';
import { probeStreams } from './load-stream-probe.js';
import type { LoadResult, LoadSpec } from './load-types.js';
import { runWrk } from './load-wrk.js';
import { openLoopBinary, runOpenLoop } from './load-open-loop.js';
import { whileStopped } from './pause-targets.js';
import { processesChanged, processTree, treeCpu } from './proc-cpu.js';
import { machineBusy } from './machine-busy.js';
import { residentOf } from './proc-memory.js';
import { kdamondCpu, monitorsNow, pauseDamon } from './kernel-monitor.js';
import * as targetsModule from './targets.js';
import { haveBinary, ROOT, startMock, startRedis, stopAll, tempDir, type Target } from './targets.js';
import { writeReport, type BenchReport } from './report.js';
import { profileRouter, runMicro } from './run-extras.js';
import { scriptCalls } from './redis-stats.js';
import { addFailures, failuresInLog, failuresNote } from './log-failures.js';
import { readCommandLine } from './cli-args.js';
import { RUN_COMMAND, RUN_USAGE, runOptions } from './run-options.js';
import {
  BASE_ROUTER, FIXED_RATE_REFERENCES, FULL_ROUTER, LONG_TOKENS, limitModeOf, PATH, routerEnv, scenarioPath, routerResources, SCENARIOS, SHORT_TOKENS, tenantAuthYaml, usesRedis, type Scenario, type TargetKey,
} from './scenarios.js';
import { cpuUsPerRequest, spread, summarize, type Sample } from './summary.js';
import { startOtlpCollector } from '../test/helpers/otlp-collector.js';
import { createTestCa } from '../test/helpers/test-ca.js';
import { statusOverTls } from '../test/helpers/processes.js';
import * as scenariosModule from './scenarios.js';
import { startTarget, type TargetModules } from './start-target.js';
import { stopChildrenOnInterrupt } from './interrupt.js';

const THIS_TREE: TargetModules = { targets: targetsModule, scenarios: scenariosModule };

const log = (m: string): void => { process.stderr.write(`[bench] ${m}\n`); };

/** Seconds of unread load before each open-loop fixed-rate run (see where it is used). */
const OPEN_LOOP_LEAD_IN_S = 1;

function firstBinary(...candidates: string[]): string | null {
  return candidates.find((c) => (c.startsWith('/') ? existsSync(c) : haveBinary(c))) ?? null;
}

async function main(): Promise<void> {
  stopChildrenOnInterrupt('bench');
  const opts = readCommandLine(RUN_COMMAND, runOptions);
  const startedAt = new Date().toISOString();
  const loadAvgStart = loadavg();
  const notes: string[] = [];
  const wrkBin = firstBinary('wrk', '/usr/bin/wrk');
  const nginxBin = firstBinary('nginx', '/usr/sbin/nginx');
  const redisBin = firstBinary(process.env.REDIS_SERVER_BIN ?? 'redis-server', '/usr/bin/redis-server');
  if (wrkBin === null) notes.push('wrk not installed: every scenario ran with autocannon only (which saturates near 50k req/s on 2 cores)');
  if (nginxBin === null) notes.push('nginx not installed: the nginx scenario and the × nginx ratios were skipped');
  if (redisBin === null) notes.push('redis-server not installed: scenarios 5 and 5n (global limit) were skipped');
  // Read before any pause: the machine as it was given.
  const kernelMonitor = monitorsNow();
  const damon = opts.pauseDamon ? pauseDamon() : null;
  if (damon !== null) notes.push(`the kernel's DAMON memory monitors were turned off for the run (--pause-damon: ${damon.paused.length === 0 ? 'none was on' : `monitor ${damon.paused.join(', ')}`}) and on again after it`);

  const unknown = opts.only.filter((id) => !SCENARIOS.some((s) => s.id === id));
  if (unknown.length > 0) {
    process.stderr.write(`--only: no scenario ${unknown.map((id) => JSON.stringify(id)).join(', ')}; the ids: ${SCENARIOS.map((s) => s.id).join(', ')}\n\n${RUN_USAGE}\n`);
    process.exit(2);
  }
  const scenarios = SCENARIOS.filter((s) => (opts.only.length === 0 || opts.only.includes(s.id))
    && !(s.target === 'nginx' && nginxBin === null) && !(usesRedis(s.target) && redisBin === null));
  if (scenarios.length === 0) {
    process.stderr.write(`nothing to run: ${notes.join('; ')}\n`);
    process.exit(2);
  }
  const needed = new Set<TargetKey>(scenarios.map((s) => s.target));
  if ([...needed].some((k) => k.startsWith('router-'))) needed.add('mock-long');

  log(`starting servers (${opts.workers} workers each): ${[...needed].join(', ')}`);
  const mock = await startMock('pod-a');
  const mockLong = await startMock('pod-long', ['--output-tokens', String(LONG_TOKENS)]);
  const redis = [...needed].some(usesRedis) ? await startRedis(redisBin!) : null;
  // In this process (its CPU is not the router's): counts the spans, keeps none.
  const collector = needed.has('router-trace') ? await startOtlpCollector({ keepSpans: false }) : null;
  // A throwaway certificate (RSA 2048, signed by a throwaway CA) for the HTTPS router.
  const tls = needed.has('router-tls') ? await createTestCa() : null;
  const logDir = tempDir('ir-bench-log-');
  const logFile = (key: TargetKey): string => join(logDir, `${key}.log`);
  const authFile = join(logDir, 'auth.yaml');
  writeFileSync(authFile, tenantAuthYaml((k) => createHash('sha256').update(k).digest('hex')));
  const targets = new Map<TargetKey, Target>([['mock', mock], ['mock-long', mockLong]]);
  const resourcesOf = (key: TargetKey): string => routerResources(mock.port, mockLong.port, limitModeOf(key, redis?.address ?? null));
  await Promise.all([...needed].filter((key) => !targets.has(key)).map(async (key) => {
    targets.set(key, await startTarget(THIS_TREE, key, {
      name: key, workers: opts.workers, mock, mockLong, redis: redis?.address ?? null,
      nginxBin: nginxBin ?? undefined, logFile: logFile(key), collector: collector?.url ?? null, authFile, tls,
    }));
  }));
  await sanityCheck(scenarios, targets);

  const specOf = (sc: Scenario, durationS: number, rate?: number): LoadSpec =>
    ({ url: `${targets.get(sc.target)!.url}${scenarioPath(sc)}`, bodies: sc.bodies, connections: opts.connections, durationS, rate, headers: sc.headers });
  // Every target but the one measured (and the mock backends, and redis-server where it is used)
  // is stopped during a measurement: see bench/pause-targets.ts.
  const allBut = (keep: TargetKey | null): number[] => [
    ...[...targets].filter(([key]) => key !== keep && key !== 'mock' && key !== 'mock-long').map(([, t]) => t.proc.pid),
    ...(redis !== null && (keep === null || !usesRedis(keep)) ? [redis.proc.pid] : []),
  ];
  const wrk: Sample[] = [];
  /** Per router scenario, its non-2xx answers as its access log names them (every load tool, every round). */
  const failures = new Map<string, Map<string, number>>();
  // `leadIn`: load run once the other targets are stopped and before anything is read (open-loop's
  // fixed rate: see below).
  const measure = async (sc: Scenario, round: number, run: () => Promise<LoadResult>, into: Sample[], leadIn?: () => Promise<unknown>): Promise<void> => {
    const t = targets.get(sc.target)!;
    const { result, serverCpuMs, store, kdamondCpuMs, machineShare, resident } = await whileStopped(allBut(sc.target), async () => {
      if (leadIn !== undefined) await leadIn();
      const cpu = treeCpu(t.proc.pid);
      const kdamond = kdamondCpu();
      const machine = machineBusy();
      // The global limit's store: redis-server's CPU and script calls during the run (it serves no other scenario).
      const storeCpu = usesRedis(sc.target) && redis !== null ? treeCpu(redis.proc.pid) : null;
      const callsBefore = storeCpu === null ? 0 : await scriptCalls(redis!.address);
      const result = await run();
      const serverCpuMs = cpu.delta();
      // The machine's window closes first: the kdamond reading scans /proc.
      const machineShare = machine.delta();
      const kdamondCpuMs = kdamond.delta();
      // The target's processes (primary, workers) as the run leaves them.
      const resident = residentOf(cpu.pids);
      const changed = processesChanged(cpu.pids, processTree(t.proc.pid));
      if (changed !== null) notes.push(`${sc.id} (${result.tool}, round ${round + 1}${into === wrk ? ', closed loop' : ''}): the target's processes changed during the run (exited: ${changed.exited.join(', ') || 'none'}; new: ${changed.started.join(', ') || 'none'}), so that run's CPU and memory figures miss what was not there throughout`);
      const store = storeCpu === null ? undefined : { cpuMs: storeCpu.delta(), scriptCalls: (await scriptCalls(redis!.address)) - callsBefore };
      return { result, serverCpuMs, store, kdamondCpuMs, machineShare, resident };
    });
    if (sc.target.startsWith('router-') && sc.target !== 'router-plain') {
      const f = logFile(sc.target);
      if (into === wrk && round === 0 && existsSync(f)) notes.push(`access log check (${sc.id}): ${(statSync(f).size / Math.max(1, result.requests)).toFixed(0)} bytes written per request`);
      if (result.non2xx > 0 && existsSync(f)) {
        const seen = failures.get(sc.id) ?? new Map<string, number>();
        failures.set(sc.id, seen);
        addFailures(seen, failuresInLog(f));
      }
      if (existsSync(f)) truncateSync(f, 0);
    }
    into.push({ scenario: sc.id, round, result, serverCpuMs, kdamondCpuMs, machine: machineShare, resident, ...(store === undefined ? {} : { store }) });
    log(`${result.tool} ${sc.id} round ${round + 1}: ${Math.round(result.rps)} req/s p99 ${result.latencyMs.p99.toFixed(2)} ms non-2xx ${result.non2xx} errors ${result.errors}`);
  };
  const load = (spec: LoadSpec): Promise<LoadResult> => (wrkBin !== null ? runWrk(wrkBin, spec) : runAutocannon(spec));

  if (opts.warmupS > 0) {
    log('warm-up');
    for (const sc of scenarios) await load(specOf(sc, opts.warmupS));
  }
  for (const key of needed) if (existsSync(logFile(key))) truncateSync(logFile(key), 0);

  const ac: Sample[] = [];
  const acScenarios = wrkBin === null ? [] : scenarios.filter((s) => s.autocannon);
  for (let r = 0; r < opts.rounds; r++) {
    // Rotate the order each round so no scenario always runs right after the same neighbour.
    for (let i = 0; i < scenarios.length; i++) {
      const sc = scenarios[(i + r) % scenarios.length];
      await measure(sc, r, () => load(specOf(sc, opts.durationS)), wrk);
    }
  }
  for (let r = 0; r < opts.autocannonRounds; r++) {
    for (const sc of acScenarios) await measure(sc, r, () => runAutocannon(specOf(sc, opts.autocannonDurationS)), ac);
  }

  const fixed: Sample[] = [];
  const openLoopFixed: Sample[] = [];
  const full = scenarios.find((s) => s.id === FULL_ROUTER);
  const direct = scenarios.find((s) => s.id === 'direct');
  const peak = spread(wrk.filter((s) => s.scenario === FULL_ROUTER).map((s) => s.result.rps));
  const rate = peak === null ? 0 : Math.round(peak.median / 2);
  if (full !== undefined && direct !== undefined && rate > 0) {
    log(`fixed rate ${rate} req/s (${OPEN_LOOP_LEAD_IN_S} s lead-in)`);
    // nginx and our bare floor at the same rate, where they run: the tail this machine adds to any
    // proxy, against which the router's own share of the added latency is read.
    const references = scenarios.filter((s) => FIXED_RATE_REFERENCES.includes(s.id));
    // Each target first takes OPEN_LOOP_LEAD_IN_S of the same load, not read, as in the open-loop
    // runs below: a target resumed after the others' runs answers slowly for a moment, which is
    // not the steady half load the goal is about (runs before 2026-12-07 had no lead-in here).
    for (let r = 0; r < Math.max(1, opts.autocannonRounds); r++) {
      for (const sc of [direct, full, ...references]) {
        await measure(sc, r, () => load(specOf(sc, opts.durationS, rate)), fixed, () => load(specOf(sc, OPEN_LOOP_LEAD_IN_S, rate)));
      }
    }
    // The same rate with arrivals spaced in microseconds and every request sent at its time
    // (wrk's think time sends a burst each millisecond, and slows down as a target's latency
    // grows, so a slower target is measured at a lower rate than the one asked). Each target
    // first takes OPEN_LOOP_LEAD_IN_S of the same load, not read: resumed after the others'
    // runs, the router answers more slowly than requests arrive for up to a few hundred ms
    // (docs/benchmarks.md, "The highest rate under 2 ms"), which is not the steady half load the
    // goal is about.
    const openLoop = openLoopBinary();
    if ('bin' in openLoop) {
      log(`fixed rate ${rate} req/s, open-loop (Poisson arrivals, ${OPEN_LOOP_LEAD_IN_S} s lead-in)`);
      for (let r = 0; r < Math.max(1, opts.autocannonRounds); r++) {
        for (const sc of [direct, full, ...references]) {
          await measure(sc, r, () => runOpenLoop(openLoop.bin, specOf(sc, opts.durationS, rate), 'poisson'), openLoopFixed,
            () => runOpenLoop(openLoop.bin, specOf(sc, OPEN_LOOP_LEAD_IN_S, rate), 'poisson'));
        }
      }
      const reached = (id: string): string => {
        const xs = fixed.filter((x) => x.scenario === id);
        return xs.length === 0 ? '–' : `${Math.round((100 * xs.reduce((a, x) => a + x.result.rps, 0)) / xs.length / rate)}%`;
      };
      notes.push(`fixed rate: wrk's think time reached ${reached(FULL_ROUTER)} of the asked rate on the full router and ${reached('direct')} direct; open-loop sends every request at its scheduled time (bench/load-open-loop.ts)`);
    } else notes.push(`fixed rate with open-loop arrivals not run: ${openLoop.reason}`);
  }

  let streams: BenchReport['streams'] = null;
  if (['direct-sse16', 'router-sse16', 'direct-sse64', 'router-sse64'].every((id) => scenarios.some((s) => s.id === id))) {
    log('streaming probe');
    const pick = (id: string): { id: string; url: string; body: string } => {
      const sc = scenarios.find((s) => s.id === id)!;
      return { id: sc.label, url: `${targets.get(sc.target)!.url}${scenarioPath(sc)}`, body: sc.bodies[0] };
    };
    const probe = await whileStopped(allBut(scenarios.find((s) => s.id === 'router-sse16')!.target),
      () => probeStreams(['direct-sse16', 'router-sse16', 'direct-sse64', 'router-sse64'].map(pick), opts.probeSamples));
    const rounds = [...new Set(wrk.map((s) => s.round))];
    const cpuPerReq = (id: string, round: number): number => {
      const s = wrk.find((x) => x.scenario === id && x.round === round);
      return s === undefined ? NaN : cpuUsPerRequest(s);
    };
    const perChunk = (a: string, b: string): ReturnType<typeof spread> =>
      spread(rounds.map((r) => (cpuPerReq(a, r) - cpuPerReq(b, r)) / (LONG_TOKENS - SHORT_TOKENS)));
    streams = { probe, routerCpuUsPerChunk: perChunk('router-sse64', 'router-sse16'), mockCpuUsPerChunk: perChunk('direct-sse64', 'direct-sse16') };
  }

  const micro = [];
  if (opts.micro) {
    log('limiter micro benchmarks');
    micro.push(await runMicro('limiter-micro', 180_000));
    micro.push(await runMicro('redis-limiter-micro', 180_000));
  } else notes.push('limiter micro benchmarks not run (--quick or --no-micro)');

  let profile: BenchReport['profile'] = null;
  if (opts.profile && full !== undefined) {
    log('CPU profile of the full router');
    try {
      profile = await whileStopped(allBut(null), () => profileRouter(resourcesOf(FULL_ROUTER), opts.workers, routerEnv(FULL_ROUTER, join(logDir, 'profiled.log')),
        (url) => load({ url: `${url}${PATH}`, bodies: full.bodies, connections: opts.connections, durationS: opts.durationS * 2 })));
    } catch (err) {
      notes.push(`CPU profile failed: ${(err as Error).message.split('\n')[0]}`);
    }
  } else notes.push('CPU profile not taken (--quick or --no-profile)');

  await stopAll();
  tls?.remove();
  damon?.restore();
  if (collector !== null) {
    const traced = wrk.filter((x) => x.scenario === 'router-trace').reduce((n, x) => n + x.result.requests, 0);
    notes.push(`tracing check (router-trace): the mock collector received ${collector.received()} spans in ${collector.requests()} exports; the measured rounds sent ${traced} requests (warm-up and sanity requests come on top; spans beyond the export queue are dropped and counted)`);
    await collector.close();
  }
  for (const [id, seen] of failures) if (seen.size > 0) notes.push(failuresNote(id, seen));
  notes.push('scenario 6 alternates two models on the full router: sf-model (limit never reached) and sf-model-tiny (1 input token a day, so every request is answered 429 by the limiter)');
  notes.push('each measurement ran with the other targets stopped (SIGSTOP), all but the mock backends and, for a global limit, redis-server: idle servers beside the one measured wake often enough to move its tail (bench/pause-targets.ts)');
  notes.push('added latency in the closed-loop tables includes queueing at saturation; the fixed-rate table is the one to read for latency at moderate load');
  const report: BenchReport = {
    mode: opts.quick ? 'quick' : opts.only.length > 0 ? 'partial' : 'full',
    startedAt,
    finishedAt: new Date().toISOString(),
    command: `npm run bench${process.argv.length > 2 ? ` -- ${process.argv.slice(2).join(' ')}` : ''}`,
    machine: {
      nproc: cpus().length, cpuModel: cpus()[0]?.model ?? 'unknown', memoryGiB: Math.round(totalmem() / 2 ** 30),
      node: process.version, kernel: `Linux ${release()}`, loadAvgStart, loadAvgEnd: loadavg(),
      kernelMonitor, damonPaused: damon !== null && damon.paused.length > 0,
    },
    settings: { workers: opts.workers, connections: opts.connections, durationS: opts.durationS, rounds: opts.rounds, autocannonRounds: acScenarios.length > 0 ? opts.autocannonRounds : 0, wrkThreads: 1 },
    notes,
    wrk: summarize(scenarios, wrk, BASE_ROUTER),
    autocannon: summarize(scenarios, ac, BASE_ROUTER),
    fixedRate: fixed.length > 0 ? { rate, tool: fixed[0].result.tool, connections: opts.connections, leadInS: OPEN_LOOP_LEAD_IN_S, results: summarize(scenarios, fixed, BASE_ROUTER) } : null,
    openLoop: openLoopFixed.length > 0 ? { rate, arrivals: 'poisson', connections: opts.connections, leadInS: OPEN_LOOP_LEAD_IN_S, results: summarize(scenarios, openLoopFixed, BASE_ROUTER) } : null,
    streams,
    micro,
    profile,
    goals: evaluateGoals(wrk, fixed, FULL_ROUTER, openLoopFixed),
    samples: { wrk, autocannon: ac, fixedRate: fixed, openLoop: openLoopFixed },
  };
  const files = writeReport(join(ROOT, 'bench/results'), opts.out, report);
  log(`wrote ${files.join(', ')}`);
}

/** One request per body on every scenario: 200, except the tiny-limit model (429). */
async function sanityCheck(scenarios: readonly Scenario[], targets: Map<TargetKey, Target>): Promise<void> {
  for (const sc of scenarios) {
    for (const body of sc.bodies) {
      const url = `${targets.get(sc.target)!.url}${scenarioPath(sc)}`;
      const want = body.includes('sf-model-tiny') ? 429 : 200;
      if (url.startsWith('https:')) {
        const status = await statusOverTls(url, { method: 'POST', headers: { 'content-type': 'application/json', ...sc.headers }, body });
        if (status !== want) throw new Error(`sanity check of ${sc.id}: expected ${want}, got ${status}`);
        continue;
      }
      const r = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...sc.headers }, body });
      const text = await r.text();
      if (r.status !== want) throw new Error(`sanity check of ${sc.id}: expected ${want}, got ${r.status}: ${text.slice(0, 300)}`);
    }
  }
}

main().catch(async (err: Error) => {
  log(`failed: ${err.stack ?? err.message}`);
  await stopAll();
  process.exit(1);
});
