/**
 * The router's TokenCounter (docs/tokens.md). `bpe`: prompts up to inlineMaxChars are counted on
 * the event loop; longer ones go to the tokenizer pool, within a time budget; when the pool is full,
 * absent or out of time, the count falls back to the chars estimate. With the cache of repeated
 * texts (count-cache.ts), the texts it holds add their kept counts and only the others are
 * counted that way. `chars`: ceil(chars / 4).
 */
import { bpeCountText, bpeCountTexts, OVER_BUDGET } from './bpe-count.js';
import { charsEstimate, charsEstimateOf, charsEstimateText } from './chars-estimate.js';
import { CACHE_MIN_CHARS, NOT_CACHED, TextCountCache } from './count-cache.js';
import { countOf, CountsInFlight, type CountInFlight, type EachCounts } from './counts-in-flight.js';
import { rankTableWorkerData } from './o200k-ranks.js';
import { framingTokens, textPrompt, type PromptText } from './prompt-text.js';
import type { TokenCounter } from './token-counter.js';
import { TokenizerPool } from './tokenizer-pool.js';
import type { TokenizerSettings } from './tokenizer-settings.js';
import { performance } from 'node:perf_hooks';

export interface TokenCounterStats {
  /** Counts done on the event loop (every count of the chars estimator). */
  inline: number;
  /** Counts handed to the pool (including those that then fell back). */
  pooled: number;
  /** Counts that used the chars estimate instead of bpe: pool full, absent, over budget or failed. */
  fallbacks: number;
  /** Texts of at least CACHE_MIN_CHARS whose count came from the cache of repeated texts. */
  cacheHits: number;
  /** Texts of at least CACHE_MIN_CHARS that were not in it (counted and kept, unless their count fell back to the estimate). */
  cacheMisses: number;
  /** Texts of at least CACHE_MIN_CHARS not in it but being counted in the pool for another request: that count was waited for (counts-in-flight.ts). */
  cacheJoins: number;
}

export type RouterTokenCounter = TokenCounter & {
  readonly stats: Readonly<TokenCounterStats>;
  /** Tasks in the tokenizer pool now (running or queued): counts, and other work run there (`threads`). */
  readonly poolInFlight: number;
  /** The tokenizer threads, for other work to run there (api/thread-parse.ts); null without a pool. */
  readonly threads: TokenizerPool | null;
  /**
   * Resolves when the tokenizer threads are started (they share this process's rank table; at once without a pool).
   * Await it before taking traffic, or the first long prompts fall back to the chars estimate.
   */
  ready(): Promise<void>;
};

export interface TokenCounterOptions {
  /** Compiled worker module; default `./tokenize-task.js` next to this module (dist/tokens/). */
  readonly poolFile?: string | URL;
  /** Called with the milliseconds each pooled count took, from hand-off to answer (metrics). */
  readonly onPoolTask?: (ms: number) => void;
}

export const DEFAULT_POOL_FILE = new URL('./tokenize-task.js', import.meta.url);

class CharsTokenCounter implements RouterTokenCounter {
  readonly stats: TokenCounterStats = { inline: 0, pooled: 0, fallbacks: 0, cacheHits: 0, cacheMisses: 0, cacheJoins: 0 };
  readonly poolInFlight = 0;
  readonly threads = null;

  countPrompt(p: PromptText): number {
    this.stats.inline++;
    return charsEstimate(p);
  }

  countText(text: string): number {
    this.stats.inline++;
    return charsEstimateText(text);
  }

  async ready(): Promise<void> {}

  async close(): Promise<void> {}
}

/** A pooled count in flight: turns the pool's answer into the request's count. */
class PooledCount {
  private readonly t0 = performance.now();
  constructor(
    private readonly prompt: PromptText,
    private readonly stats: TokenCounterStats,
    private readonly onTask: ((ms: number) => void) | null,
  ) {}

  readonly settle = (n: number): number => {
    if (this.onTask !== null) this.onTask(performance.now() - this.t0);
    if (n === OVER_BUDGET) {
      this.stats.fallbacks++;
      return charsEstimate(this.prompt);
    }
    return n + this.prompt.knownTokens + framingTokens(this.prompt);
  };
}

/**
 * A pooled count of the texts the cache did not hold: keeps their counts and adds the cached
 * part to the request's count.
 */
class PooledMisses {
  private readonly t0 = performance.now();
  constructor(
    private readonly prompt: PromptText,
    private readonly misses: readonly string[],
    private readonly missChars: number,
    private readonly cachedTokens: number,
    private readonly keep: (text: string, count: number) => void,
    private readonly inFlight: CountsInFlight,
    private readonly stats: TokenCounterStats,
    private readonly onTask: ((ms: number) => void) | null,
  ) {}

