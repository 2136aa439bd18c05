/**
 * A certificate rotation's rolling replacement (tls-rotation.ts decides when; this does it): for
 * each worker that opened an earlier pair, one at a time, a new worker (opening the new pair's
 * copy) is started and waited for until it listens with the configuration applied; then the old
 * one drains alone (core:retire: its listener closed, its requests finished, its kept-alive
 * connections ended as they go quiet). The port is served throughout.
 *
 * The number of workers stays the one configured in every outcome: `exited` tells the primary,
 * for each worker that exits, whether it is restarted. A new worker that exits while the worker it
 * was to replace still runs is not (that one keeps serving; the rotation stops, and is tried
 * again); a worker that exits while its replacement is already started is not (the replacement
 * takes its place), unless the replacement exits too. Every worker is forked through `fork`, which
 * notes which pair it opened, so a rotation tried again replaces only those still serving an
 * earlier one.
 */
import type { ListenerTlsPair } from '../config/listener-tls.js';
import { until, type Timers } from '../timers.js';
import type { PrimaryToWorker } from './messages.js';

/** What the rolling replacement uses of a cluster worker (node:cluster's Worker has it). */
export interface RollWorker {
  readonly id: number;
  readonly process: { readonly pid?: number };
  isDead(): boolean;
  send(m: PrimaryToWorker): unknown;
}

export interface RollingReplacementOptions<W extends RollWorker> {
  /** The cluster's workers now (dead ones may be among them). */
  readonly workers: () => Iterable<W>;
  /** Forks a worker; it opens the pair `write` copied last. */
  readonly fork: () => W;
  /** Copies `pair` for the workers forked from now on (tls-served-files.ts). */
  readonly write: (pair: ListenerTlsPair) => void;
  /** Removes the copies of earlier pairs (no worker opens them any more). */
  readonly prune: () => void;
  /** Whether the worker listens. */
  readonly listening: (w: W) => boolean;
  /** Whether the worker listens with the configuration applied (it can take the place of another). */
  readonly serving: (w: W) => boolean;
  /** The worker was told to drain alone: it no longer counts as listening. */
  readonly retired: (w: W) => void;
  /** The router drains. */
  readonly stopping: () => boolean;
  readonly timers: Timers;
}

/**
 * What an exited worker was, for the primary: `retired`, drained after core:retire; `replaced`,
 * a worker whose replacement (`by`) is started; `spare`, a rotation's new worker while the one it
 * was to replace (`replaces`) still runs. Neither is restarted. Any other (`worker`) is.
 */
export type ExitedRole<W> =
  | { readonly role: 'retired' }
  | { readonly role: 'replaced'; readonly by: W }
  | { readonly role: 'spare'; readonly replaces: W }
  | { readonly role: 'worker' };

export class RollingReplacement<W extends RollWorker> {
  private readonly o: RollingReplacementOptions<W>;
  /** Workers told to drain alone (core:retire). */
  private readonly retiring = new Set<number>();
  /** By worker, the number of the pair it opened (`pairNo` when it was forked). */
  private readonly pairOf = new Map<number, number>();
  /** The pair copied last, and its number. */
  private written: ListenerTlsPair | null = null;
  private pairNo = 0;
  /** By new worker, the worker it is to replace (while both run and the old one is not retired). */
  private readonly standIn = new Map<number, W>();
  /** By worker being replaced, its new worker. */
  private readonly replacedBy = new Map<number, W>();

  constructor(opts: RollingReplacementOptions<W>) {
    this.o = opts;
  }

  /** Forks a worker (every worker of the primary is forked here). */
  fork(): W {
    const w = this.o.fork();
    this.pairOf.set(w.id, this.pairNo);
    return w;
  }

  /** A worker exited: what it was, and so whether it is restarted (only `worker`). */
  exited(w: W): ExitedRole<W> {
    this.pairOf.delete(w.id);
    if (this.retiring.delete(w.id)) return { role: 'retired' };
    const by = this.replacedBy.get(w.id);
    if (by !== undefined) {
      this.replacedBy.delete(w.id);
      // Its new worker takes its place: from now on, that one's death is restarted.
      this.standIn.delete(by.id);
      if (!by.isDead()) return { role: 'replaced', by };
    }
    const replaces = this.standIn.get(w.id);
    if (replaces !== undefined) {
      this.standIn.delete(w.id);
      this.replacedBy.delete(replaces.id);
      if (!replaces.isDead()) return { role: 'spare', replaces };
    }
    return { role: 'worker' };
  }

  /**
   * Rolls `pair` out: each worker that opened an earlier pair is replaced, one at a time. Resolves
   * once those replaced have exited; rejects when a new worker exits before it takes the other's
   * place (the workers replaced so far serve `pair`, the others what they served), or when the
   * router drains.
   */
  async roll(pair: ListenerTlsPair): Promise<void> {
    if (this.written === null || this.written.certPem !== pair.certPem || this.written.keyPem !== pair.keyPem) {
      this.o.write(pair);
      this.written = pair;
      this.pairNo++;
    }
    const retired: W[] = [];
    for (let w = this.nextOld(); w !== null; w = this.nextOld()) {
      if (this.o.stopping()) throw new Error('the router is stopping');
      const next = await this.startFor(w);
      if (await this.replace(w, next)) retired.push(w);
    }
    if (this.o.stopping()) throw new Error('the router is stopping');
    await until(() => retired.every((w) => w.isDead()), this.o.timers);
    this.o.prune();
  }

  /** A running worker, not draining, that opened an earlier pair than the one written last. */
  private nextOld(): W | null {
    for (const w of this.o.workers()) {
      if (!w.isDead() && !this.retiring.has(w.id) && (this.pairOf.get(w.id) ?? -1) < this.pairNo) return w;
    }
    return null;
  }

  /** Starts the worker that replaces `w`; resolves once it serves. */
  private async startFor(w: W): Promise<W> {
    const next = this.fork();
    this.standIn.set(next.id, w);
    this.replacedBy.set(w.id, next);
    await until(() => {
      this.check(next, w, ' before listening');
      return this.o.serving(next);
    }, this.o.timers);
    return next;
  }

  /**
   * `next` serves: `w` drains alone, once it listens (one still starting, a crash's restart forked
   * with the previous pair, would not hear core:retire). False when `w` exited meanwhile.
   */
  private async replace(w: W, next: W): Promise<boolean> {
    await until(() => {
      this.check(next, w, ` before worker ${w.process.pid} was retired`);
      return w.isDead() || this.o.listening(w);
    }, this.o.timers);
    this.standIn.delete(next.id);
    this.replacedBy.delete(w.id);
    if (w.isDead()) return false;
    this.retiring.add(w.id);
    w.send({ t: 'core:retire' } satisfies PrimaryToWorker);
    this.o.retired(w);
    return true;
  }

  /** Throws when the rotation cannot go on: `next` exited, or the router drains. */
  private check(next: W, w: W, when: string): void {
    if (next.isDead()) throw new Error(`worker ${next.process.pid}, started to replace worker ${w.process.pid}, exited${when}`);
    if (this.o.stopping()) throw new Error('the router is stopping');
  }
}
