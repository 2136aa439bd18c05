/**
 * What a router process does when it fails: an exception nothing caught, or a promise rejected
 * with nothing to handle it (Node's default `--unhandled-rejections=throw` makes it one). Node's
 * own answer is its stack written raw on stderr and exit code 1: a line a JSON log collector
 * cannot parse, and, in a worker, the access-log records still batched (up to
 * ACCESS_LOG_FLUSH_INTERVAL of answered requests) lost with the process.
 *
 * Here the failure is one `error` line of the operational log (event `crash`, its stack in the
 * message, `origin` saying which of the two it was), then `cleanup` runs (a worker stops taking
 * connections, ends its requests in flight and writes the records it holds) for at most
 * CLEANUP_MS, and the process exits with code 1 as Node would: the primary restarts a worker.
 * Nothing else goes on after a failure (the process's state is not known). A second failure
 * during the cleanup is logged too and ends the process at once.
 */
import type { OpsLog } from './observe/ops-log.js';

/** The longest a failed process spends on its cleanup before it exits. */
const CLEANUP_MS = 1000;

/** An exit code of a process that failed, as Node's own for an uncaught exception. */
const FAILED_EXIT_CODE = 1;

export interface FailureOptions {
  readonly ops: OpsLog;
  /** What to save before the exit (bounded by `cleanupMs`); a rejection is logged and ends it. */
  readonly cleanup?: () => Promise<void>;
  /** Default CLEANUP_MS. */
  readonly cleanupMs?: number;
}

/** Installs the handler on this process: once per process. */
export function exitOnFailure(o: FailureOptions): void {
  let failing = false;
  process.on('uncaughtException', (err: unknown, origin: string) => {
    o.ops.error('crash', `${failing ? 'failed again while saving what it held: ' : ''}${describeOrigin(origin)}: ${describeError(err)}`, { origin });
    if (failing) {
      process.exit(FAILED_EXIT_CODE);
      return;
    }
    failing = true;
    if (o.cleanup === undefined) {
      process.exit(FAILED_EXIT_CODE);
      return;
    }
    exitAfter(o.cleanup, o.ops, o.cleanupMs);
  });
}

/** Runs `cleanup` for at most `ms` (cleanupWithin), then exits with FAILED_EXIT_CODE. */
export function exitAfter(cleanup: () => Promise<void>, ops: OpsLog, ms = CLEANUP_MS): void {
  void cleanupWithin(cleanup, ms, ops).then(() => process.exit(FAILED_EXIT_CODE));
}

/** Runs `cleanup` for at most `ms`; its rejection is logged, not thrown. */
async function cleanupWithin(cleanup: () => Promise<void>, ms: number, ops: OpsLog): Promise<void> {
  let timer: NodeJS.Timeout | null = null;
  const timeout = new Promise<void>((resolve) => {
    timer = setTimeout(() => {
      ops.warn('crash', `what the process held was not all saved within ${ms} ms; exiting`);
      resolve();
    }, ms);
  });
  try {
    await Promise.race([cleanup(), timeout]);
  } catch (err) {
    ops.error('crash', `saving what the process held failed: ${describeError(err)}`);
  } finally {
    if (timer !== null) clearTimeout(timer);
  }
}

function describeOrigin(origin: string): string {
  return origin === 'unhandledRejection' ? 'a promise rejected with nothing to handle it' : 'an exception nothing caught';
}

/** The error's stack (its message first), or what was thrown when it is not an Error. */
export function describeError(err: unknown): string {
  if (err instanceof Error) return err.stack ?? `${err.name}: ${err.message}`;
  try {
    return `a non-Error value was thrown: ${typeof err === 'string' ? err : JSON.stringify(err)}`;
  } catch {
    return `a non-Error value was thrown: ${String(err)}`;
  }
}
