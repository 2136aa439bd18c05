import type { CounterStore, RawTerm } from './counter-store.js';
import { NO_LIMIT } from '../decision-codec.js';
import {
  limitMessageType, MSG_RECALL, MSG_REPLY, MSG_REQUEST, MSG_USAGE, OP_ADJUST_INPUT, OP_ADMIT, OP_ADMIT_ALL, OP_ADMIT_TERM,
  OP_ADMIT_TERM_SHADOW, OP_CHARGE_OUTPUT, OP_LEASE_USED,
  OP_RETURN_LEASE,
  REPLY_INVALID, REQUEST_STRIDE, type LimitReplyMessage,
} from './ipc-protocol.js';
import { LeaseBook } from './lease-book.js';
import { isWindowUnit } from '../windows.js';
import { checkTokenCount, checkTokenDelta } from '../token-amounts.js';

/** What the host needs of a cluster worker (node:cluster Worker satisfies it). */
export interface LimitHostWorker {
  send(message: LimitReplyMessage, sendHandle: undefined, callback: (error: Error | null) => void): boolean;
  isConnected(): boolean;
}

/** What the host needs of node:cluster (the Cluster object satisfies it); `exit` events are optional. */
export interface LimitHostCluster {
  on(event: 'message' | 'exit', listener: (worker: LimitHostWorker, message: unknown) => void): unknown;
  off(event: 'message' | 'exit', listener: (worker: LimitHostWorker, message: unknown) => void): unknown;
}

export interface LocalLimitHostOptions {
  /** Called for malformed `rl:` messages and ops (a bug in a worker); default: ignore. */
  onInvalid?: (reason: string) => void;
  /**
   * A worker's lease holds what is free divided by this; 0 = no leases (every decision asks the
   * primary). Default 16; the router uses 8 × its worker count.
   */
  leaseDivisor?: number;
  /** A recalled lease not back within this many ms is forfeited (stays charged). Default 250. */
  recallTimeoutMs?: number;
}

/** What goes to one worker at the end of the turn: answers first, then recalls, then usage updates. */
interface Outbox {
  replies: number[];
  recalls: number[];
  usage: number[];
}

/**
 * Primary side of the local mode: the one CounterStore of the router instance decides for all
 * workers, so decisions are serialized and exact per instance; the LeaseBook lends workers
 * slices of the budget so most requests are decided in the worker without a message (see
 * lease-book.ts for why that stays exact). Requests are handled as they arrive; what goes to one
 * worker during an event loop turn is sent as one reply message (then one recall message, never
 * before the answers that granted the leases it names) on setImmediate.
 * Returns a function that detaches the host.
 */
export function attachLocalLimitHost(
  cluster: LimitHostCluster,
  store: CounterStore,
  options: LocalLimitHostOptions = {},
): () => void {
  const onInvalid = options.onInvalid ?? ignore;
  /** The terms of each worker's multi-limit admission being received (OP_ADMIT_TERM .. OP_ADMIT_ALL). */
  const terms = new Map<LimitHostWorker, RawTerm[] | null>();
  const outboxes = new Map<LimitHostWorker, Outbox>();
  let flushScheduled = false;

  const flush = (): void => {
    // Usage updates first: they may add to the outboxes (flushScheduled still set: no new turn).
    book.publish();
    flushScheduled = false;
    for (const [worker, box] of outboxes) {
      // A worker that went away gets nothing; its client fails its own pending decisions.
      if (!worker.isConnected()) continue;
      if (box.replies.length > 0) worker.send({ t: MSG_REPLY, a: box.replies }, undefined, ignoreSendError);
      if (box.recalls.length > 0) worker.send({ t: MSG_RECALL, a: box.recalls }, undefined, ignoreSendError);
      if (box.usage.length > 0) worker.send({ t: MSG_USAGE, a: box.usage }, undefined, ignoreSendError);
    }
    outboxes.clear();
  };
  const scheduleFlush = (): void => {
    if (!flushScheduled) {
      flushScheduled = true;
      setImmediate(flush);
    }
  };
  const outbox = (worker: LimitHostWorker): Outbox => {
    let box = outboxes.get(worker);
    if (box === undefined) {
      box = { replies: [], recalls: [], usage: [] };
      outboxes.set(worker, box);
    }
    scheduleFlush();
    return box;
  };

  const book = new LeaseBook<LimitHostWorker>(store, {
    divisor: options.leaseDivisor ?? 16,
    recallTimeoutMs: options.recallTimeoutMs ?? 250,
    replyTo: (worker) => outbox(worker).replies,
    recall: (worker, ids) => {
      outbox(worker).recalls.push(...ids);
    },
    usageTo: (worker) => outbox(worker).usage,
    changed: scheduleFlush,
  });

  const onMessage = (worker: LimitHostWorker, message: unknown): void => {
    // Only requests; other `rl:` types (e.g. replies echoed in tests) are not ours to handle.
    if (limitMessageType(message) !== MSG_REQUEST) return;
    const a = (message as { a?: unknown }).a;
    if (!Array.isArray(a) || a.length % REQUEST_STRIDE !== 0) {
      onInvalid(`malformed rate limit request: "a" must be an array of ${REQUEST_STRIDE}-entry ops`);
      return;
    }
    for (let i = 0; i < a.length; i += REQUEST_STRIDE) handleOp(book, worker, a, i, onInvalid, outbox, terms);
  };
  const onExit = (worker: LimitHostWorker): void => {
    terms.delete(worker);
    book.forgetWorker(worker);
  };

  cluster.on('message', onMessage);
  cluster.on('exit', onExit);
  return () => {
    cluster.off('message', onMessage);
    cluster.off('exit', onExit);
    book.close();
  };
}

