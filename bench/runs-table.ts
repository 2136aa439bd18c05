/**
 * Every full run kept under bench/results/, one row each, oldest first: the figures the goals are
 * read from, so that a run is read beside the runs of other hours and hosts, not alone.
 *
 *   node dist/bench/runs-table.js [DIR] [--read-across [--since "YYYY-MM-DD HH:MM"]]
 *                                        (DIR: bench/results by default)
 *
 * `--read-across` prints, instead of the rows, in how many of the runs each goal was met, by host
 * type (read-across.ts).
 *
 * Reads each `<name>.json` that `npm run bench` wrote (full runs with nginx measured; quick runs
 * and partial runs are left out). `latest.json` is a copy of one named run: it is shown once,
 * under its own name when that file is there too, and marked as the latest.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { BenchReport, Goal } from './report.js';
import { readCommandLine, UsageError, type CommandSpec } from './cli-args.js';
import { cpuRatioToNginx } from './goals.js';
import { readAcross, READ_ACROSS_SINCE, type RunCells, type VerdictKey } from './read-across.js';

const COMMAND: CommandSpec = {
  usage: 'Usage: node dist/bench/runs-table.js [DIR] [--read-across [--since "YYYY-MM-DD HH:MM"]]   (DIR: bench/results by default)',
  values: ['--since'],
  flags: ['--read-across'],
  positionals: [0, 1],
};

export interface KeptRun { readonly file: string; readonly report: BenchReport }

const LATEST = 'latest.json';

/** Goals by the start of their name (names are fixed in goals.ts). */
const GOAL = {
  full: 'full router (log + local limit) vs nginx',
  floor: 'bare-proxy floor',
  local: 'local limiter cost',
  log: 'access log cost',
  leases: 'Redis limiter cost (scenario 5 vs 3; leases on',
  noLeases: 'Redis limiter cost with leases off',
  p99: 'p99 added latency',
  beyond: 'the same, beyond what nginx adds',
  openP99: 'p99 added at half load with open-loop',
  openBeyond: 'the same with open-loop arrivals',
  cpu: 'full router (log + local limit) server CPU per request',
  cpuRatio: "full router's CPU per request over nginx's",
} as const;

/** The figure each goal of the bench is shown as in a row (read-across.ts's verdict keys). */
const VERDICT_OF: readonly (readonly [VerdictKey, string])[] = [
  ['full:first', GOAL.full], ['floor:first', GOAL.floor], ['cpu:first', GOAL.cpu], ['cpuRatio:first', GOAL.cpuRatio],
  ['local:first', GOAL.local], ['log:first', GOAL.log], ['global:first', GOAL.leases], ['global:second', GOAL.noLeases],
  ['p99:first', GOAL.p99], ['p99:paren', GOAL.beyond], ['openLoop:first', GOAL.openP99], ['openLoop:paren', GOAL.openBeyond],
];

/** The bench's verdicts on the goals it judged in a run (a goal not run, or not yet among the bench's, has none). */
export function verdictsOf(goals: readonly Goal[]): Partial<Record<VerdictKey, boolean>> {
  const out: Partial<Record<VerdictKey, boolean>> = {};
  for (const [key, prefix] of VERDICT_OF) {
    const met = goals.find((x) => x.name.startsWith(prefix))?.met;
    if (met === true || met === false) out[key] = met;
  }
  return out;
}

/** A goal's median as measured ("0.74 (0.72–0.79)×" → "0.74×"), or – when it was not run. */
function median(goals: readonly Goal[], prefix: string): string {
  const g = goals.find((x) => x.name.startsWith(prefix));
  if (g === undefined || g.measured === 'not run') return '–';
  return g.measured.replace(/ \([^)]*\)/, '');
}

/** The open-loop p99 added and the part beyond nginx, or – for a run made before open-loop (or without a C compiler). */
function openLoopCell(goals: readonly Goal[]): string {
  const added = median(goals, GOAL.openP99);
  return added === '–' ? '–' : `${added} (${median(goals, GOAL.openBeyond)})`;
}

/** The CPU model as the docs name hosts: "Intel(R) Xeon(R) Processor" → "Intel Xeon". */
export function hostName(cpuModel: string): string {
  return cpuModel.replace(/\((R|TM)\)/g, '').replace(/\s+(Processor|CPU)\b.*$/, '').replace(/\s+/g, ' ').trim();
}

/** The host's name, with the Node.js major version when the run was not on Node 20 (the runtime of every run before the first on Node 24). */
export function hostCell(m: BenchReport['machine']): string {
  const major = /^v(\d+)\./.exec(m.node ?? '')?.[1];
  return major === undefined || major === '20' ? hostName(m.cpuModel) : `${hostName(m.cpuModel)}, Node ${major}`;
}

function serverCpu(r: BenchReport, id: string): string {
  const s = r.wrk.find((x) => x.id === id)?.serverCpuUsPerReq ?? null;
  return s === null ? '–' : s.median.toFixed(1);
}

/** The full router's CPU per request over nginx's, the median of the rounds' ratios (– where the run kept no samples). */
function cpuRatioCell(r: BenchReport): string {
  const wrk = r.samples?.wrk;
  const ratio = wrk === undefined ? null : cpuRatioToNginx(wrk, 'router-local');
  return ratio === null ? '–' : `${ratio.median.toFixed(2)}×`;
}

