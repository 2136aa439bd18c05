/**
 * Tokenizer threads (piscina) of one router process: a fixed number of threads, a bounded queue,
 * and a time budget per task.
 *
 * Budget: each task carries a deadline (now + budgetMs). The worker checks it between bounded
 * segments and answers OVER_BUDGET when it passes - also when the task only reaches a thread after
 * its deadline - so a hostile prompt costs a thread at most its budget and never makes the ones
 * queued behind it wait longer than theirs. The caller is answered at the deadline whatever the
 * thread does; a thread that has not stopped well after it is terminated (pooled-task.ts).
 */
import { Piscina } from 'piscina';
import { OVER_BUDGET } from './bpe-count.js';
import type { RankTableWorkerData } from './o200k-ranks.js';
import { PooledTask } from './pooled-task.js';
import type { TokenizeAnswer, TokenizeTask } from './tokenize-task.js';

/** A thread that has not loaded its task module by then is terminated, and ready() rejects. */
export const WARM_UP_TIMEOUT_MS = 30_000;

export interface TokenizerPoolOptions {
  /** The compiled worker module (tokenize-task.js). */
  readonly filename: string | URL;
  /** Threads (>= 1). */
  readonly size: number;
  /** Tasks allowed to wait for a thread. */
  readonly queue: number;
  readonly budgetMs: number;
  /** Handed to every thread: the process's rank table, so that the threads share it instead of building their own. */
  readonly workerData?: TokenizerThreadData;
}

/** What every tokenizer thread is handed (its workerData). */
export interface TokenizerThreadData extends RankTableWorkerData {
  /** ROUTER_TOKENIZER_CONVERSATION_BYTES: the memory for long conversations a thread that parses bodies keeps (api/parse-task.ts). */
  readonly conversationBytes?: number;
}

export class TokenizerPool {
  readonly #piscina: Piscina<TokenizeTask, TokenizeAnswer>;
  readonly #capacity: number;
  readonly #budgetMs: number;
  #inFlight = 0;
  #lastError: Error | null = null;
  readonly #ready: Promise<void>;
  readonly #answered = (n: TokenizeAnswer): TokenizeAnswer => {
    this.#inFlight--;
    if (Array.isArray(n)) return n.every(isCount) ? n : OVER_BUDGET;
    return isCount(n) ? n : OVER_BUDGET;
  };
  readonly #failed = (): number => {
    this.#inFlight--;
    return OVER_BUDGET;
  };
  readonly #otherAnswered = (answer: unknown): unknown => {
    this.#inFlight--;
    return answer;
  };
  readonly #otherFailed = (): null => {
    this.#inFlight--;
    return null;
  };

  constructor(opts: TokenizerPoolOptions) {
    if (!Number.isInteger(opts.size) || opts.size < 1) throw new Error(`tokenizer pool size must be an integer >= 1; got ${opts.size}`);
    this.#capacity = opts.size + opts.queue;
    this.#budgetMs = opts.budgetMs;
    const filename = typeof opts.filename === 'string' ? opts.filename : opts.filename.href;
    this.#piscina = new Piscina<TokenizeTask, TokenizeAnswer>({
      filename,
      minThreads: opts.size,
      maxThreads: opts.size,
      // Backstop only: full() keeps submissions within size + queue.
      maxQueue: opts.queue + opts.size,
      idleTimeout: Infinity,
      workerData: opts.workerData,
      // Idle threads block in Atomics.wait; nothing else runs on them.
      atomics: 'sync',
    });
    // A thread that fails outside a task (e.g. the worker file does not load) must not crash the
    // process: its tasks time out into the fallback, and the error is kept for diagnosis.
    this.#piscina.on('error', (err: unknown) => {
      this.#lastError = err instanceof Error ? err : new Error(String(err));
    });
    // Piscina marks its first threads ready before they have loaded the module; one warm-up task
    // per thread (no deadline) settles once each has loaded the task module.
    const warmUps: Promise<TokenizeAnswer>[] = [];
    const warmUp: TokenizeTask = { texts: ['warm up'], deadlineAt: Infinity };
    const signal = AbortSignal.timeout(WARM_UP_TIMEOUT_MS);
    for (let i = 0; i < opts.size; i++) warmUps.push(this.#piscina.run(warmUp, { signal }));
    this.#ready = Promise.all(warmUps).then(() => undefined);
    this.#ready.catch(() => {}); // observed through ready() and lastError
  }

  /**
   * Resolves once every thread has loaded its task module; rejects if a thread fails to start.
   * Until then pooled counts wait in the queue and may run out of budget (chars fallback).
   */
  ready(): Promise<void> {
    return this.#ready;
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
   * Tokens of `texts`, or OVER_BUDGET when the budget ran out or the task failed (thread
   * crashed, pool closed). Answers within the budget; never rejects.
   */
  count(texts: string[]): Promise<number> {
    return this.#run(texts, false) as Promise<number>;
  }

  /**
   * Each text's tokens, in the order of `texts`, or OVER_BUDGET as count() gives it. Never
   * rejects.
   */
  countEach(texts: string[]): Promise<number[] | typeof OVER_BUDGET> {
    return this.#run(texts, true) as Promise<number[] | typeof OVER_BUDGET>;
  }

  #run(texts: string[], each: boolean): Promise<TokenizeAnswer> {
    this.#inFlight++;
    const budget = new PooledTask(this.#budgetMs);
    const task: TokenizeTask = { texts, deadlineAt: Date.now() + this.#budgetMs, each };
    // inFlight drops when the thread is done, not when the caller is answered: capacity is real.
    this.#piscina.run(task, { signal: budget.signal }).then(this.#answered, this.#failed).then(budget.answer);
    return budget.promise;
  }

  /**
   * Runs the default export of another task module (`filename`, a file: URL or path) on `task`
   * in these threads, counted in the same capacity as the counts (check `full` first). No time
   * budget: the task must end by itself. Resolves with its answer, or null when it threw or its
   * thread failed; never rejects.
   */
  runModule(filename: string, task: unknown): Promise<unknown> {
    this.#inFlight++;
    return this.#piscina.run(task as TokenizeTask, { filename }).then(this.#otherAnswered, this.#otherFailed);
  }

  async close(): Promise<void> {
    await this.#piscina.destroy();
  }
}

function isCount(n: unknown): boolean {
  return Number.isSafeInteger(n) && (n as number) >= 0;
}
