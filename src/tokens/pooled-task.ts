/**
 * The time budget of one pooled count. The caller gets an answer at the budget at the latest
 * (OVER_BUDGET, so it falls back to the chars estimate); the thread stops by itself at the same
 * deadline (it checks between segments). Only a thread still busy HARD_STOP_GRACE_MS later - stuck,
 * or starved of CPU - is aborted: piscina drops the task from its queue or terminates the thread
 * and starts a new one (which shares the same rank table: nothing to reload).
 * The budget is a read deadline (timers.ts): a count the thread answered in time while this
 * worker's event loop was held past the budget is read, not replaced by the estimate.
 */
import { OVER_BUDGET } from './bpe-count.js';
import type { TokenizeAnswer } from './tokenize-task.js';
import { setReadDeadline } from '../timers.js';

export const HARD_STOP_GRACE_MS = 1000;

export class PooledTask {
  readonly promise: Promise<TokenizeAnswer>;
  readonly #controller = new AbortController();
  #resolve: ((n: TokenizeAnswer) => void) | null = null;
  #timer: NodeJS.Timeout;

  constructor(budgetMs: number) {
    this.promise = new Promise<TokenizeAnswer>((resolve) => { this.#resolve = resolve; });
    this.#timer = setReadDeadline(this.#onBudget, budgetMs);
  }

  /** Aborts the piscina task at the hard stop. */
  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  /** The thread's answer (or OVER_BUDGET when the task failed). */
  readonly answer = (n: TokenizeAnswer): void => {
    clearTimeout(this.#timer);
    this.#finish(n);
  };

  readonly #onBudget = (): void => {
    if (this.#resolve === null) return; // answered in the turn that ran the deadline
    this.#finish(OVER_BUDGET);
    this.#timer = setTimeout(this.#onHardStop, HARD_STOP_GRACE_MS).unref();
  };

  readonly #onHardStop = (): void => {
    this.#controller.abort(new Error('tokenizer task still running after its budget'));
  };

  #finish(n: TokenizeAnswer): void {
    const resolve = this.#resolve;
    if (resolve === null) return;
    this.#resolve = null;
    resolve(n);
  }
}
