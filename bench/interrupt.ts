/**
 * What a bench tool does when it is interrupted (Ctrl-C's SIGINT, a SIGTERM, a closed terminal's
 * SIGHUP) before it has stopped what it started. Without this, Node ends at once on the signal and
 * leaves behind every server the tool started: the routers, proxies, mocks, nginx and redis-server
 * of a full run (about 45 processes), and those a measurement had stopped (SIGSTOP, pause-targets.ts)
 * stay stopped for good, holding their memory and ports. A Ctrl-C reaches the servers as well (one
 * process group), but a stopped process does not act on it until it is continued.
 *
 * On the first such signal: every process tree this tool started (test/helpers/processes.ts) is
 * continued and killed, children first, the directories of their files removed, a line on stderr
 * says so, and the tool exits 128 + the signal's number (130 for SIGINT), which also runs its
 * 'exit' hooks (the kernel monitor turned on again after --pause-damon: kernel-monitor.ts). A second
 * signal while this runs changes nothing.
 */
import { constants } from 'node:os';
import { livePids, removeTempDirs } from '../test/helpers/processes.js';
import { signal } from './pause-targets.js';
import { processTree } from './proc-cpu.js';

const SIGNALS: readonly NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP'];

let installed = false;
let interrupted = false;

/** Installs the handler (once per process); `tool` names the tool in its line. */
export function stopChildrenOnInterrupt(tool: string): void {
  if (installed) return;
  installed = true;
  const onSignal = (signal: NodeJS.Signals): void => {
    if (interrupted) return;
    interrupted = true;
    const stopped = killTrees(livePids());
    removeTempDirs();
    process.stderr.write(`${tool}: interrupted (${signal}): stopped the ${stopped} processes it had started; exiting\n`);
    process.exit(128 + (constants.signals[signal] ?? 0));
  };
  for (const s of SIGNALS) process.on(s, onSignal);
}

/** Continues and kills every process of the trees rooted at `roots`, descendants first; how many there were. */
export function killTrees(roots: readonly number[]): number {
  const pids = roots.flatMap((root) => processTree(root));
  // Continued first: a stopped process is killed by SIGKILL too, but its children (a router's
  // workers, nginx's) would be left to find their parent gone while still stopped themselves.
  for (const pid of pids) signal(pid, 'SIGCONT');
  for (const pid of [...pids].reverse()) signal(pid, 'SIGKILL');
  return pids.length;
}
