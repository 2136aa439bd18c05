/** The bench report: its shape, and its JSON, markdown and SVG renderings. */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ProfileSummary } from './cpu-profile.js';
import type { ProbeResult } from './load-stream-probe.js';
import { cpuUsPerRequest, roundDiff, type Sample, type ScenarioSummary, type Spread } from './summary.js';

export interface Goal { readonly name: string; readonly target: string; readonly measured: string; readonly met: boolean | null }

export interface MicroOutput { readonly name: string; readonly ok: boolean; readonly output: string }

export interface BenchReport {
  /** full: every scenario, as `npm run bench` runs them; partial: --only some of them. */
  readonly mode: 'quick' | 'full' | 'partial';
  readonly startedAt: string;
  readonly finishedAt: string;
  readonly command: string;
  readonly machine: { readonly nproc: number; readonly cpuModel: string; readonly memoryGiB: number; readonly node: string; readonly kernel: string; readonly loadAvgStart: number[]; readonly loadAvgEnd: number[];
    /** The kernel's DAMON memory monitors as the run found them, and whether the run turned them off (absent in reports before). */
    readonly kernelMonitor?: string; readonly damonPaused?: boolean };
  readonly settings: { readonly workers: number; readonly connections: number; readonly durationS: number; readonly rounds: number; readonly autocannonRounds: number; readonly wrkThreads: number };
  readonly notes: readonly string[];
  readonly wrk: readonly ScenarioSummary[];
  readonly autocannon: readonly ScenarioSummary[];
  /** `leadInS`: seconds of the same load before each run, not read (runs before 2026-12-07 had none). */
  readonly fixedRate: { readonly rate: number; readonly tool: string; readonly connections: number; readonly leadInS?: number; readonly results: readonly ScenarioSummary[] } | null;
  /** The same rate from bench/load-open-loop.ts (absent in reports written before it, null where no C compiler was found). */
  readonly openLoop?: { readonly rate: number; readonly arrivals: string; readonly connections: number; readonly leadInS?: number; readonly results: readonly ScenarioSummary[] } | null;
  readonly streams: { readonly probe: readonly ProbeResult[]; readonly routerCpuUsPerChunk: Spread | null; readonly mockCpuUsPerChunk: Spread | null } | null;
  readonly micro: readonly MicroOutput[];
  readonly profile: ProfileSummary | null;
  readonly goals: readonly Goal[];
  readonly samples: { readonly wrk: readonly Sample[]; readonly autocannon: readonly Sample[]; readonly fixedRate: readonly Sample[]; readonly openLoop?: readonly Sample[] };
}

const int = (x: number): string => Math.round(x).toLocaleString('en-US');
const f2 = (x: number): string => x.toFixed(2);
const ms = (s: Spread | null): string => (s === null ? '–' : f2(s.median));
const range = (s: Spread | null, fmt: (x: number) => string): string =>
  s === null ? '–' : s.n > 1 ? `${fmt(s.median)} (${fmt(s.min)}–${fmt(s.max)})` : fmt(s.median);
const signed = (s: Spread | null): string => (s === null ? '–' : `${s.median >= 0 ? '+' : ''}${f2(s.median)}`);

export function scenarioTable(rows: readonly ScenarioSummary[]): string {
  // Errors: connections that failed, reads and writes that failed, and requests past the load
  // generator's timeout (5 s), which its latency percentiles leave out: a run with any is suspect.
  const head = '| # | scenario | req/s median (min–max) | p50 ms | p99 ms | p99.9 ms | added p50 / p99 ms vs direct | × direct | × nginx | × scenario 2 | server CPU µs/req | load-gen CPU µs/req | non-2xx | errors (timeouts included) |\n'
    + '|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n';
  return head + rows.map((r) => `| ${r.n} | ${r.label} | ${range(r.rps, int)} | ${ms(r.latencyMs.p50)} | ${ms(r.latencyMs.p99)} | ${ms(r.latencyMs.p999)} | `
    + `${signed(r.addedMs.p50)} / ${signed(r.addedMs.p99)} | ${range(r.ratio.direct, f2)} | ${range(r.ratio.nginx, f2)} | ${range(r.ratio.base, f2)} | `
    + `${ms(r.serverCpuUsPerReq)} | ${ms(r.loadCpuUsPerReq)} | ${(100 * r.non2xxFraction).toFixed(1)}% | ${r.errors === 0 ? '0' : `**${int(r.errors)}**`} |`).join('\n');
}

