/**
 * CPU time of processes from /proc (Linux): a process tree (a router primary and its workers),
 * and the children this process has already waited for (wrk, autocannon runners) through
 * cutime/cstime of /proc/self/stat.
 */
import { spawn, spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { trackProcess } from '../test/helpers/processes.js';

const TICK_MS = 1000 / (Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout.trim()) || 100);

interface Stat { state: string; ppid: number; utime: number; stime: number; cutime: number; cstime: number; starttime: number }

function readStat(pid: number | 'self'): Stat | null {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return null;
  }
  // Fields after the command name (which may contain spaces) start at state (field 3).
  const f = text.slice(text.lastIndexOf(')') + 2).split(' ');
  return { state: f[0], ppid: Number(f[1]), utime: Number(f[11]), stime: Number(f[12]), cutime: Number(f[13]), cstime: Number(f[14]), starttime: Number(f[19]) };
}

/** Every live process's stat, by pid (one pass over /proc). */
export function allStats(): Map<number, Stat> {
  const out = new Map<number, Stat>();
  for (const name of readdirSync('/proc')) {
    const pid = Number(name);
    if (!Number.isInteger(pid)) continue;
    const s = readStat(pid);
    if (s !== null) out.set(pid, s);
  }
  return out;
}

/** `root` and its descendants among `stats`. */
function treeIn(stats: ReadonlyMap<number, Stat>, root: number): number[] {
  const tree = [root];
  for (let i = 0; i < tree.length; i++) {
    for (const [pid, s] of stats) if (s.ppid === tree[i]) tree.push(pid);
  }
  return tree;
}

/** `root` and every live descendant (one that exited and is not reaped yet, a zombie, is not live). */
export function processTree(root: number): number[] {
  const stats = allStats();
  return treeIn(stats, root).filter((p) => stats.get(p)?.state !== 'Z');
}

/**
 * How a target's processes changed between two readings of its tree (processTree): the pids gone
 * and the pids new, or null when they are the same. A worker that exited and was replaced during a
 * run takes its CPU and memory out of that run's figures (treeCpu reads the processes it began with).
 */
export function processesChanged(before: readonly number[], after: readonly number[]): { exited: number[]; started: number[] } | null {
  // A process that exited and is not reaped yet (a zombie) is still in the tree: it counts as exited.
  const live = after.filter((p) => { const s = processState(p); return s !== null && s !== 'Z'; });
  const exited = before.filter((p) => !live.includes(p));
  const started = live.filter((p) => !before.includes(p));
  return exited.length === 0 && started.length === 0 ? null : { exited, started };
}

/** The scheduler state letter of a process (R running, S sleeping, T stopped, ...); null when it is gone. */
export function processState(pid: number): string | null {
  return readStat(pid)?.state ?? null;
}

/** A process's scheduler accounting, summed over its threads (/proc/<pid>/task/<tid>/schedstat). */
export interface SchedStat {
  /** ns on a CPU. */
  cpuNs: number;
  /** ns runnable but waiting for a CPU (the run queue). */
  waitNs: number;
  /** Times a thread was put on a CPU (each wake-up is one; so is each return after preemption). */
  slices: number;
}

/**
 * The scheduler's own accounting of a process, all its threads: not tick samples (zeros for
 * threads or a process already gone).
 */
export function schedStat(pid: number): SchedStat {
  const out = { cpuNs: 0, waitNs: 0, slices: 0 };
  let tids: string[];
  try {
    tids = readdirSync(`/proc/${pid}/task`);
  } catch {
    return out;
  }
  for (const tid of tids) {
    try {
      const f = readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ');
      out.cpuNs += Number(f[0]);
      out.waitNs += Number(f[1]);
      out.slices += Number(f[2]);
    } catch { /* thread gone */ }
  }
  return out;
}

