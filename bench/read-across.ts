/**
 * The goals read across many full runs: in how many of them each goal was met, by host type, and
 * the range and median of what they measured. docs/benchmarks.md's "Read across" paragraph states
 * these; this counts them from the kept results (runs-table.ts's rows), the same way every time.
 *
 *   node dist/bench/runs-table.js --read-across [--since "YYYY-MM-DD HH:MM"]
 *
 * `--since`: the first run counted (UTC, as the table shows it); by default the first run with the
 * global limit's leases on by default (READ_ACROSS_SINCE), the runs the docs read across.
 */
import { median } from './order-stats.js';

/** The first run after the leases became the global limit's default: the docs' read-across starts there. */
export const READ_ACROSS_SINCE = '2026-11-25 23:27';

/** One run as runs-table.ts shows it: its time, its host cell and each figure cell. */
export interface RunCells {
  readonly at: string;
  readonly host: string;
  readonly full: string;
  readonly cpu: string;
  readonly cpuRatio: string;
  readonly floor: string;
  readonly local: string;
  readonly log: string;
  /** "12.7% / 22.0%": leases on, then off. */
  readonly global: string;
  /** "2.05 ms (1.66 ms)": added, then beyond nginx. */
  readonly p99: string;
  readonly openLoop: string;
  readonly sseChunk: string;
  /**
   * The bench's own verdict on a goal where the run recorded one, by cell and part ("p99:paren"):
   * a cell shows a rounded figure (1.995 ms is printed "2.00 ms"), the verdict was reached on the
   * figure itself, so a goal is counted met as the run said, and read from the cell only where
   * the run recorded no verdict (runs before the goal was among the bench's).
   */
  readonly verdicts?: Readonly<Partial<Record<VerdictKey, boolean>>>;
}

type Part = 'first' | 'second' | 'paren';

/** A cell that shows figures (not the run's time, host or verdicts). */
type FigureCell = Exclude<keyof RunCells, 'at' | 'host' | 'verdicts'>;

/** A figure of a run: the cell it is shown in and which part of it. */
export type VerdictKey = `${FigureCell}:${Part}`;

interface ReadGoal {
  readonly name: string;
  readonly cell: FigureCell;
  readonly part: Part;
  readonly met: (v: number) => boolean;
}

const GOALS: readonly ReadGoal[] = [
  { name: 'full router ≥ 0.6× nginx', cell: 'full', part: 'first', met: (v) => v >= 0.6 },
  { name: 'floor ≥ 0.8× nginx', cell: 'floor', part: 'first', met: (v) => v >= 0.8 },
  { name: 'full router CPU ≤ 50 µs a request', cell: 'cpu', part: 'first', met: (v) => v <= 50 },
  { name: "full router CPU ≤ 2.08× nginx's", cell: 'cpuRatio', part: 'first', met: (v) => v <= 2.08 },
  { name: 'local limit < 5%', cell: 'local', part: 'first', met: (v) => v < 5 },
  { name: 'access log < 5%', cell: 'log', part: 'first', met: (v) => v < 5 },
  { name: 'global limit, leases on, < 15%', cell: 'global', part: 'first', met: (v) => v < 15 },
  { name: 'global limit, leases off, < 15%', cell: 'global', part: 'second', met: (v) => v < 15 },
  { name: 'p99 added at half load < 2 ms', cell: 'p99', part: 'first', met: (v) => v < 2 },
  { name: 'the same beyond nginx < 2 ms', cell: 'p99', part: 'paren', met: (v) => v < 2 },
  { name: 'the same, open-loop, < 2 ms', cell: 'openLoop', part: 'first', met: (v) => v < 2 },
  { name: 'the same, open-loop, beyond nginx < 2 ms', cell: 'openLoop', part: 'paren', met: (v) => v < 2 },
  { name: 'CPU per extra SSE chunk ≤ 1.5 µs', cell: 'sseChunk', part: 'first', met: (v) => v <= 1.5 },
];

const NUMBER = /-?\d+(?:\.\d+)?/;

/** The number of a cell's part ("12.7% / 22.0%", "2.05 ms (1.66 ms)"), or null where the run has none ("–"). */
export function cellNumber(cell: string, part: Part): number | null {
  let text = cell;
  if (part === 'second') {
    const slash = cell.indexOf('/');
    if (slash < 0) return null;
    text = cell.slice(slash + 1);
  } else if (part === 'paren') {
    const open = cell.indexOf('(');
    if (open < 0) return null;
    text = cell.slice(open + 1);
  } else {
    const end = cell.search(/[/(]/);
    if (end >= 0) text = cell.slice(0, end);
  }
  const m = NUMBER.exec(text);
  return m === null ? null : Number(m[0]);
}

/** The host type of a host cell: "AMD EPYC, Node 24" → "AMD EPYC". */
function hostType(host: string): string {
  const comma = host.indexOf(',');
  return comma < 0 ? host : host.slice(0, comma);
}

/** The read-across of the runs from `since` on, as a markdown table: one row per goal. */
export function readAcross(runs: readonly RunCells[], since = READ_ACROSS_SINCE): string {
  const counted = runs.filter((r) => r.at >= since);
  const hosts = [...new Set(counted.map((r) => hostType(r.host)))].sort();
  const lines = [
    `${counted.length} full runs from ${since} UTC on; each goal met in how many of the runs that measured it:`,
    '',
    `| goal | met | ${hosts.join(' | ')} | lowest–highest | median |`,
    `|---|---|${hosts.map(() => '---|').join('')}---|---|`,
  ];
  for (const g of GOALS) {
    const key: VerdictKey = `${g.cell}:${g.part}`;
    const measured = counted.flatMap((r) => {
      const v = cellNumber(r[g.cell], g.part);
      return v === null ? [] : [{ v, host: hostType(r.host), met: r.verdicts?.[key] ?? g.met(v) }];
    });
    if (measured.length === 0) continue;
    const metIn = (of: readonly { met: boolean }[]): string => `${of.filter((x) => x.met).length} of ${of.length}`;
    const byHost = hosts.map((h) => metIn(measured.filter((x) => x.host === h)));
    const values = measured.map((x) => x.v).sort((a, b) => a - b);
    lines.push(`| ${g.name} | ${metIn(measured)} | ${byHost.join(' | ')} | ${values[0]}–${values[values.length - 1]} | ${Number(median(values).toFixed(3))} |`);
  }
  return `${lines.join('\n')}\n`;
}