function goalsTable(goals: readonly Goal[]): string {
  return '| goal | target | measured (median, min–max over rounds) | met |\n|---|---|---|---|\n'
    + goals.map((g) => `| ${g.name} | ${g.target} | ${g.measured} | ${g.met === null ? 'not measured' : g.met ? 'yes' : '**no**'} |`).join('\n');
}


/**
 * What the global limit's store costs per request (redis-server runs beside the router here, so its
 * CPU is part of the throughput lost), next to the router's own CPU over scenario 3 (paired per round).
 */
export function storeParagraph(rows: readonly ScenarioSummary[], samples: readonly Sample[]): string | null {
  const lines = rows.filter((x) => x.store !== null).map((x) => {
    const router = roundDiff(samples, x.id, 'router-log', cpuUsPerRequest);
    const overLog = router === null ? '' : `; the router's own CPU over scenario 3, per round: ${signed(router)} µs${router.n > 1 ? ` (${f2(router.min)} to ${f2(router.max)})` : ''}`;
    return `- scenario ${x.n} (${x.label}): redis-server CPU ${range(x.store!.cpuUsPerReq, f2)} µs per request, `
      + `${range(x.store!.callsPerReq, (v) => v.toFixed(3))} script calls per request${overLog}`;
  });
  return lines.length === 0 ? null : `The limit store (redis-server on the same CPUs; counted from /proc and INFO commandstats):\n\n${lines.join('\n')}\n`;
}

/**
 * The kernel's kdamond threads' CPU per request during each scenario's runs (the memory monitor
 * takes a CPU in bursts; bench/kernel-monitor.ts), or null where none ran.
 */
export function kdamondLine(rows: readonly ScenarioSummary[]): string | null {
  const list = perScenario(rows, (x) => x.kdamondCpuUsPerReq, f2);
  return list === null ? null : `The kernel's memory monitor (kdamond threads) during these runs, CPU µs per request: ${list}.\n`;
}

/**
 * Each target's resident memory after its runs (its primary and workers, or the one process of a
 * reference; /proc/<pid>/status), or null where not read.
 */
export function residentLine(rows: readonly ScenarioSummary[]): string | null {
  const list = perScenario(rows, (x) => x.residentMb?.rss, (v) => v.toFixed(0));
  if (list === null) return null;
  const anon = perScenario(rows, (x) => x.residentMb?.anon, (v) => v.toFixed(0));
  return `Resident memory of each target's processes after its runs (primary and workers; /proc/<pid>/status), MB: ${list}.${anon === null ? '' : ` Of it anonymous (heaps and tables, no file behind them), MB: ${anon}.`}\n`;
}

/** How busy the machine was (all CPUs) during each scenario's runs at a fixed rate, or null where not read. */
export function machineLine(rows: readonly ScenarioSummary[]): string | null {
  const list = perScenario(rows, (x) => x.machineBusyPct, (v) => v.toFixed(0));
  return list === null ? null : `The whole machine during these runs (load generator, mock backend and target together; /proc/stat), percent of all CPUs busy: ${list}.\n`;
}

/** "n label median (min–max); ..." over the scenarios that have the figure, or null where none has. */
function perScenario(rows: readonly ScenarioSummary[], figure: (x: ScenarioSummary) => Spread | null | undefined, fmt: (v: number) => string): string | null {
  const items = rows.flatMap((x) => {
    const s = figure(x);
    return s === undefined || s === null ? [] : [`${x.n} ${x.label} ${range(s, fmt)}`];
  });
  return items.length === 0 ? null : items.join('; ');
}