  readonly settle = (counts: EachCounts): number => {
    if (this.onTask !== null) this.onTask(performance.now() - this.t0);
    const misses = this.misses;
    for (let i = 0; i < misses.length; i++) if (misses[i].length >= CACHE_MIN_CHARS) this.inFlight.remove(misses[i]);
    if (counts === OVER_BUDGET || counts.length !== misses.length) {
      this.stats.fallbacks++;
      return this.cachedTokens + charsEstimateOf(this.prompt, this.missChars);
    }
    let n = this.cachedTokens;
    for (let i = 0; i < misses.length; i++) {
      n += counts[i];
      this.keep(misses[i], counts[i]);
    }
    return n + this.prompt.knownTokens + framingTokens(this.prompt);
  };
}

/**
 * A request's count with texts another request's pool task is counting: its own count plus theirs,
 * each text the task gave no count for (over budget, failed) estimated as the fallback does.
 */
function joinCounts(own: number | Promise<number>, joined: readonly CountInFlight[]): Promise<number> {
  const waits: Promise<number | EachCounts>[] = [Promise.resolve(own)];
  for (let i = 0; i < joined.length; i++) waits.push(joined[i].counts);
  return Promise.all(waits).then((answers) => {
    let n = answers[0] as number;
    for (let i = 0; i < joined.length; i++) {
      const c = countOf(joined[i], answers[i + 1] as EachCounts);
      n += c >= 0 ? c : charsEstimateText(joined[i].text);
    }
    return n;
  });
}

/**
 * Counts of the short texts (under CACHE_MIN_CHARS) seen in the prompts that use the cache: every
 * message's role, names, the short messages of a conversation. At most this many (about 1 MB);
 * emptied when full.
 */
export const SHORT_MEMO_ENTRIES = 8192;

/**
 * Prompts of at least this many texts (four chat messages with their roles: a conversation) use
 * the cache and the memo of short texts even when none of their texts is long.
 */
export const CACHED_PROMPT_TEXTS = 8;

/** Whether `texts` are worth looking up: a conversation, or any text long enough for the cache. */
function worthLookingUp(texts: readonly string[]): boolean {
  if (texts.length >= CACHED_PROMPT_TEXTS) return true;
  for (let i = 0; i < texts.length; i++) if (texts[i].length >= CACHE_MIN_CHARS) return true;
  return false;
}

class BpeTokenCounter implements RouterTokenCounter {
  readonly stats: TokenCounterStats = { inline: 0, pooled: 0, fallbacks: 0, cacheHits: 0, cacheMisses: 0, cacheJoins: 0 };
  readonly #inlineMaxChars: number;
  readonly #pool: TokenizerPool | null;
  readonly #onTask: ((ms: number) => void) | null;
  readonly #cache: TextCountCache | null;
  readonly #short = new Map<string, number>();
  readonly #inFlight = new CountsInFlight();

  constructor(s: TokenizerSettings, poolFile: string | URL, onTask: ((ms: number) => void) | null) {
    this.#inlineMaxChars = s.inlineMaxChars;
    this.#onTask = onTask;
    this.#cache = s.cacheChars > 0 ? new TextCountCache(s.cacheChars) : null;
    // The rank table is built here, at start, not by the first request's count (0.15-0.25 s);
    // a ranks file that cannot be read stops the start with its path named. The tokenizer
    // threads are handed it and build none of their own.
    const workerData = { ...rankTableWorkerData(), conversationBytes: s.conversationBytes };
    this.#pool = s.poolSize > 0
      ? new TokenizerPool({ filename: poolFile, size: s.poolSize, queue: s.queue, budgetMs: s.budgetMs, workerData })
      : null;
  }

  countPrompt(p: PromptText): number | Promise<number> {
    const cache = this.#cache;
    if (cache !== null && (p.keep !== null || worthLookingUp(p.texts))) return this.#countCached(p, cache);
    return this.#count(p);
  }

  countText(text: string): number | Promise<number> {
    if (text.length <= this.#inlineMaxChars) {
      this.stats.inline++;
      return bpeCountText(text);
    }
    return this.#count(textPrompt(text));
  }

