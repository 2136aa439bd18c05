/**
 * Decides whether a dead worker is restarted: more than `maxDeaths` deaths within `windowMs`
 * is a crash loop, and the router stops rather than spin. Time is injected.
 */
export class CrashGuard {
  private readonly deaths: number[] = [];
  constructor(private readonly maxDeaths = 5, private readonly windowMs = 30_000, private readonly now: () => number = Date.now) {}

  /** Records a death; true when the worker may be restarted. */
  allowRestart(): boolean {
    const t = this.now();
    this.deaths.push(t);
    while (this.deaths.length > 0 && this.deaths[0] < t - this.windowMs) this.deaths.shift();
    return this.deaths.length <= this.maxDeaths;
  }
}
