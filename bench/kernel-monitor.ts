/**
 * The kernel's memory access monitor (DAMON) on the bench machine: its kdamond threads' CPU during
 * a run, its settings, and pausing it for a measurement.
 *
 * The VMs these benches run on start a DAMON monitor of physical memory with a `pageout` scheme
 * (proactive reclaim). Every sampling interval (500 ms there) its kdamond thread clears and checks
 * the accessed bits of sampled pages through reverse-map walks; in a run it took one of the two
 * CPUs for 10–15 ms at a time, more the more memory the measured processes touch, and the full
 * router's slow requests at a fixed rate came in groups at that period
 * (docs/benchmarks.md, "The kernel's memory monitor"). Its CPU is read from /proc (anyone can);
 * its settings and its on/off switch are in /sys/kernel/mm/damon/admin (root only).
 */
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export const DAMON_ADMIN = '/sys/kernel/mm/damon/admin/kdamonds';

export interface MonitorPaths {
  /** /sys/kernel/mm/damon/admin/kdamonds */
  readonly admin: string;
  /** /proc */
  readonly proc: string;
}

const SYSTEM: MonitorPaths = { admin: DAMON_ADMIN, proc: '/proc' };

/** The kdamond threads running now (DAMON's sysfs monitors and modules such as damon_reclaim alike). */
export function kdamondPids(paths: MonitorPaths = SYSTEM): number[] {
  const pids: number[] = [];
  let names: string[];
  try {
    names = readdirSync(paths.proc);
  } catch {
    return pids;
  }
  for (const name of names) {
    if (!/^\d+$/.test(name)) continue;
    try {
      if (readFileSync(join(paths.proc, name, 'comm'), 'utf8').startsWith('kdamond')) pids.push(Number(name));
    } catch {
      // Gone since the listing.
    }
  }
  return pids;
}

function cpuNs(paths: MonitorPaths, pid: number): number | null {
  try {
    return Number(readFileSync(join(paths.proc, String(pid), 'schedstat'), 'utf8').split(' ')[0]);
  } catch {
    return null;
  }
}

/**
 * The kdamond threads' CPU from now on: `delta()` is their CPU ms since this call (threads that
 * started since are counted from 0, those that ended count what they had run at the start); null
 * when no kdamond ran at either end.
 */
export function kdamondCpu(paths: MonitorPaths = SYSTEM): { delta(): number | null } {
  const start = new Map<number, number>();
  for (const pid of kdamondPids(paths)) {
    const ns = cpuNs(paths, pid);
    if (ns !== null) start.set(pid, ns);
  }
  return {
    delta(): number | null {
      const now = kdamondPids(paths);
      if (now.length === 0 && start.size === 0) return null;
      let ns = 0;
      for (const pid of now) {
        const v = cpuNs(paths, pid);
        if (v !== null) ns += v - (start.get(pid) ?? 0);
      }
      return ns / 1e6;
    },
  };
}

/** One DAMON monitor of the sysfs interface, as far as it can be read (its files are root's). */
export interface DamonMonitor {
  readonly index: number;
  /** `on` or `off`; null when unreadable. */
  readonly state: string | null;
  /** `paddr` (physical memory), `vaddr` (processes' address spaces) or `fvaddr`. */
  readonly operations: string | null;
  readonly sampleUs: number | null;
  readonly aggregationUs: number | null;
  /** The actions of its schemes (`pageout`, `lru_prio`, `stat`, ...). */
  readonly actions: readonly string[];
}

function readText(path: string): string | null {
  try {
    return readFileSync(path, 'utf8').trim();
  } catch {
    return null;
  }
}

function readNumber(path: string): number | null {
  const t = readText(path);
  return t === null || !/^\d+$/.test(t) ? null : Number(t);
}

/** The monitors of DAMON's sysfs interface (none where the kernel has none or it is not mounted). */
export function damonMonitors(paths: MonitorPaths = SYSTEM): DamonMonitor[] {
  const n = readNumber(join(paths.admin, 'nr_kdamonds'));
  const out: DamonMonitor[] = [];
  for (let i = 0; i < (n ?? 0); i++) {
    const dir = join(paths.admin, String(i));
    const ctx = join(dir, 'contexts', '0');
    const schemes = readNumber(join(ctx, 'schemes', 'nr_schemes')) ?? 0;
    const actions: string[] = [];
    for (let s = 0; s < schemes; s++) {
      const a = readText(join(ctx, 'schemes', String(s), 'action'));
      if (a !== null) actions.push(a);
    }
    out.push({
      index: i,
      state: readText(join(dir, 'state')),
      operations: readText(join(ctx, 'operations')),
      sampleUs: readNumber(join(ctx, 'monitoring_attrs', 'intervals', 'sample_us')),
      aggregationUs: readNumber(join(ctx, 'monitoring_attrs', 'intervals', 'aggr_us')),
      actions,
    });
  }
  return out;
}

/** One line for a report: what monitors run and how (or that there are none). */
export function describeMonitors(monitors: readonly DamonMonitor[], kdamonds: number): string {
  // A kdamond thread runs only while its monitor is on; DAMON's sysfs files are root's.
  if (monitors.length === 0) return kdamonds === 0 ? 'no kdamond thread' : `${kdamonds} kdamond thread(s) on, settings not readable here`;
  return monitors.map((m) => {
    if (m.state === null) return `DAMON monitor ${m.index} (settings readable by root only)`;
    const how = [
      m.operations,
      m.sampleUs === null ? null : `sampling every ${m.sampleUs / 1000} ms`,
      m.actions.length === 0 ? null : `schemes: ${m.actions.join(', ')}`,
    ].filter((x) => x !== null).join(', ');
    return `DAMON monitor ${m.index} ${m.state}${how === '' ? '' : ` (${how})`}`;
  }).join('; ');
}

/** The machine's monitors as found now, in one line (what `npm run bench` and latency-sweep report). */
export function monitorsNow(paths: MonitorPaths = SYSTEM): string {
  return describeMonitors(damonMonitors(paths), kdamondPids(paths).length);
}

/**
 * Turns off every DAMON monitor that is on, until `restore()` turns them on again (it is also run
 * at this process's exit, so an interrupted run gives the machine its monitor back). Needs root;
 * throws with the reason when a monitor cannot be switched.
 */
export function pauseDamon(paths: MonitorPaths = SYSTEM): { paused: number[]; restore(): void } {
  const paused: number[] = [];
  const restore = (): void => {
    for (const i of paused.splice(0)) {
      try {
        writeFileSync(join(paths.admin, String(i), 'state'), 'on');
      } catch {
        // At exit nothing more can be done; the monitor stays off until turned on by hand.
      }
    }
    process.off('exit', restore);
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  };
  // Interrupted: the monitors on again, then the signal's default action (this process ends).
  const onSignal = (signal: NodeJS.Signals): void => {
    restore();
    process.kill(process.pid, signal);
  };
  const monitors = damonMonitors(paths);
  const unreadable = monitors.find((m) => m.state === null);
  if (unreadable !== undefined) throw new Error(`cannot read DAMON monitor ${unreadable.index}'s state (${join(paths.admin, String(unreadable.index), 'state')}): pausing it needs root`);
  for (const m of monitors) {
    if (m.state !== 'on') continue;
    try {
      writeFileSync(join(paths.admin, String(m.index), 'state'), 'off');
    } catch (err) {
      restore();
      throw new Error(`cannot turn DAMON monitor ${m.index} off: ${(err as Error).message}`);
    }
    paused.push(m.index);
  }
  process.on('exit', restore);
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  return { paused: [...paused], restore };
}
