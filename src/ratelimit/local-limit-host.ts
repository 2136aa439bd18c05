import type { CounterStore } from './counter-store.js';
import { NO_LIMIT } from './decision-codec.js';
import {
  limitMessageType, MSG_REPLY, MSG_REQUEST, OP_ADJUST_INPUT, OP_ADMIT, OP_CHARGE_OUTPUT, REPLY_INVALID, REQUEST_STRIDE,
  type LimitReplyMessage,
} from './ipc-protocol.js';
import { isWindowUnit } from './windows.js';

/** What the host needs of a cluster worker (node:cluster Worker satisfies it). */
export interface LimitHostWorker {
  send(message: LimitReplyMessage, sendHandle: undefined, callback: (error: Error | null) => void): boolean;
  isConnected(): boolean;
}

/** What the host needs of node:cluster (the Cluster object satisfies it). */
export interface LimitHostCluster {
  on(event: 'message', listener: (worker: LimitHostWorker, message: unknown) => void): unknown;
  off(event: 'message', listener: (worker: LimitHostWorker, message: unknown) => void): unknown;
}

export interface LocalLimitHostOptions {
  /** Called for malformed `rl:` messages and ops (a bug in a worker); default: ignore. */
  onInvalid?: (reason: string) => void;
}

/**
 * Primary side of the local mode: the one CounterStore of the router instance decides for all
 * workers, so decisions are serialized and exact per instance. Requests are handled as they
 * arrive (synchronously, no queue); answers to one worker are collected during an event loop
 * turn and sent as one message (setImmediate), so a worker's batch costs one send each way.
 * Returns a function that detaches the host.
 */
export function attachLocalLimitHost(
  cluster: LimitHostCluster,
  store: CounterStore,
  options: LocalLimitHostOptions = {},
): () => void {
  const onInvalid = options.onInvalid ?? ignore;
  const replies = new Map<LimitHostWorker, number[]>();
  let flushScheduled = false;

  const flush = (): void => {
    flushScheduled = false;
    for (const [worker, a] of replies) {
      // A worker that went away gets nothing; its client fails its own pending decisions.
      if (worker.isConnected()) worker.send({ t: MSG_REPLY, a }, undefined, ignoreSendError);
    }
    replies.clear();
  };

  const onMessage = (worker: LimitHostWorker, message: unknown): void => {
    // Only requests; other `rl:` types (e.g. replies echoed in tests) are not ours to handle.
    if (limitMessageType(message) !== MSG_REQUEST) return;
    const a = (message as { a?: unknown }).a;
    if (!Array.isArray(a) || a.length % REQUEST_STRIDE !== 0) {
      onInvalid(`malformed rate limit request: "a" must be an array of ${REQUEST_STRIDE}-entry ops`);
      return;
    }
    let out = replies.get(worker);
    if (out === undefined) {
      out = [];
      replies.set(worker, out);
    }
    const before = out.length;
    for (let i = 0; i < a.length; i += REQUEST_STRIDE) handleOp(store, a, i, out, onInvalid);
    if (out.length > before && !flushScheduled) {
      flushScheduled = true;
      setImmediate(flush);
    }
  };

  cluster.on('message', onMessage);
  return () => {
    cluster.off('message', onMessage);
  };
}

function handleOp(store: CounterStore, a: unknown[], i: number, out: number[], onInvalid: (reason: string) => void): void {
  const op = a[i];
  const id = a[i + 1];
  const route = a[i + 2];
  const inputLimit = a[i + 3];
  const outputLimit = a[i + 4];
  const unit = a[i + 5];
  const amount = a[i + 6];
  const mark = out.length;
  try {
    if (typeof route !== 'string' || !isWindowUnit(unit) || typeof amount !== 'number') {
      throw new TypeError('route, unit or amount missing');
    }
    if (op === OP_ADMIT) {
      if (typeof id !== 'number') throw new TypeError('admit without an id');
      out.push(id);
      store.admitInto(out, route, limitOf(inputLimit), limitOf(outputLimit), unit, amount);
    } else if (op === OP_CHARGE_OUTPUT) {
      store.chargeOutputRaw(route, unit, amount);
    } else if (op === OP_ADJUST_INPUT) {
      store.adjustInputRaw(route, unit, amount);
    } else {
      throw new TypeError(`unknown op ${String(op)}`);
    }
  } catch (err) {
    out.length = mark;
    onInvalid(`invalid rate limit op ${String(op)} for route ${String(route)}: ${(err as Error).message}`);
    if (op === OP_ADMIT && typeof id === 'number') {
      out.push(id, REPLY_INVALID, 0, NO_LIMIT, 0, 0, NO_LIMIT, 0, 0);
    }
  }
}

function limitOf(v: unknown): number | null {
  if (v === NO_LIMIT) return null;
  if (!Number.isSafeInteger(v) || (v as number) <= 0) throw new TypeError(`invalid limit ${String(v)}`);
  return v as number;
}

function ignore(): void {}
function ignoreSendError(): void {}
