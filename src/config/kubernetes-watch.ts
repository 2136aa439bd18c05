/**
 * A client-node Watch with reconnect backoff, handed to ListWatch in place of the plain Watch.
 *
 * ListWatch (client-node 1.x) starts a new watch as soon as one ends cleanly. That is right after
 * a normal server-side timeout, but against an API server (or proxy) that keeps ending watches
 * at once it would loop without pause. So: the first reconnect after a watch that delivered events
 * (bookmarks count) is immediate; after a watch that ended with none, the next waits 1 s, then
 * 2 s, ... up to 30 s. Failures (non-200, broken streams) are not handled here: ListWatch reports
 * them and the informer restarts it with its own backoff.
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
  private cancelled = false;
  private pending: { handle: unknown; resolve: () => void } | null = null;

  constructor(private readonly inner: Watch, private readonly clock: SourceClock) {}

  /** Same contract as Watch.watch. */
  async watch(path: string, query: QueryParams, callback: WatchCallback, done: DoneCallback): Promise<AbortController> {
    if (this.quietEnds > 0) await this.delay(Math.min(BASE_DELAY_MS * 2 ** (this.quietEnds - 1), MAX_DELAY_MS));
    if (this.cancelled) {
      const idle = new AbortController();
      idle.abort();
      return idle;
    }
    let events = 0;
    const counted: WatchCallback = (phase, obj, watchObj) => {
      events++;
      callback(phase, obj, watchObj);
    };
    const finished: DoneCallback = (err) => {
      if (err) this.quietEnds = 0;
      else if (events > 0) this.quietEnds = 0;
      else this.quietEnds++;
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