/** The lines under a fixed-rate table: how busy the machine was, and what the kernel's monitor took. */
function fixedRateLines(rows: readonly ScenarioSummary[]): string[] {
  return [machineLine(rows), kdamondLine(rows)].filter((x): x is string => x !== null);
}

export function markdown(r: BenchReport): string {
  const m = r.machine;
  const s = r.settings;
  const parts: string[] = [];
  parts.push(`# inference-router benchmark (${r.mode})\n`);
  const monitor = m.kernelMonitor === undefined ? '' : ` Kernel memory monitor: ${m.kernelMonitor}${m.damonPaused === true ? ', turned off for this run (--pause-damon)' : ''}.`;
  parts.push(`${r.startedAt} — ${m.nproc} CPUs (${m.cpuModel}), ${m.memoryGiB} GiB, Node ${m.node}, ${m.kernel}; load average at start ${m.loadAvgStart.map(f2).join(' ')}, at end ${m.loadAvgEnd.map(f2).join(' ')}.${monitor}`);
  parts.push(`Router and every proxy: ${s.workers} workers. wrk: ${s.wrkThreads} thread, ${s.connections} connections, ${s.durationS} s per run, ${s.rounds} interleaved rounds (all scenarios in turn, then again). autocannon: ${s.autocannonRounds} rounds. Load generator and servers share the machine.\n`);
  parts.push(`Command: \`${r.command}\`\n`);
  if (r.notes.length > 0) parts.push(`Notes:\n${r.notes.map((n) => `- ${n}`).join('\n')}\n`);
  parts.push(`## wrk (closed loop)\n\n${scenarioTable(r.wrk)}\n`);
  const monitorWrk = kdamondLine(r.wrk);
  if (monitorWrk !== null) parts.push(monitorWrk);
  const resident = residentLine(r.wrk);
  if (resident !== null) parts.push(resident);
  const store = storeParagraph(r.wrk, r.samples.wrk);
  if (store !== null) parts.push(store);
  if (r.autocannon.length > 0) parts.push(`## autocannon (closed loop)\n\n${scenarioTable(r.autocannon)}\n`);
  if (r.fixedRate !== null) {
    const how = r.fixedRate.tool === 'wrk' ? 'wrk with a per-connection delay (think time, µs latency resolution)' : 'autocannon overallRate (latency in whole ms)';
    const leadIn = r.fixedRate.leadInS === undefined ? '' : `; ${r.fixedRate.leadInS} s of the same load before each run, not read`;
    parts.push(`## Fixed rate: ${int(r.fixedRate.rate)} req/s asked (half the full router's peak), ${how}${leadIn}, ${r.fixedRate.connections} connections\n\n${scenarioTable(r.fixedRate.results)}\n`);
    parts.push(...fixedRateLines(r.fixedRate.results));
  }
  if (r.openLoop !== undefined && r.openLoop !== null) {
    parts.push(`## Fixed rate: ${int(r.openLoop.rate)} req/s, open-loop (${r.openLoop.arrivals} arrivals spaced in µs, each request sent at its scheduled time and timed from it${r.openLoop.leadInS === undefined ? '' : `; ${r.openLoop.leadInS} s of the same load before each run, not read`}), ${r.openLoop.connections} connections\n\n${scenarioTable(r.openLoop.results)}\n`);
    parts.push(...fixedRateLines(r.openLoop.results));
  }
  if (r.streams !== null) {
    const p = r.streams.probe;
    parts.push('## Streaming (SSE)\n\nOne request at a time, alternating targets:\n\n| target | SSE events | TTFB p50 / p99 ms | last byte p50 / p99 ms |\n|---|---|---|---|\n'
      + p.map((x) => `| ${x.id} | ${x.events} | ${f2(x.ttfbMs.p50)} / ${f2(x.ttfbMs.p99)} | ${f2(x.lastByteMs.p50)} / ${f2(x.lastByteMs.p99)} |`).join('\n')
      + `\n\nCPU per extra SSE chunk (64-chunk minus 16-chunk runs, per round): router ${range(r.streams.routerCpuUsPerChunk, f2)} µs, mock backend ${range(r.streams.mockCpuUsPerChunk, f2)} µs.\n`);
  }
  parts.push(`## Goals (measured, not asserted)\n\n${goalsTable(r.goals)}\n`);
  for (const x of r.micro) parts.push(`## ${x.name}${x.ok ? '' : ' (failed or skipped)'}\n\n\`\`\`\n${x.output.trim()}\n\`\`\`\n`);
  if (r.profile !== null) {
    const p = r.profile;
    parts.push(`## CPU profile of the full router under wrk load (${p.files} profiles, ${int(p.busyMs)} ms busy, ${int(p.idleMs)} ms idle)\n\n`
      + '| area | self % |\n|---|---|\n' + p.areas.slice(0, 14).map((a) => `| ${a.area} | ${a.pct.toFixed(1)} |`).join('\n')
      + '\n\n| function | where | self % |\n|---|---|---|\n' + p.topFunctions.map((f) => `| ${f.name.replace(/\|/g, '\\|')} | ${f.where} | ${f.pct.toFixed(1)} |`).join('\n') + '\n');
  }
  return parts.join('\n');
}

