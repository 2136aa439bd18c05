/**
 * Real BPE counts in o200k_base (gpt-tokenizer), over bounded segments (bounded-segments.ts).
 * Text that looks like a special token (`<|endoftext|>`) is counted as plain text, never rejected.
 */
import o200k, { countTokens, setMergeCacheSize } from 'gpt-tokenizer/encoding/o200k_base';
import { nextSegmentEnd } from './bounded-segments.js';
import { asBpeCore, fastCounter } from './pretoken-count.js';

/**
 * gpt-tokenizer caches the tokens of pre-tokens that are not single tokens (rare words; the rest
 * take a direct lookup). Its eviction, `map.delete(map.keys().next().value)`, walks over the holes
 * earlier deletions left at the front of the Map: once the default 100 000-entry cache is full,
 * every unseen word costs ~50 µs more (measured: 0.4 µs per eviction at 256 entries, 2 µs at 4096,
 * 17 µs at 20 000, 50 µs at 100 000). 4096 entries keep recent rare words and bound both that
 * cost and the memory hostile prompts can pin (pre-tokens are at most MAX_RUN_CHARS long).
 */
export const MERGE_CACHE_ENTRIES = 4096;
setMergeCacheSize(MERGE_CACHE_ENTRIES);

const PLAIN_TEXT = Object.freeze({ disallowedSpecial: new Set<string>() });

const libraryCount = (text: string): number => countTokens(text, PLAIN_TEXT);

/**
 * Tokens of one text (special-token text counted as plain text): the pre-token loop of
 * pretoken-count.ts when this version of the library passes its checks, else the library's own.
 */
export const countPlain: (text: string) => number =
  fastCounter(asBpeCore((o200k as unknown as { bytePairEncodingCoreProcessor?: unknown }).bytePairEncodingCoreProcessor), libraryCount)
  ?? libraryCount;

/** Result of a count that ran out of time. */
export const OVER_BUDGET = -1;

/** Tokens of one text. */
export function bpeCountText(text: string): number {
  const end = text.length;
  let s = 0;
  let n = 0;
  while (s < end) {
    const e = nextSegmentEnd(text, s);
    n += countPlain(s === 0 && e === end ? text : text.slice(s, e));
    s = e;
  }
  return n;
}

/** Sum of the tokens of `texts`. */
export function bpeCountTexts(texts: readonly string[]): number {
  let n = 0;
  for (let i = 0; i < texts.length; i++) n += bpeCountText(texts[i]);
  return n;
}

/**
 * Sum of the tokens of `texts`, or OVER_BUDGET once `now()` reaches `deadlineAt` (checked before
 * every segment, so the overrun is at most one segment's work).
 */
export function bpeCountTextsUntil(texts: readonly string[], deadlineAt: number, now: () => number): number {
  let n = 0;
  for (let i = 0; i < texts.length; i++) {
    const text = texts[i];
    const end = text.length;
    let s = 0;
    while (s < end) {
      if (now() >= deadlineAt) return OVER_BUDGET;
      const e = nextSegmentEnd(text, s);
      n += countPlain(s === 0 && e === end ? text : text.slice(s, e));
      s = e;
    }
  }
  return n;
}