/**
 * A process's CPU ms in user space and in the kernel (its system calls, and the network stack's
 * work done on its behalf), all its threads: /proc/<pid>/stat's utime and stime, tick samples (10
 * ms each where CLK_TCK is 100), so read over seconds. 0 and 0 for a process already gone.
 */
export function userKernelMs(pid: number): { userMs: number; kernelMs: number } {
  const s = readStat(pid);
  return s === null ? { userMs: 0, kernelMs: 0 } : { userMs: s.utime * TICK_MS, kernelMs: s.stime * TICK_MS };
}

/**
 * From now on: `delta()` is the CPU ms every process outside the trees of `roots` spent since
 * this call: other services, kernel threads, and the processes that started meanwhile (their
 * whole CPU, even when they have exited: a parent's cutime/cstime holds its reaped children's).
 * Tick samples (/proc/<pid>/stat), so read over seconds. For a measurement's rounds: what the rest
 * of the machine ran beside it.
 */
export function othersCpu(roots: readonly number[], readStats: () => Map<number, Stat> = allStats): { delta(): number } {
  const snapshot = (): Map<number, { ticks: number; starttime: number }> => {
    const stats = readStats();
    for (const pid of roots.flatMap((root) => treeIn(stats, root))) stats.delete(pid);
    const out = new Map<number, { ticks: number; starttime: number }>();
    for (const [pid, s] of stats) out.set(pid, { ticks: s.utime + s.stime + s.cutime + s.cstime, starttime: s.starttime });
    return out;
  };
  const before = snapshot();
  return {
    delta() {
      let ticks = 0;
      for (const [pid, now] of snapshot()) {
        const then = before.get(pid);
        ticks += then !== undefined && then.starttime === now.starttime ? Math.max(0, now.ticks - then.ticks) : now.ticks;
      }
      return ticks * TICK_MS;
    },
  };
}

/** CPU ns a process has run, all its threads (schedStat's first figure). */
export function schedCpuNs(pid: number): number {
  return schedStat(pid).cpuNs;
}

/**
 * Snapshot of a process tree's CPU; `delta()` later gives the CPU ms spent in between by the
 * processes alive at the snapshot (workers restarted in between would be missed: the bench
 * compares the tree after the run with `pids`, processesChanged, and notes a change). Read from the scheduler's accounting (schedStat, ns), as
 * compare-trees reads it, not from tick samples.
 */
export function treeCpu(root: number): { pids: number[]; delta(): number } {
  const pids = processTree(root);
  const before = pids.map(schedCpuNs);
  return {
    pids,
    delta() {
      let ns = 0;
      for (let i = 0; i < pids.length; i++) ns += Math.max(0, schedCpuNs(pids[i]) - before[i]);
      return ns / 1e6;
    },
  };
}

/**
 * Runs a load generator to its end and returns the JSON of its output line that starts with
 * `mark`, with the CPU it used (reaped-children time); fails with its whole output otherwise.
 */
export async function runLoadChild<T>(tool: string, cmd: string, args: readonly string[], mark: string, url: string): Promise<{ json: T; loadCpuMs: number }> {
  const cpuBefore = reapedChildrenCpuMs();
  const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  trackProcess(child); // an interrupted run stops its load generator too (interrupt.ts)
  let out = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => { out += d; });
  child.stderr.setEncoding('utf8').on('data', (d: string) => { out += d; });
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  const loadCpuMs = reapedChildrenCpuMs() - cpuBefore;
  const line = out.split('\n').find((l) => l.startsWith(mark));
  if (code !== 0 || line === undefined) throw new Error(`${tool} failed (exit ${code}) on ${url}:\n${out}`);
  return { json: JSON.parse(line.slice(mark.length)) as T, loadCpuMs };
}

/** CPU ms of this process's terminated, waited-for children so far (cutime + cstime). */
export function reapedChildrenCpuMs(): number {
  const s = readStat('self');
  return s === null ? 0 : (s.cutime + s.cstime) * TICK_MS;
}
