/**
 * A client-node Watch with reconnect backoff, handed to ListWatch in place of the plain Watch.
 *
 * ListWatch (client-node 1.x) starts a new watch as soon as one ends cleanly. That is right after
 * a normal server-side timeout, but against an API server (or proxy) that keeps ending watches
 * at once it would loop without pause. So: the first reconnect after a watch that delivered events
 * (bookmarks count), or that lasted SHORT_WATCH_MS or more (a quiet watch ended by its timeout,
 * from an API server that sends no bookmarks), is immediate; after a short watch that ended with
 * none, the next waits 1 s, then 2 s, ... up to 30 s. Failures (non-200, broken streams) are not
 * handled here: ListWatch reports them and the informer restarts it with its own backoff.
 *
 * 410 Gone (an ERROR event with code 410, or an HTTP 410) makes ListWatch relist at once, which is
 * right when the watch had made progress. But a watch that is answered 410 again right after that
 * relist, with no event in between (an API server, or a proxy in front of several, whose watch cache
 * lags behind the list), would have ListWatch list everything again at once, in a loop: hundreds
 * of full lists a second. So the first 410 of a streak relists at once; each further one in a row
 * (no event delivered since, the watch ended within SHORT_WATCH_MS) waits 1 s, then 2 s, ... up to
 * 30 s before the relist, and says so. A 410 on a watch that stayed open longer, or after one that
 * did and ended cleanly, starts a new streak.
 *
 * Another ERROR event (a Status the API server sends on a watch it answered 200: `etcdserver:
 * request timed out`, a 500; `Too large resource version`, a 504 from an API server whose watch
 * cache is behind the resourceVersion asked for) ends the watch as a failure, which the informer
 * logs, counts and retries with its backoff, where ListWatch would have resumed at once from the
 * same resourceVersion, silently, in a loop. `Too large resource version` relists, as client-go does.
 *
 * The first event a watch delivers (a change or a bookmark) is reported (`progressed`): the watch
 * works, so the informer starts its failure backoff over. A watch answered and open is reported
 * too (`health(true)`), and a reconnect or relist held back by either backoff above (`health(false)`):
 * the informer's health (metrics: inference_router_kubernetes_watch_healthy).
 *
 * A watch that delivers nothing for `idleMs` is taken for dead: the API server ends every watch
 * after the timeout the informer asks for (and sends bookmarks meanwhile), so a stream still open
 * and silent past it is an API server that hangs, or a connection lost without a reset (a node
 * or a load balancer gone), which would otherwise hold the last state for as long as TCP keeps
 * the socket: forever against a peer that still answers at the TCP level. It is aborted and
 * reported as a failure, so the informer logs it and resumes from the last resourceVersion. The
 * same holds for a watch request that gets no answer at all. This watchdog runs on real time (it
 * is minutes long, and only a lost connection ever reaches it), not on the injected clock.
 */
import type { Watch } from '@kubernetes/client-node';
import type { SourceClock } from './kubernetes-clock.js';

type WatchCallback = (phase: string, apiObj: any, watchObj?: any) => void;
type DoneCallback = (err: any) => void;
type QueryParams = Record<string, string | number | boolean | undefined>;

const BASE_DELAY_MS = 1000;
const MAX_DELAY_MS = 30_000;
/** A watch that ends cleanly without events sooner than this (injected clock) counts toward the reconnect backoff. */
const SHORT_WATCH_MS = 1000;

export class BackoffWatch {
  /** Consecutive watches that ended cleanly, short, without delivering any event. */
  private quietEnds = 0;
  /** Consecutive watches answered 410 Gone without delivering any other event (each then relists). */
  private goneEnds = 0;
  private cancelled = false;
  /** Counts cancel() calls: a watch answered after one (its request was in flight) is closed at once. */
  private cancels = 0;
  private pending: { handle: unknown; resolve: () => void } | null = null;
  /** The inner watches still open, aborted by cancel(). */
  private readonly open = new Set<AbortController>();

  /**
   * `log` tells when a relist is held back; `idleMs`: a watch silent this long is aborted (see
   * the module comment; Infinity = never); `progressed`: called on each watch's first event other
   * than ERROR.
   */
  constructor(
    private readonly inner: Watch,
    private readonly clock: SourceClock,
    private readonly log: (msg: string, level?: 'warn') => void = () => {},
    private readonly idleMs = Number.POSITIVE_INFINITY,
    private readonly progressed: () => void = () => {},
    /** What of an event's object to pass on (ADDED, MODIFIED, DELETED): the watcher keeps it. */
    private readonly keep: (obj: any) => any = (obj) => obj,
    /**
     * Told true when a watch is established (answered 200 and still open), false when a reconnect
     * or a relist is held back (watches ending at once without events, 410 Gone right after relisting).
     */
    private readonly health: (established: boolean) => void = () => {},
  ) {}

