import type { OpsLog } from '../observe/ops-log.js';

/** What stopWhileStarting needs of the process: its signal events and its exit. */
export interface SignalledProcess {
  on(signal: 'SIGTERM' | 'SIGINT', listener: (signal: NodeJS.Signals) => void): unknown;
  off(signal: 'SIGTERM' | 'SIGINT', listener: (signal: NodeJS.Signals) => void): unknown;
  exit(code: number): never | void;
}

/**
 * SIGTERM or SIGINT while the primary is still starting (the resources loading, the Kubernetes
 * client loaded and its first lists asked for), before the drain's handlers are in place: nothing
 * is served yet, so the process ends at once with exit 0 and an `exit` line, instead of dying of
 * the signal (exit 143) without a word. Returns the call that takes the handlers off, made when
 * the drain's take over.
 */
export function stopWhileStarting(ops: Pick<OpsLog, 'info'>, proc: SignalledProcess = process): () => void {
  const stop = (signal: NodeJS.Signals): void => {
    ops.info('exit', `${signal} received while starting, before any worker served: exit 0`, { code: 0, signal });
    proc.exit(0);
  };
  proc.on('SIGTERM', stop);
  proc.on('SIGINT', stop);
  return () => {
    proc.off('SIGTERM', stop);
    proc.off('SIGINT', stop);
  };
}
