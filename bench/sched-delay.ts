/**
 * How long each process waits for a CPU once woken, as a distribution, while a proxy is loaded at
 * a fixed rate: the part of the tail latency that is scheduling, not work.
 *
 *   node dist/bench/sched-delay.js [--targets id,id] [--rate R] [--record S] [--rounds N]
 *
 * Targets are bench scenario ids (router-plain, router-log, router-local, uws-http1-proxy, nginx;
 * default router-local,uws-http1-proxy,nginx), measured in alternating rounds against one mock
 * backend, the others stopped (SIGSTOP) meanwhile as in the full run. In each round wrk loads the
 * target at the rate (default 15,000 req/s asked, think time as in the bench's fixed-rate part)
 * and `perf sched record -a` records the scheduler for `--record` seconds (default 3) in the
 * middle. From `perf sched timehist`, each time a thread is put on a CPU, its "sch delay": from
 * the wake-up to running. Reported per role (the proxy's workers, its primary, the mock backend,
 * wrk) as percentiles over every such wait, with the proxy's wake-ups per request. A request
 * crosses at least four such waits (wrk → proxy → backend → proxy → wrk), so their tail adds up.
 *
 * Needs `perf` (Debian package linux-perf) with scheduler tracepoints readable (root, or
 * kernel.perf_event_paranoid ≤ -1). Recording costs CPU too: read the figures side by side, not
 * against the bench's latency figures.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runWrk } from './load-wrk.js';
import type { LoadSpec } from './load-types.js';
import { processTree } from './proc-cpu.js';
import { pauseTrees } from './pause-targets.js';
import * as scenarios from './scenarios.js';
import { LONG_TOKENS, PATH, SCENARIOS, type TargetKey } from './scenarios.js';
import * as targetModule from './targets.js';
import { startMock, stopAll, type Target } from './targets.js';
import { startTarget } from './start-target.js';
import { readCommandLine, UsageError, type CommandLine, type CommandSpec } from './cli-args.js';
import { percentile } from './order-stats.js';
import { stopChildrenOnInterrupt } from './interrupt.js';

export const COMMAND: CommandSpec = {
  usage: 'Usage: node dist/bench/sched-delay.js [--targets id,id] [--rate R] [--record S] [--rounds N]',
  values: ['--targets', '--rate', '--record', '--rounds'],
};
const TARGETS: ReadonlySet<string> = new Set(['router-plain', 'router-log', 'router-local', 'uws-http1-proxy', 'nginx']);

export interface SchedDelayOptions { readonly ids: readonly string[]; readonly rate: number; readonly recordS: number; readonly rounds: number }

/** The tool's settings from its command line; a target not in TARGETS is a usage error. */
export function schedDelayOptions(line: CommandLine): SchedDelayOptions {
  const ids = (line.value('--targets') ?? 'router-local,uws-http1-proxy,nginx').split(',');
  for (const id of ids) if (!TARGETS.has(id)) throw new UsageError(`--targets: "${id}" is none of ${[...TARGETS].join(', ')}`);
  return {
    ids,
    rate: line.positiveNumber('--rate') ?? 15000,
    recordS: line.positiveNumber('--record') ?? 3,
    rounds: line.positiveNumber('--rounds') ?? 2,
  };
}

/** One line of `perf sched timehist`: a thread put on a CPU. */
export interface Switch { readonly comm: string; readonly tid: number; readonly pid: number; readonly delayMs: number; readonly runMs: number }

const LINE = /^\s*\d+\.\d+\s+\[\d+\]\s+(.+?)\[(\d+)(?:\/(\d+))?\]\s+(\d+\.\d+)\s+(\d+\.\d+)\s+(\d+\.\d+)\s*$/;

/**
 * The switches of `perf sched timehist` output (time, cpu, task[tid/pid], wait time, sch delay,
 * run time; a main thread prints as task[pid]). Header and summary lines are skipped.
 */
export function parseTimehist(text: string): Switch[] {
  const out: Switch[] = [];
  for (const line of text.split('\n')) {
    const m = LINE.exec(line);
    if (m === null) continue;
    const tid = Number(m[2]);
    out.push({ comm: m[1], tid, pid: m[3] === undefined ? tid : Number(m[3]), delayMs: Number(m[5]), runMs: Number(m[6]) });
  }
  return out;
}

export interface DelayStats { readonly wakes: number; readonly runMs: number; readonly p50: number; readonly p90: number; readonly p99: number; readonly p999: number; readonly max: number }

/** Percentiles of the delays of some switches; null when there are none. */
export function delayStats(switches: readonly Switch[]): DelayStats | null {
  if (switches.length === 0) return null;
  const d = switches.map((s) => s.delayMs).sort((a, b) => a - b);
  return {
    wakes: d.length, runMs: switches.reduce((a, s) => a + s.runMs, 0),
    p50: percentile(d, 0.5), p90: percentile(d, 0.9), p99: percentile(d, 0.99), p999: percentile(d, 0.999), max: d[d.length - 1],
  };
}

