import type { Timers } from '../../src/timers.js';

/** One turn of the event loop: the promises resolved so far have run their continuations. */
export const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/**
 * Timers that fire only when a test advances them: `advance(ms)` runs, in order, each callback
 * due by then, letting promises settle after each. `now` is the time they have reached.
 */
export class ManualTimers implements Timers {
  now = 0;
  private next = 1;
  private readonly due = new Map<number, { at: number; fn: () => void }>();

  setTimeout(fn: () => void, ms: number): unknown {
    const id = this.next++;
    this.due.set(id, { at: this.now + ms, fn });
    return id;
  }

  clearTimeout(handle: unknown): void {
    this.due.delete(handle as number);
  }

  /** The delays of the timers pending, from now. */
  pending(): number[] {
    return [...this.due.values()].map((t) => t.at - this.now).sort((a, b) => a - b);
  }

  async advance(ms: number): Promise<void> {
    const end = this.now + ms;
    await turn();
    for (;;) {
      let first: [number, { at: number; fn: () => void }] | null = null;
      for (const e of this.due) if (e[1].at <= end && (first === null || e[1].at < first[1].at)) first = e;
      if (first === null) break;
      this.due.delete(first[0]);
      this.now = first[1].at;
      first[1].fn();
      await turn();
    }
    this.now = end;
  }
}
