import type { WindowUnit } from '../../config/resource-types.js';

/** Most limit windows whose incarnation is kept at once; past it, those of ended windows are forgotten (then all). */
export const MAX_INCARNATIONS = 100_000;

/** No incarnation (none seen, or the window has none): what a give-back expects then matches no window. */
export const NO_INCARNATION = '0';

interface Seen {
  /** Start of the window, as the script's reply gives it. */
  window: number;
  id: string;
  /** Date.now() when the id replaced another one seen in the same window, else 0. */
  since: number;
  /** Date.now() when the window ends (as far as this worker can tell), for forgetting it. */
  endsAt: number;
}

/**
 * On a Redis Cluster, the incarnation of each limit window this worker has seen: the value of the
 * window's `id` key (lua/counters.ts), created by the node that owns the limit's slot with the
 * window's first admission, lost with the counts when that node restarts empty (another value is
 * created then). A give-back goes with the incarnation the worker saw (`expected`), and the script
 * applies it only if the window's key still holds it; one of an admission begun before the worker
 * saw the incarnation change is dropped here (`keeps`): whatever the key holds now, that admission
 * was charged by another process. Only the store's replies and give-backs touch it.
 */
export class Incarnations {
  private seen = new Map<string, Seen>();

  /**
   * A reply of `base`'s limit of `unit` at `now` (Date.now()) showed `id` (NO_INCARNATION: none) for its
   * window starting at `window`, which ends `msLeft` later. True when it replaced another incarnation
   * this worker saw in that window: charges it made there before are not in the counts any more.
   */
  saw(base: string, unit: WindowUnit, window: number, id: string, msLeft: number, now: number): boolean {
    const k = `${base}\0${unit}`;
    const s = this.seen.get(k);
    // A late reply of an earlier window says nothing of the current one (its `since` stays).
    if (s !== undefined && window < s.window) return false;
    if (s === undefined || s.window !== window) {
      if (s === undefined && this.seen.size >= MAX_INCARNATIONS) this.forget(now);
      this.seen.set(k, { window, id, since: 0, endsAt: now + msLeft });
      return false;
    }
    if (s.id === id) return false;
    // A first incarnation after none seen in the window replaces nothing this worker charged.
    const replaced = s.id !== NO_INCARNATION || s.since > 0;
    s.id = id;
    if (replaced) s.since = now;
    return replaced;
  }

  /** The incarnation a give-back of `base`'s limit of `unit` expects now: the one seen last, or NO_INCARNATION. */
  expected(base: string, unit: WindowUnit): string {
    return this.seen.get(`${base}\0${unit}`)?.id ?? NO_INCARNATION;
  }

  /**
   * Whether a give-back of an admission begun at `admittedAt` (Date.now(); <= 0 not known) may go
   * out: not when the incarnation of its limit's window changed since (the admission was charged by
   * the process before).
   */
  keeps(base: string, unit: WindowUnit, admittedAt: number): boolean {
    const s = this.seen.get(`${base}\0${unit}`);
    return s === undefined || s.since === 0 || admittedAt >= s.since;
  }

  /** Forgets the windows that ended; all of them if that is not enough (their give-backs are then dropped). */
  private forget(now: number): void {
    for (const [k, s] of this.seen) if (s.endsAt < now) this.seen.delete(k);
    if (this.seen.size >= MAX_INCARNATIONS) this.seen = new Map();
  }
}
