import type { EventEmitter } from 'node:events';

/** Errors of a message sent to a worker whose IPC channel is already gone: it died, and its 'exit' follows. */
const CHANNEL_GONE: ReadonlySet<string> = new Set(['EPIPE', 'ECONNRESET', 'ERR_IPC_CHANNEL_CLOSED']);

/**
 * A worker killed outright (SIGKILL, the OOM killer) stays `isConnected()` until its channel's
 * close is noticed; a message sent to it in between fails later with an 'error' event on the
 * Worker, which without a listener would end the primary. Every sender in the primary (limits,
 * metrics, pod load, core messages) goes through the worker's `send`, so one listener per worker
 * covers them all: a message to a dead worker is dropped (the 'exit' handler restarts it), any
 * other error is logged.
 */
export function dropMessagesToDeadWorker(worker: EventEmitter, log: (message: string) => void): void {
  worker.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code !== undefined && CHANNEL_GONE.has(err.code)) return;
    log(`message to a worker failed: ${err.message}`);
  });
}
