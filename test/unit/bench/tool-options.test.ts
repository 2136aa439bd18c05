/**
 * The command lines of the bench tools whose reading is a function of its own: defaults kept,
 * values and positionals read, wrong values refused as usage errors (before anything starts).
 */
import { describe, expect, it } from 'vitest';
import { HELP, parseCommandLine, UsageError, type CommandLine, type CommandSpec } from '../../../bench/cli-args.js';
import * as callInstructions from '../../../bench/call-instructions.js';
import * as compareTrees from '../../../bench/compare-trees.js';
import * as instructions from '../../../bench/instructions.js';
import * as latencySweep from '../../../bench/latency-sweep.js';
import * as pacedStreams from '../../../bench/paced-streams.js';
import { RUN_COMMAND, runOptions } from '../../../bench/run-options.js';
import * as scriptMicro from '../../../bench/redis-script-micro.js';
import * as schedDelay from '../../../bench/sched-delay.js';
import * as workerProfile from '../../../bench/worker-profile.js';
import * as idleReturn from '../../../bench/idle-return.js';
import * as turnInstructions from '../../../bench/turn-instructions.js';
import * as redisCallInstructions from '../../../bench/redis-call-instructions.js';

function read<T>(spec: CommandSpec, options: (line: CommandLine) => T, argv: string[]): T {
  const line = parseCommandLine(argv, spec);
  if (line === HELP) throw new Error('parsed as --help');
  return options(line);
}

