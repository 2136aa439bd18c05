/**
 * Tokenizer threads (piscina) of one router process: a fixed number of threads, a bounded queue,
 * and a time budget per task.
 *
 * Budget: each task carries a deadline (now + budgetMs). The worker checks it between bounded
 * segments and answers OVER_BUDGET when it passes - also when the task only reaches a thread after
 * its deadline - so a hostile prompt costs a thread at most its budget and never makes the ones
 * queued behind it wait longer than theirs. A task still unanswered HARD_STOP_GRACE_MS after its
 * deadline is aborted: removed from the queue, or its thread terminated and replaced.
 */
import { Piscina } from 'piscina';
import { OVER_BUDGET } from './bpe-count.js';
import type { TokenizeTask } from './tokenize-task.js';

export const HARD_STOP_GRACE_MS = 50;

export interface TokenizerPoolOptions {
  /** The compiled worker module (tokenize-task.js). */
  readonly filename: string | URL;
  /** Threads (>= 1). */
  readonly size: number;
  /** Tasks allowed to wait for a thread. */
  readonly queue: number;
  readonly budgetMs: number;
}

export class TokenizerPool {
  readonly #piscina: Piscina<TokenizeTask, number>;
  readonly #capacity: number;
  readonly #budgetMs: number;
  #inFlight = 0;
  #lastError: Error | null = null;
  readonly #answered = (n: number): number => {
    this.#inFlight--;
    return Number.isSafeInteger(n) && n >= 0 ? n : OVER_BUDGET;
  };
  readonly #failed = (): number => {
    this.#inFlight--;
    return OVER_BUDGET;
  };

  constructor(opts: TokenizerPoolOptions) {
    if (!Number.isInteger(opts.size) || opts.size < 1) throw new Error(`tokenizer pool size must be an integer >= 1; got ${opts.size}`);
    this.#capacity = opts.size + opts.queue;
    this.#budgetMs = opts.budgetMs;
    const filename = typeof opts.filename === 'string' ? opts.filename : opts.filename.href;
    this.#piscina = new Piscina<TokenizeTask, number>({
      filename,
      minThreads: opts.size,
      maxThreads: opts.size,
      // Backstop only: full() keeps submissions within size + queue.
      maxQueue: opts.queue + opts.size,
      idleTimeout: Infinity,
      // Idle threads block in Atomics.wait; nothing else runs on them.
      atomics: 'sync',
    });
    // A thread that fails outside a task (e.g. the worker file does not load) must not crash the
    // process: its tasks time out into the fallback, and the error is kept for diagnosis.
    this.#piscina.on('error', (err: unknown) => {
      this.#lastError = err instanceof Error ? err : new Error(String(err));
    });
  }

  /** The last error a thread raised outside a task (null if none). */
  get lastError(): Error | null {
    return this.#lastError;
  }

  /** True when every thread is busy and the queue is full: the caller should not submit. */
  get full(): boolean {
    return this.#inFlight >= this.#capacity;
  }

  /** Tasks submitted and not yet answered. */
  get inFlight(): number {
    return this.#inFlight;
  }

  /**
   * Tokens of `texts`, or OVER_BUDGET when the budget ran out or the task failed (pool full,
   * thread crashed, pool closed). Never rejects.
   */
  count(texts: string[]): Promise<number> {
    this.#inFlight++;
    const task: TokenizeTask = { texts, deadlineAt: Date.now() + this.#budgetMs };
    const signal = AbortSignal.timeout(this.#budgetMs + HARD_STOP_GRACE_MS);
    return this.#piscina.run(task, { signal }).then(this.#answered, this.#failed);
  }

  async close(): Promise<void> {
    await this.#piscina.destroy();
  }
}
