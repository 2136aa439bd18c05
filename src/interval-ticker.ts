/**
 * Interval timers shared by period: one timer per period for everything of the process that ticks
 * at it, not one each, so that things ticking at the same period wake the process once per period
 * together (docs/internals/performance-changes.md, "Idle wake-ups"). The upstream pools' coarse
 * clock ticks here while a pool has connections (a worker fronting many pods wakes once per
 * resolution for all of them); so do a worker's heartbeat and its pod-load report. The timers are
 * unref'd: ticking alone does not keep a process alive.
 */

/** What a ticker advances: one step of its coarse clock per tick. */
export interface Ticking {
  advance(): void;
}

interface Ticker {
  readonly timer: NodeJS.Timeout;
  readonly members: Set<Ticking>;
}

const tickers = new Map<number, Ticker>();

/** `member` is advanced every `resolutionMs` from now on (its first tick may come sooner); again for a member already ticking does nothing. */
export function startTicking(member: Ticking, resolutionMs: number): void {
  let t = tickers.get(resolutionMs);
  if (t === undefined) {
    const members = new Set<Ticking>();
    const timer = setInterval(advanceAll, resolutionMs, members);
    timer.unref();
    t = { timer, members };
    tickers.set(resolutionMs, t);
  }
  t.members.add(member);
}

/** `member` is no longer advanced (nothing for one that is not); the last member of a resolution stops its timer. */
export function stopTicking(member: Ticking, resolutionMs: number): void {
  const t = tickers.get(resolutionMs);
  if (t === undefined || !t.members.delete(member)) return;
  if (t.members.size === 0) {
    clearInterval(t.timer);
    tickers.delete(resolutionMs);
  }
}

function advanceAll(members: Set<Ticking>): void {
  // A member that stops during its advance (its last connection closed) is removed from the set
  // while it is iterated, which a Set allows.
  for (const m of members) m.advance();
}