describe('bench tool options', () => {
  it('worker-profile: defaults, --rate only when given, a scenario must be a profiled router', () => {
    const tool = (argv: string[]) => read(workerProfile.COMMAND, workerProfile.workerProfileOptions, argv);
    const fields = (x: ReturnType<typeof tool>) => ({ id: x.scenario.id, durationS: x.durationS, rate: x.rate, top: x.top, workers: x.workers, connections: x.connections, tps: x.tps });
    expect(fields(tool([]))).toEqual({ id: 'router-local', durationS: 8, rate: undefined, top: 30, workers: 1, connections: 64, tps: undefined });
    const o = tool(['--scenario', 'router-global', '--rate', '8000', '--top', '10', '--workers', '2', '--duration', '3', '--connections', '256', '--tps', '50']);
    expect(fields(o)).toEqual({ id: 'router-global', durationS: 3, rate: 8000, top: 10, workers: 2, connections: 256, tps: 50 });
    expect(() => tool(['--tps', '0'])).toThrow(UsageError);
    expect(() => tool(['--scenario', 'nginx'])).toThrow(UsageError);
    expect(() => tool(['--scenario', 'no-such'])).toThrow(UsageError);
    expect(() => tool(['--top', '0'])).toThrow(UsageError);
    expect(() => tool(['router-local'])).toThrow(UsageError);
    expect(tool([]).callers).toEqual([]);
    expect(tool(['--callers', 'writeBuffer, collect']).callers).toEqual(['writeBuffer', 'collect']);
    expect(() => tool(['--callers', 'writeBuffer,,collect'])).toThrow('--callers: "writeBuffer,,collect" has an empty name');
  });

  it('idle-return: the full router by default; quiet spells as a list of seconds; --idle-timeout only for a router', () => {
    const tool = (argv: string[]) => read(idleReturn.COMMAND, idleReturn.idleReturnOptions, argv);
    expect(tool([])).toEqual({ target: 'router-local', rate: 6000, quietS: [3, 8, 3, 8], burstS: 2, idleTimeout: undefined, slowMs: 10 });
    expect(tool(['--target', 'router-log', '--quiet', '0,5.5', '--idle-timeout', '30s', '--rate', '4000', '--burst', '1', '--slow-ms', '5']))
      .toEqual({ target: 'router-log', rate: 4000, quietS: [0, 5.5], burstS: 1, idleTimeout: '30s', slowMs: 5 });
    expect(() => tool(['--target', 'nginx'])).toThrow('--target: "nginx" is none of');
    expect(() => tool(['--quiet', '3,,8'])).toThrow('--quiet: "3,,8" is not a list of seconds');
    expect(() => tool(['--quiet', '3,-1'])).toThrow(UsageError);
    expect(() => tool(['--target', 'uws-http1-proxy', '--idle-timeout', '30s'])).toThrow('--idle-timeout: the bare proxy has no such setting');
  });

  it('sched-delay: three targets by default, each named one checked', () => {
    const tool = (argv: string[]) => read(schedDelay.COMMAND, schedDelay.schedDelayOptions, argv);
    expect(tool([])).toEqual({ ids: ['router-local', 'uws-http1-proxy', 'nginx'], rate: 15000, recordS: 3, rounds: 2 });
    expect(tool(['--targets', 'router-log,nginx', '--record', '2', '--rounds', '4', '--rate', '9000'])).toEqual({ ids: ['router-log', 'nginx'], rate: 9000, recordS: 2, rounds: 4 });
    expect(() => tool(['--targets', 'router-log,ngnix'])).toThrow('--targets: "ngnix" is none of');
  });

  it('compare-trees: two sides; --workers sets both and a later --workers-a or -b one; Node flags split on spaces; an environment per side', () => {
    const tool = (argv: string[]) => read(compareTrees.COMMAND, compareTrees.compareOptions, argv);
    expect(tool(['../before', '.:router-log'])).toEqual({ positional: ['../before', '.:router-log'], rounds: 4, durationS: 4, rate: undefined, workers: [2, 2], nodeArgs: [[], []], node: [undefined, undefined], floorArgs: [[], []], load: 'wrk', longTokens: undefined, env: [{}, {}] });
    const o = tool(['a', '--workers', '3', '--workers-b', '1', 'b', '--node-args-b', '--single-threaded-gc  --max-semi-space-size=64', '--rate', '5000', '--rounds', '6', '--duration', '2']);
    expect(o).toEqual({ positional: ['a', 'b'], rounds: 6, durationS: 2, rate: 5000, workers: [3, 1], nodeArgs: [[], ['--single-threaded-gc', '--max-semi-space-size=64']], node: [undefined, undefined], floorArgs: [[], []], load: 'wrk', longTokens: undefined, env: [{}, {}] });
    expect(tool(['.', '.', '--env-b', 'ROUTER_FAIRNESS_MAX_CONCURRENT=16  ROUTER_FAIRNESS_WINDOW=1m']).env).toEqual([{}, { ROUTER_FAIRNESS_MAX_CONCURRENT: '16', ROUTER_FAIRNESS_WINDOW: '1m' }]);
    expect(() => tool(['.', '.', '--env-a', 'lower=1'])).toThrow(/NAME=VALUE/);
    expect(() => tool(['.', '.', '--env-a', 'NOVALUE'])).toThrow(UsageError);
    expect(tool(['.', '.', '--node-b', '/opt/node24/bin/node']).node).toEqual([undefined, '/opt/node24/bin/node']);
    expect(tool(['.:router-local', '.:uws-http1-proxy', '--floor-args-b', '--burn-us 8 --garbage-objects 100']).floorArgs).toEqual([[], ['--burn-us', '8', '--garbage-objects', '100']]);
    expect(tool(['a', 'b', '--workers-a', '1', '--workers', '4']).workers).toEqual([4, 4]);
    expect(tool(['a', 'b', '--long-tokens', '1024']).longTokens).toBe(1024);
    expect(() => tool(['a', 'b', '--long-tokens', '0'])).toThrow(UsageError);
    expect(() => tool(['a', 'b', '--long-tokens', '0.5'])).toThrow(/whole number/);
    expect(() => tool(['a'])).toThrow(UsageError);
    expect(() => tool(['a', 'b', 'c'])).toThrow(UsageError);
    expect(() => tool(['a', 'b', '--workers', 'two'])).toThrow(UsageError);
    expect(tool(['a', 'b', '--rate', '9000', '--load', 'uniform']).load).toBe('uniform');
    expect(() => tool(['a', 'b', '--load', 'poisson'])).toThrow(/needs --rate/);
    expect(() => tool(['a', 'b', '--rate', '9000', '--load', 'wrk2'])).toThrow(UsageError);
  });

  it('latency-sweep: defaults; targets it can start; fractions of the peak sorted, each in (0, 1]; arrivals poisson or uniform', () => {
    const tool = (argv: string[]) => read(latencySweep.COMMAND, latencySweep.sweepOptions, argv);
    const d = tool([]);
    expect({ ...d, targets: d.targets.map((t) => t.id) }).toEqual({
      targets: ['router-local', 'uws-http1-proxy', 'nginx'], fractions: [0.1, 0.2, 0.3, 0.4, 0.5], rounds: 3, durationS: 4, workers: 2, arrivals: 'poisson', limitMs: 2, minRequests: 20_000, leadInS: 1, pauseDamon: false, loadCpus: null,
    });
    expect(latencySweep.runSeconds(d, 2000)).toBe(10);
    expect(latencySweep.runSeconds(d, 3000)).toBe(6.7);
    expect(latencySweep.runSeconds(d, 12_000)).toBe(4);
    const o = tool(['--targets', 'router-log,nginx', '--fractions', '0.6,0.25', '--arrivals', 'uniform', '--limit-ms', '1.5', '--rounds', '2']);
    expect({ targets: o.targets.map((t) => t.id), fractions: o.fractions, arrivals: o.arrivals, limitMs: o.limitMs, rounds: o.rounds })
      .toEqual({ targets: ['router-log', 'nginx'], fractions: [0.25, 0.6], arrivals: 'uniform', limitMs: 1.5, rounds: 2 });
    expect(() => tool(['--targets', 'router-global'])).toThrow(UsageError);
    // The error lists the scenario ids to pass, not the names of the targets behind them.
    expect(() => tool(['--targets', 'router-plain'])).toThrow(/"router-plain" is not one of router, router-log, router-local, .*uws-http1-proxy/);
    expect(() => tool(['--targets', 'direct'])).toThrow(UsageError);
    expect(() => tool(['--fractions', '0.5,1.5'])).toThrow(UsageError);
    expect(() => tool(['--fractions', '0'])).toThrow(UsageError);
    expect(() => tool(['--arrivals', 'bursty'])).toThrow(UsageError);
    expect(() => tool(['router-local'])).toThrow(UsageError);
    expect({ ...tool(['--lead-in', '0', '--pause-damon', '--load-cpus', '1']) }).toMatchObject({ leadInS: 0, pauseDamon: true, loadCpus: 1 });
    expect(() => tool(['--lead-in', '-1'])).toThrow(/--lead-in: expected seconds from 0 to 60/);
  });

  it('paced-streams: defaults; a rate that keeps a long stream within wrk\'s timeout; CPU per stream from the CPU a second and a stream\'s time', () => {
    const tool = (argv: string[]) => read(pacedStreams.COMMAND, pacedStreams.pacedOptions, argv);
    expect(tool([])).toEqual({ streams: 256, tps: 50, rounds: 3, durationS: 8, workers: 2 });
    expect(tool(['--streams', '64', '--tps', '100', '--rounds', '2', '--duration', '5', '--workers', '1'])).toEqual({ streams: 64, tps: 100, rounds: 2, durationS: 5, workers: 1 });
    expect(() => tool(['--tps', '10'])).toThrow(/--tps: 10 tokens a second makes a 64-token stream last over 4 s; at least 16/);
    expect(() => tool(['--streams', '0'])).toThrow(UsageError);
    expect(() => tool(['--duration', '2.5'])).toThrow(/--duration: 2.5 s leaves under a second to read/);
    expect(tool(['--duration', '3']).durationS).toBe(3);
    // 100 connections, each streaming all the time, 0.5 s a stream: 200 streams a second; 400 ms of CPU a second is 2 ms a stream.
    expect(pacedStreams.cpuPerStreamUs({ cpuMs: 800, seconds: 2, meanMs: 500, connections: 100 })).toBeCloseTo(2000, 6);
    // The short streams cost 1,000 µs, the long 1,960: 960 µs for 48 more chunks is 20 µs a chunk.
    const f = pacedStreams.pacedFigures({
      short: { cpuMs: 1000, seconds: 2, meanMs: 200, connections: 100 },
      long: { cpuMs: 980, seconds: 2, meanMs: 400, connections: 100 },
    });
    expect(f.shortUs).toBeCloseTo(1000, 6);
    expect(f.longUs).toBeCloseTo(1960, 6);
    expect(f.chunkUs).toBeCloseTo(20, 6);
    expect(f.cpuMsPerS).toBeCloseTo(490, 6);
  });

  it('latency-sweep: the highest rate under the limit counts only while every lower rate is under it too', () => {
    const cells = (added: number[]) => added.map((a) => ({ addedP99Ms: a, cpuUs: 50 }));
    expect(latencySweep.highestRateUnder([1000, 2000, 3000], cells([0.5, 1.9, 2.0]), 2)).toBe(2000);
    expect(latencySweep.highestRateUnder([1000, 2000, 3000], cells([0.5, 2.5, 1.0]), 2)).toBe(1000);
    expect(latencySweep.highestRateUnder([1000, 2000], cells([2.1, 0.5]), 2)).toBeNull();
    expect(latencySweep.highestRateUnder([1000, 2000], cells([Number.NaN, 0.5]), 2)).toBeNull();
    expect(latencySweep.highestRateUnder([1000, 2000], cells([0.1, 0.2]), 2)).toBe(2000);
  });

  it('instructions: one side or more, each a scenario this tool runs; --v8-threads a flag; --functions 0 by default', () => {
    const tool = (argv: string[]) => read(instructions.COMMAND, instructions.instructionsOptions, argv);
    const o = tool(['../before', '.:uws-http1-proxy', '.:router-global', '--v8-threads', '--functions', '40']);
    expect(o.sides.map((s) => [s.tree, s.scenario.id])).toEqual([['../before', 'router-local'], ['.', 'uws-http1-proxy'], ['.', 'router-global']]);
    expect({ ...o, sides: undefined }).toEqual({ sides: undefined, rounds: 7, durationS: 15, warmupS: 120, workers: 1, v8Threads: true, functions: 40 });
    expect(tool(['.']).v8Threads).toBe(false);
    expect(tool(['.']).functions).toBe(0);
    expect(() => tool([])).toThrow(UsageError);
    expect(() => tool(['.:router-trace'])).toThrow(UsageError);
    expect(() => tool(['.:nginx'])).toThrow(UsageError);
  });

  it('call-instructions: this tree and every case by default', () => {
    const tool = (argv: string[]) => read(callInstructions.COMMAND, callInstructions.callInstructionsOptions, argv);
    expect(tool([])).toEqual({ tree: '.', calls: 200_000, only: null });
    expect(tool(['--only', 'newRequestId,count the prompt', '../before', '--calls', '1000'])).toEqual({ tree: '../before', calls: 1000, only: new Set(['newRequestId', 'count the prompt']) });
    expect(() => tool(['a', 'b'])).toThrow(UsageError);
  });

  it('turn-instructions: this tree, 100,000 turns and 1 to 3 tasks by default; tasks are whole numbers of 1 or more', () => {
    const tool = (argv: string[]) => read(turnInstructions.COMMAND, turnInstructions.turnInstructionsOptions, argv);
    expect(tool([])).toEqual({ tree: '.', turns: 100_000, tasks: [1, 2, 3] });
    expect(tool(['../before', '--tasks', '2,4', '--turns', '5000'])).toEqual({ tree: '../before', turns: 5000, tasks: [2, 4] });
    expect(() => tool(['--tasks', '0'])).toThrow(UsageError);
    expect(() => tool(['--tasks', '1.5'])).toThrow(UsageError);
    expect(() => tool(['a', 'b'])).toThrow(UsageError);
  });

  it('redis-call-instructions: this tree, 5,000 turns, 1 and 10 admissions a turn, a route\'s limit and no functions by default; admissions from 1 to a batch\'s 500, 1 or 2 limits', () => {
    const tool = (argv: string[]) => read(redisCallInstructions.COMMAND, redisCallInstructions.redisCallInstructionsOptions, argv);
    expect(tool([])).toEqual({ tree: '.', turns: 5000, admissions: [1, 10], limits: 1, functions: 0 });
    expect(tool(['../before', '--admissions', '1,20,50', '--turns', '800', '--limits', '2', '--functions', '25'])).toEqual({ tree: '../before', turns: 800, admissions: [1, 20, 50], limits: 2, functions: 25 });
    expect(() => tool(['--functions', '0'])).toThrow(UsageError);
    for (const wrong of ['0', '501', '2.5', 'ten']) expect(() => tool(['--admissions', wrong])).toThrow(UsageError);
    for (const wrong of ['0', '3', 'two']) expect(() => tool(['--limits', wrong])).toThrow(UsageError);
    expect(() => tool(['a', 'b'])).toThrow(UsageError);
  });

  it('redis-call-instructions: a call\'s own cost and an admission\'s, from two batch sizes', () => {
    // 1 admission: 118,000 a call; 10: 203,000, so 9,444 an admission and 108,556 a call.
    expect(redisCallInstructions.splitCallCost(1, 118_000, 10, 203_000)).toEqual({ call: 108_556, admission: 9_444 });
    expect(redisCallInstructions.splitCallCost(2, 30_000, 4, 40_000)).toEqual({ call: 20_000, admission: 5_000 });
  });

  it('redis-script-micro: this tree by default, at most two', () => {
    const tool = (argv: string[]) => read(scriptMicro.COMMAND, scriptMicro.scriptMicroOptions, argv);
    expect(tool([])).toEqual({ trees: ['.'], calls: 20_000, rounds: 3 });
    expect(tool(['a', '--rounds', '5', 'b', '--calls', '100'])).toEqual({ trees: ['a', 'b'], calls: 100, rounds: 5 });
    expect(() => tool(['a', 'b', 'c'])).toThrow(UsageError);
    expect(() => tool(['--calls', '-1'])).toThrow(UsageError);
  });

  it('npm run bench: --quick sets its own defaults, later options override them; integers in range only', () => {
    const tool = (argv: string[]) => read(RUN_COMMAND, runOptions, argv);
    const full = tool([]);
    expect({ quick: full.quick, rounds: full.rounds, durationS: full.durationS, micro: full.micro, profile: full.profile, out: full.out }).toEqual({ quick: false, rounds: 5, durationS: 6, micro: true, profile: true, out: 'latest' });
    const quick = tool(['--rounds', '3', '--quick', '--only', 'direct,router', '--no-profile']);
    expect({ quick: quick.quick, rounds: quick.rounds, durationS: quick.durationS, micro: quick.micro, only: quick.only, out: quick.out }).toEqual({ quick: true, rounds: 3, durationS: 2, micro: false, only: ['direct', 'router'], out: 'quick' });
    expect(tool(['--no-micro', '--workers', '4', '--connections', '128', '--out', 'tracing'])).toMatchObject({ micro: false, profile: true, workers: 4, connections: 128, out: 'tracing', pauseDamon: false });
    expect(tool(['--pause-damon']).pauseDamon).toBe(true);
    expect(() => tool(['--workers', '0'])).toThrow('--workers: expected an integer from 1 to 64, got "0"');
    expect(() => tool(['--rounds', '2.5'])).toThrow(UsageError);
    expect(() => tool(['--out', '../x'])).toThrow(UsageError);
    expect(() => tool(['--quik'])).toThrow('unknown option "--quik"');
    expect(() => tool(['--only'])).toThrow('--only: expected a value');
    // Some scenarios: a partial run, whose results do not replace the full run's (latest.*).
    expect(tool(['--only', ' direct, nginx ']).only).toEqual(['direct', 'nginx']);
    expect(tool(['--only', 'direct,nginx']).out).toBe('partial');
    expect(tool(['--only', 'direct,nginx', '--out', 'tls-cost']).out).toBe('tls-cost');
    expect(() => tool(['--only', ','])).toThrow('--only: expected scenario ids separated by commas');
  });
});
