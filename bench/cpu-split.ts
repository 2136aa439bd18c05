/**
 * Separate CPUs for the load and for the target: the tool, and so the mock backends and load
 * generators it starts, on the first CPUs; a target's processes, every thread of each, on the
 * others. On a machine whose CPUs the generator, the mock and the proxy share, a proxy's tail
 * follows what all of them spend per request; split, the target's tail is its own, as on a
 * machine where the load comes from elsewhere. Uses util-linux's `taskset`.
 */
import { spawnSync } from 'node:child_process';
import { availableParallelism } from 'node:os';
import { processState, processTree } from './proc-cpu.js';

/** The CPU list the load side keeps and the one the targets get, in taskset's notation, and the load's CPUs by number. */
export interface CpuSplit {
  readonly load: string;
  readonly targets: string;
  readonly loadCpus: readonly number[];
}

/** The split of `cpus` CPUs: the first `loadCpus` for the load, the rest for the targets; null when none would be left for either. */
export function cpuSplit(cpus: number, loadCpus: number): CpuSplit | null {
  if (!Number.isInteger(loadCpus) || loadCpus < 1 || loadCpus >= cpus) return null;
  return { load: range(0, loadCpus - 1), targets: range(loadCpus, cpus - 1), loadCpus: Array.from({ length: loadCpus }, (_, i) => i) };
}

function range(first: number, last: number): string {
  return first === last ? String(first) : `${first}-${last}`;
}

/** Sets every thread of process `pid` to run only on `cpus`; throws naming the process when taskset fails. */
export function pinProcess(pid: number, cpus: string): void {
  // taskset --all-tasks finds no thread of a process that is gone, and says nothing.
  if (processState(pid) === null) throw new Error(`could not pin process ${pid} to CPUs ${cpus}: no such process`);
  const r = spawnSync('taskset', ['--all-tasks', '--cpu-list', '--pid', cpus, String(pid)], { encoding: 'utf8' });
  if (r.error !== undefined) throw new Error(`taskset could not run (${r.error.message}): --load-cpus needs util-linux's taskset`);
  if (r.status !== 0) throw new Error(`taskset could not pin process ${pid} to CPUs ${cpus}: ${r.stderr.trim()}`);
}

/** Pins `root` and every process below it to `cpus`; the pids pinned. */
export function pinTree(root: number, cpus: string): number[] {
  const pids = processTree(root);
  for (const pid of pids) pinProcess(pid, cpus);
  return pids;
}

/** The CPUs process `pid`'s main thread may run on, as taskset lists them (e.g. "1"). */
export function cpusOf(pid: number): string {
  const r = spawnSync('taskset', ['--cpu-list', '--pid', String(pid)], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`taskset could not read process ${pid}'s CPUs: ${r.stderr.trim()}`);
  const m = /list:\s*(\S+)/.exec(r.stdout);
  if (m === null) throw new Error(`taskset printed no CPU list for process ${pid}: ${r.stdout.trim()}`);
  return m[1];
}

/** This machine's split with `loadCpus` CPUs for the load, or null when it has too few CPUs for it. */
export function machineSplit(loadCpus: number): CpuSplit | null {
  return cpuSplit(availableParallelism(), loadCpus);
}
