/**
 * Piscina worker: counts the tokens of a large prompt off the event loop. Compiled to
 * dist/tokens/tokenize-task.js, which tokenizer-pool.ts loads in each tokenizer thread.
 */
import { bpeCountEachUntil, bpeCountTextsUntil } from './bpe-count.js';

export interface TokenizeTask {
  readonly texts: string[];
  /** Epoch ms (Date.now clock, shared by all threads) after which the count gives up. */
  readonly deadlineAt: number;
  /** Answer each text's count (for the cache of repeated texts) instead of their sum. */
  readonly each?: boolean;
}

/** What a task answers: the sum, each text's count (`each`), or OVER_BUDGET (-1) when the deadline passed first. */
export type TokenizeAnswer = number | number[];

export default function tokenizeTask(task: TokenizeTask): TokenizeAnswer {
  return task.each === true
    ? bpeCountEachUntil(task.texts, task.deadlineAt, Date.now)
    : bpeCountTextsUntil(task.texts, task.deadlineAt, Date.now);
}
