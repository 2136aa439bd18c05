/**
 * Holds the bench's idle servers still while another one is measured.
 *
 * A full run starts every target at once (a dozen routers and proxies, three processes each) and
 * loads one at a time. An idle router still wakes tens of times a second (timers, IPC), and on a
 * 2-CPU machine those wake-ups preempt the process under load: with twelve idle full routers
 * beside it, the measured router's p99 at half load rose from about 2.4 to about 4.1 ms while the
 * mock backend's own did not move (docs/internals/performance-changes.md, "Idle targets stopped
 * during a measurement"). A router in production does not share its node with a dozen idle
 * copies of itself, so each measurement stops (SIGSTOP) the process trees of the targets it does
 * not use and continues them (SIGCONT) afterwards.
 */
import { processTree } from './proc-cpu.js';

/** Stops every process of the trees rooted at `roots`; the function returned continues them. */
export function pauseTrees(roots: readonly number[]): () => void {
  const pids = roots.flatMap((root) => processTree(root));
  for (const pid of pids) signal(pid, 'SIGSTOP');
  let resumed = false;
  return () => {
    if (resumed) return;
    resumed = true;
    for (const pid of pids) signal(pid, 'SIGCONT');
  };
}

/** Runs `fn` with the trees rooted at `roots` stopped, and continues them when it settles. */
export async function whileStopped<T>(roots: readonly number[], fn: () => Promise<T>): Promise<T> {
  const resume = pauseTrees(roots);
  try {
    return await fn();
  } finally {
    resume();
  }
}

/** Sends `sig` to `pid`; a process that has exited in the meantime is skipped. */
export function signal(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(pid, sig);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ESRCH') throw err;
  }
}
