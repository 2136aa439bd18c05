/**
 * How busy the whole machine was during a run: the share of every CPU's time that was not idle,
 * from the kernel's counters (/proc/stat, first line; ticks). At a fixed rate it says how close
 * the machine was to saturation, which the tail follows: on a 2-CPU machine the load generator,
 * the mock backend and the target share the CPUs, and at half the closed-loop peak with requests
 * arriving one at a time they keep most of both busy (docs/benchmarks.md, "Latency at half load").
 */
import { readFileSync } from 'node:fs';

export interface CpuTicks {
  /** Every tick of every CPU. */
  readonly total: number;
  /** Ticks neither idle nor waiting for I/O. */
  readonly busy: number;
  /** Ticks the hypervisor ran something else (0 where the VM does not report it). */
  readonly steal: number;
}

/**
 * The first line of /proc/stat ("cpu  user nice system idle iowait irq softirq steal guest
 * guest_nice"), or with `cpus` the sum of those CPUs' own lines ("cpu0 ...", "cpu1 ...").
 */
export function parseCpuTicks(procStat: string, cpus: readonly number[] | null = null): CpuTicks {
  if (cpus !== null) {
    let total = 0;
    let busy = 0;
    let steal = 0;
    const lines = procStat.split('\n');
    for (const cpu of cpus) {
      const line = lines.find((l) => l.startsWith(`cpu${cpu} `));
      if (line === undefined) throw new Error(`/proc/stat has no line for CPU ${cpu}`);
      const t = ticksOf(line, `cpu${cpu}`);
      total += t.total;
      busy += t.busy;
      steal += t.steal;
    }
    return { total, busy, steal };
  }
  const line = procStat.slice(0, procStat.indexOf('\n') === -1 ? procStat.length : procStat.indexOf('\n'));
  return ticksOf(line, 'cpu');
}

function ticksOf(line: string, label: string): CpuTicks {
  const f = line.trim().split(/\s+/);
  if (f[0] !== label || f.length < 5) throw new Error(`not the ${label === 'cpu' ? 'all-CPU' : label} line of /proc/stat: ${JSON.stringify(line.slice(0, 80))}`);
  const [user, nice, system, idle, iowait = 0, irq = 0, softirq = 0, steal = 0] = f.slice(1, 9).map(Number);
  // guest and guest_nice are already counted in user and nice.
  const busy = user + nice + system + irq + softirq;
  return { total: busy + idle + iowait + steal, busy, steal };
}

/**
 * From now on: `delta()` is the busy and stolen share of all CPUs (or of `cpus` alone) since this
 * call, or null where /proc/stat cannot be read.
 */
export function machineBusy(path = '/proc/stat', cpus: readonly number[] | null = null): { delta(): { busy: number; steal: number } | null } {
  const read = (): CpuTicks | null => {
    try {
      return parseCpuTicks(readFileSync(path, 'utf8'), cpus);
    } catch {
      return null;
    }
  };
  const start = read();
  return {
    delta() {
      const end = read();
      if (start === null || end === null || end.total <= start.total) return null;
      const total = end.total - start.total;
      return { busy: (end.busy - start.busy) / total, steal: (end.steal - start.steal) / total };
    },
  };
}