const esc = (t: string): string => t.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

/** Horizontal bars: median req/s per scenario, with a min–max whisker. */
export function svgChart(rows: readonly ScenarioSummary[], title: string): string {
  const data = rows.filter((r) => r.rps !== null);
  const labelW = 330;
  const barW = 460;
  const rowH = 26;
  const top = 44;
  const width = labelW + barW + 110;
  const height = top + data.length * rowH + 30;
  const max = Math.max(1, ...data.map((r) => r.rps!.max));
  const x = (v: number): number => labelW + (v / max) * barW;
  const bars = data.map((r, i) => {
    const y = top + i * rowH;
    const s = r.rps!;
    const color = r.id.startsWith('direct') ? '#8a8a8a' : r.id.startsWith('router') ? '#2f6fb3' : '#c07a2a';
    return `  <text x="${labelW - 8}" y="${y + 16}" text-anchor="end">${esc(`${r.n}. ${r.label}`)}</text>
  <rect x="${labelW}" y="${y + 4}" width="${(x(s.median) - labelW).toFixed(1)}" height="${rowH - 8}" fill="${color}"/>
  <line x1="${x(s.min).toFixed(1)}" x2="${x(s.max).toFixed(1)}" y1="${y + rowH / 2}" y2="${y + rowH / 2}" stroke="#222" stroke-width="1.5"/>
  <text x="${(x(s.max) + 6).toFixed(1)}" y="${y + 16}">${int(s.median)}</text>`;
  }).join('\n');
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="12">
  <rect width="100%" height="100%" fill="#fff"/>
  <text x="10" y="20" font-size="14" font-weight="bold">${esc(title)}</text>
  <text x="10" y="36" fill="#555">median req/s over interleaved rounds, whisker = min–max; grey direct, blue router, orange reference proxies</text>
${bars}
  <line x1="${labelW}" x2="${labelW}" y1="${top}" y2="${top + data.length * rowH}" stroke="#222"/>
</svg>
`;
}

/** Writes <dir>/<name>.json, .md and .svg; returns the paths. */
export function writeReport(dir: string, name: string, r: BenchReport): string[] {
  mkdirSync(dir, { recursive: true });
  const files = [join(dir, `${name}.json`), join(dir, `${name}.md`), join(dir, `${name}.svg`)];
  writeFileSync(files[0], `${JSON.stringify(r, null, 2)}\n`);
  writeFileSync(files[1], markdown(r));
  writeFileSync(files[2], svgChart(r.wrk, `inference-router bench (${r.mode}, wrk, ${r.settings.workers} workers, ${r.machine.nproc} CPUs)`));
  return files;
}