  /** Same contract as Watch.watch. */
  async watch(path: string, query: QueryParams, callback: WatchCallback, done: DoneCallback): Promise<AbortController> {
    if (this.quietEnds > 0) {
      this.health(false);
      await this.delay(Math.min(BASE_DELAY_MS * 2 ** (this.quietEnds - 1), MAX_DELAY_MS));
    }
    if (this.cancelled) {
      const idle = new AbortController();
      idle.abort();
      return idle;
    }
    const cancelsAtStart = this.cancels;
    /** Events other than ERROR (ADDED, MODIFIED, DELETED, BOOKMARK): the watch made progress. */
    let events = 0;
    let gone = false;
    /** The first ERROR event other than a relist's (410 Gone, too large a resourceVersion): the watch failed. */
    let failure: Error | null = null;
    /** Once ended (by its stream, or by the watchdog), a watch delivers nothing more. */
    let ended = false;
    let lastEventAt = Date.now();
    const startedAt = this.clock.now();
    let watchdog: NodeJS.Timeout | null = null;
    let controller: AbortController | null = null;
    const counted: WatchCallback = (phase, obj, watchObj) => {
      if (ended) return;
      lastEventAt = Date.now();
      if (phase === 'ERROR') {
        if (isGone(obj) || isTooLargeVersion(obj)) gone = true;
        else failure ??= watchStatusError(obj);
      } else if (events++ === 0) this.progressed();
      callback(phase, phase === 'ERROR' || phase === 'BOOKMARK' ? obj : this.keep(obj), watchObj);
    };
    const finished: DoneCallback = (cause) => {
      if (ended) return;
      ended = true;
      // A failure its Status said; a relist asked for by one (ListWatch relists on a 410 alone).
      const err = cause ?? failure ?? (gone ? RELIST : cause);
      if (watchdog !== null) clearTimeout(watchdog);
      if (controller !== null) this.open.delete(controller);
      if (events > 0) {
        this.quietEnds = 0;
        this.goneEnds = 0;
      } else if (gone || isGone(err)) {
        this.quietEnds = 0;
        // A watch that stayed open a while before its 410 did not follow a relist at once.
        this.goneEnds = this.clock.now() - startedAt >= SHORT_WATCH_MS ? 1 : this.goneEnds + 1;
        if (this.goneEnds > 1) {
          const ms = Math.min(BASE_DELAY_MS * 2 ** (this.goneEnds - 2), MAX_DELAY_MS);
          this.log(`watch answered 410 Gone (resourceVersion too old) ${this.goneEnds} times in a row, right after relisting; relisting in ${ms} ms`, 'warn');
          this.health(false);
          void this.delay(ms).then(() => {
            if (!this.cancelled) done(err);
          });
          return;
        }
      } else if (err || this.clock.now() - startedAt >= SHORT_WATCH_MS) {
        this.quietEnds = 0;
        // A watch that stayed open, quiet, after a relist: the relist worked, a later 410 starts a new streak.
        if (!err) this.goneEnds = 0;
      } else {
        this.quietEnds++;
      }
      done(err);
    };
    if (Number.isFinite(this.idleMs)) {
      const check = (): void => {
        watchdog = null;
        if (ended) return;
        const idle = Date.now() - lastEventAt;
        if (idle < this.idleMs) {
          watchdog = setTimeout(check, this.idleMs - idle);
          watchdog.unref();
          return;
        }
        const c = controller;
        finished(new Error(`watch delivered nothing for ${formatSeconds(idle)} (the API server ends a watch sooner): the connection is taken for dead`));
        c?.abort(); // after finished(): the abort's own end of the stream is then ignored
      };
      watchdog = setTimeout(check, this.idleMs);
      watchdog.unref();
    }
    const c = await this.inner.watch(path, query, counted, finished);
    if (ended || this.cancels !== cancelsAtStart) {
      // Answered after the watchdog gave up on it, or after cancel(): nothing more from it.
      ended = true;
      if (watchdog !== null) clearTimeout(watchdog);
      c.abort();
    } else {
      controller = c;
      this.open.add(c);
      this.health(true);
    }
    return c;
  }

  /** Allows watching again after cancel() (an informer restart). */
  resume(): void {
    this.cancelled = false;
  }

  /** A pending delay ends now, no new watch starts, and one whose request is in flight is closed once answered (the informer stopped). */
  cancel(): void {
    this.cancelled = true;
    this.cancels++;
    for (const c of this.open) c.abort();
    this.open.clear();
    if (this.pending !== null) {
      this.clock.clearTimeout(this.pending.handle);
      this.pending.resolve();
      this.pending = null;
    }
  }

  private delay(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const handle = this.clock.setTimeout(() => {
        this.pending = null;
        resolve();
      }, ms);
      this.pending = { handle, resolve };
    });
  }
}

/** What ListWatch relists on (a 410): given when a Status other than 410 Gone asks for a relist. */
const RELIST = Object.assign(new Error('relist'), { code: 410 });

/**
 * `Too large resource version`: the API server's watch cache is behind the resourceVersion asked
 * for (a 504 Status with reason Timeout and a ResourceVersionTooLarge cause); client-go relists.
 */
function isTooLargeVersion(v: unknown): boolean {
  if (v === null || typeof v !== 'object') return false;
  const o = v as { message?: unknown; details?: { causes?: { reason?: unknown }[] } };
  if (Array.isArray(o.details?.causes) && o.details!.causes.some((c) => c?.reason === 'ResourceVersionTooLarge')) return true;
  return typeof o.message === 'string' && o.message.includes('Too large resource version');
}

/** The failure an ERROR event's Status says (its code and message, as a list's refusal is told). */
function watchStatusError(v: unknown): Error {
  const o = (v !== null && typeof v === 'object' ? v : {}) as { code?: unknown; message?: unknown; reason?: unknown };
  const message = typeof o.message === 'string' && o.message !== '' ? o.message : typeof o.reason === 'string' ? o.reason : 'an ERROR event';
  return Object.assign(new Error(`watch ended by the API server: ${message}`), typeof o.code === 'number' ? { statusCode: o.code } : {});
}

/** A 410 Gone: a watch ERROR event's Status, or the error of a watch answered HTTP 410. */
function isGone(v: unknown): boolean {
  if (v === null || typeof v !== 'object') return false;
  const o = v as { code?: unknown; statusCode?: unknown };
  return o.code === 410 || o.statusCode === 410;
}

function formatSeconds(ms: number): string {
  return ms < 10_000 ? `${(ms / 1000).toFixed(1)} s` : `${Math.round(ms / 1000)} s`;
}