function handleOp(
  book: LeaseBook<LimitHostWorker>, worker: LimitHostWorker, a: unknown[], i: number,
  onInvalid: (reason: string) => void, outbox: (w: LimitHostWorker) => Outbox, terms: Map<LimitHostWorker, RawTerm[] | null>,
): void {
  const op = a[i];
  const id = a[i + 1];
  const key = a[i + 2];
  const unit = a[i + 5];
  const amount = a[i + 6];
  try {
    if (typeof key !== 'string' || !isWindowUnit(unit) || typeof amount !== 'number' || typeof id !== 'number') {
      throw new TypeError('id, route, unit or amount missing');
    }
    if (op === OP_ADMIT) {
      const inputLimit = limitOf(a[i + 3]);
      const outputLimit = limitOf(a[i + 4]);
      // Checked before the book writes the answer's id (the store checks the other ops' amounts).
      checkTokenCount(amount, 'input tokens');
      book.admit(worker, id, key, inputLimit, outputLimit, unit, amount);
    } else if (op === OP_ADMIT_TERM || op === OP_ADMIT_TERM_SHADOW) {
      const t: RawTerm = { key, inLimit: limitOf(a[i + 3]), outLimit: limitOf(a[i + 4]), unit, shadow: op === OP_ADMIT_TERM_SHADOW };
      const list = terms.get(worker);
      if (list === undefined) terms.set(worker, [t]);
      else if (list !== null) list.push(t);
    } else if (op === OP_ADMIT_ALL) {
      const list = terms.get(worker);
      terms.delete(worker);
      checkTokenCount(amount, 'input tokens');
      if (list === undefined || list === null) throw new TypeError('a multi-limit admission without (valid) terms');
      book.admitAll(worker, id, list, amount);
    } else if (op === OP_CHARGE_OUTPUT) {
      book.charge(worker, id, key, unit, amount);
    } else if (op === OP_ADJUST_INPUT) {
      book.adjust(key, unit, amount);
    } else if (op === OP_LEASE_USED) {
      checkTokenDelta(amount, 'input used from a lease');
      book.leaseUsed(worker, id, key, unit, amount);
    } else if (op === OP_RETURN_LEASE) {
      checkTokenDelta(amount, 'unused lease tokens');
      book.giveBack(worker, id, key, unit, amount);
    } else {
      throw new TypeError(`unknown op ${String(op)}`);
    }
  } catch (err) {
    onInvalid(`invalid rate limit op ${String(op)} for route ${String(key)}: ${(err as Error).message}`);
    // A bad term spoils its admission: OP_ADMIT_ALL then gets the malformed answer.
    if (op === OP_ADMIT_TERM || op === OP_ADMIT_TERM_SHADOW) terms.set(worker, null);
    if ((op === OP_ADMIT || op === OP_ADMIT_ALL) && typeof id === 'number') {
      outbox(worker).replies.push(id, REPLY_INVALID, 0, NO_LIMIT, 0, 0, NO_LIMIT, 0, 0, 0, 0, 0, 0);
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