  #count(p: PromptText): number | Promise<number> {
    if (p.chars <= this.#inlineMaxChars) {
      this.stats.inline++;
      return bpeCountTexts(p.texts) + p.knownTokens + framingTokens(p);
    }
    const pool = this.#pool;
    if (pool === null || pool.full) {
      this.stats.fallbacks++;
      return charsEstimate(p);
    }
    this.stats.pooled++;
    return pool.count(p.texts).then(new PooledCount(p, this.stats, this.#onTask).settle);
  }

  /**
   * A prompt with long texts, or a conversation: the texts the cache or the memo holds add their
   * kept counts; the others are counted as a prompt of their own would be (inline up to the
   * threshold, else in the pool), and kept.
   */
  #countCached(p: PromptText, cache: TextCountCache): number | Promise<number> {
    const texts = p.texts;
    let cachedTokens = 0;
    let missChars = 0;
    let misses: string[] | null = null;
    let joined: CountInFlight[] | null = null;
    const short = this.#short;
    // A kept conversation's texts: their count is kept with it once every one of them is found.
    const keep = p.keep;
    const keepTo = keep === null ? 0 : keep.to;
    let keepFound = keep === null ? 0 : keep.from;
    let keepTokens = 0;
    for (let i = 0; i < texts.length; i++) {
      const t = texts[i];
      let n: number;
      if (t.length >= CACHE_MIN_CHARS) {
        n = cache.get(t);
        if (n !== NOT_CACHED) this.stats.cacheHits++;
        else {
          const counting = this.#inFlight.find(t);
          if (counting !== null) {
            this.stats.cacheJoins++;
            (joined ??= []).push(counting);
            continue;
          }
          this.stats.cacheMisses++;
        }
      } else {
        n = short.get(t) ?? NOT_CACHED;
      }
      if (n === NOT_CACHED) {
        (misses ??= []).push(t);
        missChars += t.length;
        continue;
      }
      cachedTokens += n;
      if (i === keepFound && i < keepTo) {
        keepFound++;
        keepTokens += n;
      }
    }
    if (keep !== null && keepFound === keepTo) {
      keep.target.tokens = keep.baseTokens + keepTokens;
      keep.target.base = null;
    }
    const own = this.#countMisses(p, misses, missChars, cachedTokens);
    return joined === null ? own : joinCounts(own, joined);
  }

  /** The request's count: the kept counts, and the texts not kept counted inline or in the pool (and kept). */
  #countMisses(p: PromptText, misses: string[] | null, missChars: number, cachedTokens: number): number | Promise<number> {
    if (missChars <= this.#inlineMaxChars) {
      this.stats.inline++;
      let n = cachedTokens;
      if (misses !== null) {
        for (let i = 0; i < misses.length; i++) {
          const t = misses[i];
          const c = bpeCountText(t);
          this.#keep(t, c);
          n += c;
        }
      }
      return n + p.knownTokens + framingTokens(p);
    }
    // The kept counts stand; only the texts not kept are estimated when no thread counts them.
    const pool = this.#pool;
    if (pool === null || pool.full) {
      this.stats.fallbacks++;
      return cachedTokens + charsEstimateOf(p, missChars);
    }
    this.stats.pooled++;
    const counts = pool.countEach(misses!);
    // Requests that carry one of these long texts meanwhile wait for this count.
    for (let i = 0; i < misses!.length; i++) if (misses![i].length >= CACHE_MIN_CHARS) this.#inFlight.add(misses![i], counts, i);
    return counts.then(new PooledMisses(p, misses!, missChars, cachedTokens, this.#keep, this.#inFlight, this.stats, this.#onTask).settle);
  }

  /**
   * Keeps the exact count `c` of `t`: in the cache when long enough, else in the memo of short
   * texts. Only #countCached's prompts get here, so the cache is on.
   */
  readonly #keep = (t: string, c: number): void => {
    if (t.length >= CACHE_MIN_CHARS) {
      this.#cache!.set(t, c);
      return;
    }
    const short = this.#short;
    if (short.size >= SHORT_MEMO_ENTRIES) short.clear();
    short.set(t, c);
  };

  get threads(): TokenizerPool | null {
    return this.#pool;
  }

  get poolInFlight(): number {
    return this.#pool === null ? 0 : this.#pool.inFlight;
  }

  async ready(): Promise<void> {
    if (this.#pool !== null) await this.#pool.ready();
  }

  async close(): Promise<void> {
    if (this.#pool !== null) await this.#pool.close();
  }
}

/** The token counter for `s`; close() it on shutdown (it owns the tokenizer threads). */
export function createTokenCounter(s: TokenizerSettings, opts?: TokenCounterOptions): RouterTokenCounter {
  if (s.estimator === 'chars') return new CharsTokenCounter();
  return new BpeTokenCounter(s, opts?.poolFile ?? DEFAULT_POOL_FILE, opts?.onPoolTask ?? null);
}
