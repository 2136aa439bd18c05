/**
 * Notices a serving worker that has gone silent: its event loop blocked (a synchronous loop, a
 * native call that never returns) or its process stopped (SIGSTOP, a debugger). Such a worker
 * still holds its share of the port, so the kernel keeps handing it connections nobody answers,
 * and it never dies on its own. Every worker says `core:alive` each second (any message counts);
 * one silent for `limitMs` is reported to `stuck`, which kills it (the primary restarts it as it
 * does any worker that dies). Only serving workers are watched: not while one starts, nor once it
 * drains (the drain has its own deadline).
 */
export interface WatchdogOptions<W> {
  limitMs: number;
  /** How often the workers are looked at, ms (the workers' alive period). */
  everyMs: number;
  now: () => number;
  stuck: (worker: W, silentMs: number) => void;
}

export class WorkerWatchdog<W> {
  private readonly o: WatchdogOptions<W>;
  private readonly lastHeard = new Map<W, number>();
  private lastCheck: number;

  constructor(o: WatchdogOptions<W>) {
    this.o = o;
    this.lastCheck = o.now();
  }

  /** `w` serves from now on: watched. */
  watch(w: W): void {
    this.lastHeard.set(w, this.o.now());
  }

  /** Something came from `w`. */
  heard(w: W): void {
    if (this.lastHeard.has(w)) this.lastHeard.set(w, this.o.now());
  }

  /** `w` exited, drains or is being replaced: no longer watched. */
  forget(w: W): void {
    this.lastHeard.delete(w);
  }

  /** Every worker forgotten (the instance drains). */
  forgetAll(): void {
    this.lastHeard.clear();
  }

  /** One look, each `everyMs`: the workers silent past the limit are told to `stuck` (once each). */
  check(): void {
    const now = this.o.now();
    const late = now - this.lastCheck > 2 * this.o.everyMs;
    this.lastCheck = now;
    // The primary's own loop was held up: the workers' messages of that time are still unread,
    // so their silence says nothing yet. Counted from now.
    if (late) {
      for (const w of this.lastHeard.keys()) this.lastHeard.set(w, now);
      return;
    }
    for (const [w, at] of this.lastHeard) {
      if (now - at < this.o.limitMs) continue;
      this.lastHeard.delete(w);
      this.o.stuck(w, now - at);
    }
  }
}
