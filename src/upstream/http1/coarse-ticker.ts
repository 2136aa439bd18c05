/**
 * The coarse clock of the upstream pools: one interval timer per resolution for every pool of the
 * process, not one per pool. A pool ticks only while it has connections; a worker fronting many
 * pods then wakes once per resolution for all of them, not once per pod (docs/internals/performance-changes.md,
 * "Idle wake-ups"). The timer is unref'd: pools alone do not keep a process alive.
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
