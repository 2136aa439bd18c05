/**
 * An admission that would fit if the leases still out came back (the scripts' STATUS_RECALLING)
 * is asked again every RECALL_RETRY_MS, for up to RATE_LIMIT_REDIS_RECALL_WAIT (recallWaits);
 * then it is refused by input. The leases' holders give them back within about
 * LEASE_VIEW_MS + LEASE_IDLE_MS / 2 (leases.ts), so a wait ends long before that bound unless a
 * holder is stalled or dead.
 */
export const RECALL_RETRY_MS = 25;

/** How many times an admission is asked again within a wait of `waitMs` (0: it does not wait). */
export function recallWaits(waitMs: number): number {
  return Math.ceil(waitMs / RECALL_RETRY_MS);
}

/** Where admissions the scripts answered STATUS_RECALLING wait (batch.ts, multi-batch.ts). */
export interface Recalling<T> {
  /** Takes one to ask again later; false when it may not wait longer (it is refused by input then). */
  take(a: T): boolean;
  /** One that waited got its final answer (metrics). */
  ended(admitted: boolean): void;
}

/**
 * The admissions of one kind waiting to be asked again while leases come back: one timer for all
 * of them; `askAgain` gets them together when it fires (or at once when the limiter closes).
 */
export class RecallWaits<T extends { waits: number }> implements Recalling<T> {
  private queued: T[] = [];
  private timer: NodeJS.Timeout | null = null;
  private closed = false;

  /** `maxWaits`: asks again at most this many times (recallWaits); `onEnded`: an admission that waited got its final answer (metrics). */
  constructor(
    private readonly askAgain: (admissions: readonly T[]) => void,
    private readonly maxWaits: number,
    private readonly onEnded: ((admitted: boolean) => void) | null = null,
  ) {}

  /** Takes an admission to ask again later; false when it may not wait longer (or the limiter closes). */
  take(a: T): boolean {
    if (this.closed || a.waits >= this.maxWaits) return false;
    a.waits++;
    this.queued.push(a);
    if (this.timer === null) this.timer = setTimeout(this.fire, RECALL_RETRY_MS);
    return true;
  }

  ended(admitted: boolean): void {
    if (this.onEnded !== null) this.onEnded(admitted);
  }

  /** Asks every waiting admission again now and takes no more: their next answer is final. */
  close(): void {
    this.closed = true;
    if (this.timer !== null) clearTimeout(this.timer);
    this.fire();
  }

  private readonly fire = (): void => {
    this.timer = null;
    if (this.queued.length === 0) return;
    const queued = this.queued;
    this.queued = [];
    this.askAgain(queued);
  };
}
