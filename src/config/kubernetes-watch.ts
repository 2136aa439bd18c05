/**
 * A client-node Watch with reconnect backoff, handed to ListWatch in place of the plain Watch.
 *
 * ListWatch (client-node 1.x) starts a new watch as soon as one ends cleanly. That is right after
 * a normal server-side timeout, but against an API server (or proxy) that keeps ending watches
 * at once it would loop without pause. So: the first reconnect after a watch that delivered events
 * (bookmarks count) is immediate; after a watch that ended with none, the next waits 1 s, then
 * 2 s, ... up to 30 s. Failures (non-200, broken streams) are not handled here: ListWatch reports
 * them and the informer restarts it with its own backoff.
 *
 * 410 Gone (an ERROR event with code 410, or an HTTP 410) makes ListWatch relist at once, which is
 * right when the watch had made progress. But a watch that is answered 410 again right after that
 * relist, with no event in between (an API server, or a proxy in front of several, whose watch cache
 * lags behind the list), would have ListWatch list everything again at once, in a loop: hundreds
 * of full lists a second. So the first 410 of a streak relists at once; each further one in a row
 * (no event delivered since) waits 1 s, then 2 s, ... up to 30 s before the relist, and says so.
 */
import type { Watch } from '@kubernetes/client-node';
import type { SourceClock } from './kubernetes-clock.js';

type WatchCallback = (phase: string, apiObj: any, watchObj?: any) => void;
type DoneCallback = (err: any) => void;
type QueryParams = Record<string, string | number | boolean | undefined>;

const BASE_DELAY_MS = 1000;
const MAX_DELAY_MS = 30_000;

export class BackoffWatch {
  /** Consecutive watches that ended cleanly without delivering any event. */
  private quietEnds = 0;
  /** Consecutive watches answered 410 Gone without delivering any other event (each then relists). */
  private goneEnds = 0;
  private cancelled = false;
  private pending: { handle: unknown; resolve: () => void } | null = null;

  /** `log` tells when a relist is held back (see the module comment). */
  constructor(private readonly inner: Watch, private readonly clock: SourceClock, private readonly log: (msg: string) => void = () => {}) {}

  /** Same contract as Watch.watch. */
  async watch(path: string, query: QueryParams, callback: WatchCallback, done: DoneCallback): Promise<AbortController> {
    if (this.quietEnds > 0) await this.delay(Math.min(BASE_DELAY_MS * 2 ** (this.quietEnds - 1), MAX_DELAY_MS));
    if (this.cancelled) {
      const idle = new AbortController();
      idle.abort();
      return idle;
    }
    /** Events other than ERROR (ADDED, MODIFIED, DELETED, BOOKMARK): the watch made progress. */
    let events = 0;
    let gone = false;
    const counted: WatchCallback = (phase, obj, watchObj) => {
      if (phase === 'ERROR') gone ||= isGone(obj);
      else events++;
      callback(phase, obj, watchObj);
    };
    const finished: DoneCallback = (err) => {
      if (events > 0) {
        this.quietEnds = 0;
        this.goneEnds = 0;
      } else if (gone || isGone(err)) {
        this.quietEnds = 0;
        this.goneEnds++;
        if (this.goneEnds > 1) {
          const ms = Math.min(BASE_DELAY_MS * 2 ** (this.goneEnds - 2), MAX_DELAY_MS);
          this.log(`watch answered 410 Gone (resourceVersion too old) ${this.goneEnds} times in a row, right after relisting; relisting in ${ms} ms`);
          void this.delay(ms).then(() => {
            if (!this.cancelled) done(err);
          });
          return;
        }
      } else if (err) {
        this.quietEnds = 0;
      } else {
        this.quietEnds++;
      }
      done(err);
    };
    return this.inner.watch(path, query, counted, finished);
  }

  /** Allows watching again after cancel() (an informer restart). */
  resume(): void {
    this.cancelled = false;
  }

  /** A pending delay ends now and no new watch starts (the informer stopped). */
  cancel(): void {
    this.cancelled = true;
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

/** A 410 Gone: a watch ERROR event's Status, or the error of a watch answered HTTP 410. */
function isGone(v: unknown): boolean {
  if (v === null || typeof v !== 'object') return false;
  const o = v as { code?: unknown; statusCode?: unknown };
  return o.code === 410 || o.statusCode === 410;
}
