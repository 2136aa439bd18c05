import type { OpsLine } from './startup-lines.js';

/**
 * Workers still running this long after ROUTER_DRAIN_DELAY + ROUTER_DRAIN_TIMEOUT from the drain's
 * start are killed (SIGKILL): a service manager's stop timeout must outlast the three
 * (deploy/systemd/inference-router.service's TimeoutStopSec).
 */
export const WORKER_KILL_GRACE_MS = 5_000;

/**
 * The line of a SIGTERM or SIGINT received while a drain is already under way, `elapsedMs` after
 * it began: the drain goes on as it was (the signal changes nothing), how long requests still in
 * flight have left before they are cut (ROUTER_DRAIN_DELAY + ROUTER_DRAIN_TIMEOUT from the drain's
 * start), and that SIGKILL stops the router at once.
 */
export function drainAgainLine(signal: string, elapsedMs: number, delayMs: number, timeoutMs: number): OpsLine {
  const elapsed = Math.max(0, Math.round(elapsedMs));
  const left = Math.max(0, delayMs + timeoutMs - elapsed);
  return {
    message: `${signal} received while a drain is already under way (begun ${elapsed} ms ago): the drain goes on; ` +
      `requests still in flight get at most ${left} ms more (ROUTER_DRAIN_DELAY ${delayMs} ms + ROUTER_DRAIN_TIMEOUT ${timeoutMs} ms from its start), then are cut; ` +
      'SIGKILL stops the router at once (requests in flight and access-log records not yet written are lost)',
    fields: { signal, elapsedMs: elapsed, leftMs: left, delayMs, timeoutMs },
  };
}
