/**
 * Real BPE counts in o200k_base, over bounded segments (bounded-segments.ts): the pre-token count
 * of pretoken-count.ts over this process's rank table (o200k-ranks.ts; the token counter builds it at start).
 * Text that looks like a special token (`<|endoftext|>`) is counted as plain text, never rejected.
 */
import { nextSegmentEnd } from './bounded-segments.js';
import { o200kRanks } from './o200k-ranks.js';
import { PretokenCounter } from './pretoken-count.js';

let counter: PretokenCounter | null = null;

/** Tokens of one text, in one piece (special-token text counted as plain text). */
export function countPlain(text: string): number {
  return (counter ??= new PretokenCounter(o200kRanks())).count(text);
}

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
    const c = bpeCountTextUntil(texts[i], deadlineAt, now);
    if (c === OVER_BUDGET) return OVER_BUDGET;
    n += c;
  }
  return n;
}

/** Each text's tokens, or OVER_BUDGET once `now()` reaches `deadlineAt` (as bpeCountTextsUntil). */
export function bpeCountEachUntil(texts: readonly string[], deadlineAt: number, now: () => number): number[] | typeof OVER_BUDGET {
  const counts = new Array<number>(texts.length);
  for (let i = 0; i < texts.length; i++) {
    const c = bpeCountTextUntil(texts[i], deadlineAt, now);
    if (c === OVER_BUDGET) return OVER_BUDGET;
    counts[i] = c;
  }
  return counts;
}

function bpeCountTextUntil(text: string, deadlineAt: number, now: () => number): number {
  const end = text.length;
  let n = 0;
  let s = 0;
  while (s < end) {
    if (now() >= deadlineAt) return OVER_BUDGET;
    const e = nextSegmentEnd(text, s);
    n += countPlain(s === 0 && e === end ? text : text.slice(s, e));
    s = e;
  }
  return n;
}