/** The full router's resident MB after its closed-loop runs (primary and workers), or – for runs before it was read. */
function residentCell(r: BenchReport): string {
  const m = r.wrk.find((x) => x.id === 'router-local')?.residentMb?.rss ?? null;
  return m === null ? '–' : m.median.toFixed(0);
}

/** The kernel's memory monitor in a run: on, off (as found, or paused by the run), none, or – for runs before it was read. */
export function monitorCell(m: BenchReport['machine']): string {
  if (m.kernelMonitor === undefined) return '–';
  if (m.damonPaused === true) return 'paused';
  if (/ on\b/.test(m.kernelMonitor) || /kdamond thread\(s\) on/.test(m.kernelMonitor)) return 'on';
  if (/ off\b/.test(m.kernelMonitor)) return 'off';
  return m.kernelMonitor === 'no kdamond thread' ? 'none' : 'unknown';
}

/** Whether a report is a full run with nginx measured (what the table compares against). */
export function isFullRun(r: BenchReport): boolean {
  return r.mode === 'full' && r.wrk.some((x) => x.id === 'nginx') && r.goals.length > 0;
}

/** A row of the table: the figure cells read across, and the run's name, memory monitor, nginx's CPU and resident memory. */
interface RunRow extends RunCells {
  readonly name: string;
  readonly monitor: string;
  readonly nginxCpu: string;
  readonly resident: string;
}

/** The full runs, oldest first, one row each; `latest.json` folded into the run it copies. */
export function runRows(runs: readonly KeptRun[]): RunRow[] {
  const latest = runs.find((r) => r.file === LATEST);
  const named = runs.filter((r) => r.file !== LATEST && isFullRun(r.report));
  const latestNamed = latest === undefined ? undefined : named.find((r) => r.report.startedAt === latest.report.startedAt);
  const shown = latest !== undefined && latestNamed === undefined && isFullRun(latest.report) ? [...named, latest] : named;
  shown.sort((a, b) => a.report.startedAt.localeCompare(b.report.startedAt));
  return shown.map(({ file, report: r }) => {
    const isLatest = latest !== undefined && r.startedAt === latest.report.startedAt;
    const chunk = r.streams?.routerCpuUsPerChunk ?? null;
    return {
      at: r.startedAt.slice(0, 16).replace('T', ' '),
      name: `\`${file.replace(/\.json$/, '.md')}\`${isLatest && file !== LATEST ? ' (latest)' : ''}`,
      host: hostCell(r.machine),
      monitor: monitorCell(r.machine),
      nginxCpu: serverCpu(r, 'nginx'),
      full: median(r.goals, GOAL.full),
      cpu: serverCpu(r, 'router-local'),
      cpuRatio: cpuRatioCell(r),
      resident: residentCell(r),
      floor: median(r.goals, GOAL.floor),
      local: median(r.goals, GOAL.local),
      log: median(r.goals, GOAL.log),
      global: `${median(r.goals, GOAL.leases)} / ${median(r.goals, GOAL.noLeases)}`,
      p99: `${median(r.goals, GOAL.p99)} (${median(r.goals, GOAL.beyond)})`,
      openLoop: openLoopCell(r.goals),
      sseChunk: chunk === null ? '–' : chunk.median.toFixed(2),
      verdicts: verdictsOf(r.goals),
    };
  });
}

/** The runs' table in markdown (runRows). */
export function runsTable(runs: readonly KeptRun[]): string {
  const head = '| run (UTC) | results | host | kernel memory monitor | nginx CPU µs/req | full router × nginx | full router CPU µs/req | full router CPU × nginx | full router resident MB | floor × nginx | local limit | access log | global, leases on / off | p99 added at half load (beyond nginx) | the same, open-loop arrivals | CPU per SSE chunk µs |\n'
    + '|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n';
  return head + runRows(runs).map((w) => `| ${w.at} | ${w.name} | ${w.host} | ${w.monitor} | ${w.nginxCpu} | ${w.full} | ${w.cpu} | ${w.cpuRatio} | ${w.resident} | `
    + `${w.floor} | ${w.local} | ${w.log} | ${w.global} | ${w.p99} | ${w.openLoop} | ${w.sseChunk} |`).join('\n') + '\n';
}

export function readRuns(dir: string): KeptRun[] {
  return readdirSync(dir).filter((f) => f.endsWith('.json')).map((file) => ({
    file,
    report: JSON.parse(readFileSync(join(dir, file), 'utf8')) as BenchReport,
  }));
}

if (process.argv[1]?.endsWith('runs-table.js')) {
  const o = readCommandLine(COMMAND, (line) => {
    const since = line.value('--since');
    if (since !== undefined && !line.has('--read-across')) throw new UsageError('--since: only with --read-across');
    if (since !== undefined && !/^\d{4}-\d\d-\d\d( \d\d:\d\d)?$/.test(since)) throw new UsageError(`--since: expected "YYYY-MM-DD HH:MM", got "${since}"`);
    return { dir: line.positionals[0] ?? 'bench/results', readAcross: line.has('--read-across'), since: since ?? READ_ACROSS_SINCE };
  });
  const runs = readRuns(o.dir);
  process.stdout.write(o.readAcross ? readAcross(runRows(runs), o.since) : runsTable(runs));
}
