/**
 * Large request bodies parsed in a tokenizer thread (docs/tokens.md#large-bodies). JSON.parse of a
 * body of megabytes (images as base64, long documents) holds the event loop for milliseconds (an
 * 8 MB body about 13 ms), and every other request of the process waits that long. A body of at
 * least `minBytes` is handed to a tokenizer thread instead (parse-task.ts), which parses and
 * checks it and builds its prompt; the event loop takes back the request's fields and the
 * prompt's texts, and the body's bytes stay where they were, to go upstream as they came.
 *
 * Nothing is lost when no thread can take it: with every place of the pool taken, or when the
 * thread fails, the body is parsed on the event loop as a smaller one is (counted in `stats`).
 */
import { RouterError } from '../errors.js';
import type { PromptText } from '../tokens/prompt-text.js';
import type { TokenizerPool } from '../tokens/tokenizer-pool.js';
import type { InferenceApi, InferenceRequest } from './inference-api.js';
import type { ParseAnswer, ParseTask } from './parse-task.js';

export const DEFAULT_PARSE_TASK_FILE = new URL('./parse-task.js', import.meta.url).href;

/** A request a thread parsed, on the event loop again. */
export interface ThreadParsed {
  readonly req: InferenceRequest;
  readonly prompt: PromptText;
}

export interface ThreadParseStats {
  /** Bodies of at least minBytes parsed in a thread. */
  inThread: number;
  /** Bodies of at least minBytes parsed on the event loop after all: no place in the pool, or the thread failed. */
  onEventLoop: number;
}

export class ThreadParser {
  readonly stats: ThreadParseStats = { inThread: 0, onEventLoop: 0 };
  /** Bodies of at least this many bytes go to a thread. */
  readonly minBytes: number;
  readonly #pool: TokenizerPool;
  readonly #taskFile: string;

  constructor(pool: TokenizerPool, minBytes: number, taskFile: string = DEFAULT_PARSE_TASK_FILE) {
    if (!Number.isSafeInteger(minBytes) || minBytes < 1) throw new Error(`parse-in-thread size must be an integer >= 1; got ${minBytes}`);
    this.#pool = pool;
    this.minBytes = minBytes;
    this.#taskFile = taskFile;
  }

  /** Whether `raw` goes to a thread: large enough, and a place free in the pool (else it is parsed on the event loop, counted). */
  wants(raw: Buffer): boolean {
    if (raw.length < this.minBytes) return false;
    if (this.#pool.full) {
      this.stats.onEventLoop++;
      return false;
    }
    return true;
  }

  /**
   * Parses `raw` in a thread: the request and its prompt, or the RouterError that refuses the body
   * (what api.parse would throw on the event loop), or null when the thread failed (then parse it
   * on the event loop; counted). Never rejects.
   */
  parse(api: InferenceApi, raw: Buffer, url: string): Promise<ThreadParsed | RouterError | null> {
    const task: ParseTask = { raw, url };
    return this.#pool.runModule(this.#taskFile, task).then((answer) => this.#settle(api, raw, answer as ParseAnswer | null));
  }

  #settle(api: InferenceApi, raw: Buffer, answer: ParseAnswer | null): ThreadParsed | RouterError | null {
    if (answer === null) {
      this.stats.onEventLoop++;
      return null;
    }
    this.stats.inThread++;
    if (!answer.ok) {
      const e = answer.error;
      return new RouterError(e.type, e.message, e.status, e.headers, e.code);
    }
    return { req: api.attach(answer.request, raw), prompt: answer.prompt };
  }
}