/** What a measured process is, by pid and thread. */
export interface Roles { readonly primary: number | null; readonly workers: ReadonlySet<number>; readonly backend: number }

/** Main threads only for the servers (their helper threads, GC and thread pool, are not on the request's path); every wrk thread. */
export function roleOf(s: Switch, roles: Roles): 'workers' | 'primary' | 'backend' | 'wrk' | null {
  if (s.comm === 'wrk') return 'wrk';
  if (s.tid !== s.pid) return null;
  if (s.pid === roles.primary) return 'primary';
  if (roles.workers.has(s.pid)) return 'workers';
  if (s.pid === roles.backend) return 'backend';
  return null;
}

function recordScheduler(file: string, seconds: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const p = spawn('perf', ['sched', 'record', '-a', '-o', file, '--', 'sleep', String(seconds)], { stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    p.stderr.on('data', (d: Buffer) => { err += d.toString(); });
    p.on('error', reject);
    p.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`perf sched record failed (${code}): ${err.trim()}`))));
  });
}

const ms = (x: number | undefined): string => (x === undefined ? '–' : x.toFixed(3));

async function main(): Promise<void> {
  stopChildrenOnInterrupt('sched-delay');
  const { ids, rate, recordS, rounds } = readCommandLine(COMMAND, schedDelayOptions);
  if (spawnSync('perf', ['--version']).status !== 0) throw new Error('perf is not installed (Debian package linux-perf)');

  const dir = mkdtempSync(join(tmpdir(), 'ir-sched-delay-'));
  const mock = await startMock('mock');
  const mockLong = await startMock('mock-long', ['--output-tokens', String(LONG_TOKENS)]);
  const targets = new Map<string, Target>();
  try {
    for (const id of ids) {
      targets.set(id, await startTarget({ targets: targetModule, scenarios }, id as TargetKey, { name: id, workers: 2, mock, mockLong, redis: null }));
    }
    const scenario = (id: string) => SCENARIOS.find((s) => s.target === id)!;
    const spec = (id: string, d: number): LoadSpec => ({ url: `${targets.get(id)!.url}${PATH}`, bodies: scenario(id).bodies, connections: 64, durationS: d, rate });
    const rows: string[] = [];
    for (let r = 0; r < rounds; r++) {
      for (const id of r % 2 === 0 ? ids : [...ids].reverse()) {
        const target = targets.get(id)!;
        const others = [...targets].filter(([k]) => k !== id).map(([, t]) => t.proc.pid);
        const resume = pauseTrees(others);
        try {
          await runWrk('wrk', spec(id, 2)); // warm-up, and the connections settle
          const tree = processTree(target.proc.pid);
          const roles: Roles = { primary: id.startsWith('router-') ? target.proc.pid : null, workers: new Set(tree.slice(1)), backend: mock.proc.pid };
          const file = join(dir, `${id}-${r}.data`);
          const load = runWrk('wrk', spec(id, recordS + 2));
          await new Promise((res) => setTimeout(res, 1000));
          await recordScheduler(file, recordS);
          const result = await load;
          const text = spawnSync('perf', ['sched', 'timehist', '-i', file], { encoding: 'utf8', maxBuffer: 1 << 30 }).stdout;
          const byRole = new Map<string, Switch[]>([['workers', []], ['primary', []], ['backend', []], ['wrk', []]]);
          for (const s of parseTimehist(text)) {
            const role = roleOf(s, roles);
            if (role !== null) byRole.get(role)!.push(s);
          }
          const requests = result.rps * recordS;
          const stats = (role: string): DelayStats | null => delayStats(byRole.get(role)!);
          const all = delayStats([...byRole.values()].flat());
          const w = stats('workers');
          const cell = (s: DelayStats | null): string => (s === null ? '–' : `${ms(s.p90)} / ${ms(s.p99)} / ${ms(s.p999)}`);
          rows.push(`| ${r + 1} | ${id} | ${Math.round(result.rps)} | ${result.latencyMs.p99.toFixed(2)} | ${w === null ? '–' : (w.wakes / requests).toFixed(2)} | `
            + `${w === null ? '–' : (1000 * w.runMs / requests).toFixed(1)} | ${cell(w)} | ${cell(stats('primary'))} | ${cell(stats('backend'))} | ${cell(stats('wrk'))} | ${cell(all)} |`);
          process.stderr.write(`round ${r + 1} ${id}: ${Math.round(result.rps)} req/s, p99 ${result.latencyMs.p99.toFixed(2)} ms\n`);
          rmSync(file, { force: true });
        } finally {
          resume();
        }
      }
    }
    process.stdout.write(`Wait for a CPU after each wake-up, ms (p90 / p99 / p99.9), ${rate} req/s asked, ${recordS} s recorded per round\n\n`
      + '| round | target | req/s | p99 ms (under perf) | worker wake-ups per request | worker main-thread CPU µs per request | workers | primary | mock backend | wrk | all four |\n'
      + '|---|---|---|---|---|---|---|---|---|---|---|\n' + rows.join('\n') + '\n');
  } finally {
    await stopAll();
    rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv[1]?.endsWith('sched-delay.js')) await main();
