/**
 * Piscina worker: counts the tokens of a large prompt off the event loop. Compiled to
 * dist/tokens/tokenize-task.js, which tokenizer-pool.ts loads in each tokenizer thread.
 */
import { bpeCountTextsUntil } from './bpe-count.js';

export interface TokenizeTask {
  readonly texts: string[];
  /** Epoch ms (Date.now clock, shared by all threads) after which the count gives up. */
  readonly deadlineAt: number;
}

/** Token count, or OVER_BUDGET (-1) when the deadline passed first. */
export default function tokenizeTask(task: TokenizeTask): number {
  return bpeCountTextsUntil(task.texts, task.deadlineAt, Date.now);
}
