/**
 * Token counts of long texts seen recently, per router process (docs/tokens.md#repeated-texts).
 *
 * Requests of one application repeat their long parts word for word: a system prompt, a RAG
 * template, the JSON text of the tool definitions an agent sends with every turn. Counting such a
 * text costs about 140 instructions a character (and a hop to a tokenizer thread past the inline
 * threshold). The count of a text depends on the text alone, so a kept count is the count.
 *
 * A lookup does not hash the whole text (V8 hashes a string key character by character: about 12
 * µs for 7 KB): texts are filed under a fingerprint of their length and 80 of their characters,
 * and a text found under its fingerprint is compared whole (a memory comparison). Two texts of one
 * fingerprint take each other's place: a miss, never a wrong count.
 *
 * Two generations bound the memory (src/two-generations.ts): new counts go into the current one;
 * when its texts reach half the budget, it becomes the previous one and the previous one is
 * dropped. A text found in the previous generation moves into the current one, so a text in use
 * stays while one used once leaves after two generations.
 */
import { keyEnd, keyMix, keyStart, TwoGenerations } from '../two-generations.js';

/**
 * Texts shorter than this are counted every time. A lookup takes about 0.3 µs whatever the
 * length; counting 64 characters of prose about 2 µs (docs/tokens.md#repeated-texts).
 */
export const CACHE_MIN_CHARS = 64;

/** What an entry's bookkeeping (its map slot and record) is charged against the budget, in characters. */
export const ENTRY_OVERHEAD_CHARS = 64;

/** Returned by get() for a text that is not cached. */
export const NOT_CACHED = -1;

/** A kept count: its text, compared whole on a lookup. */
interface Kept {
  readonly text: string;
  readonly count: number;
  readonly size: number;
  /** Always null: one text per fingerprint (a chain of one). */
  next: Kept | null;
}

/** Characters sampled at even steps through a text, and at its end. */
const STEPS = 64;
const TAIL = 16;

/** A 32-bit fingerprint of `t` (at least CACHE_MIN_CHARS long): its length and 80 of its characters, from the process's secret (two-generations.ts). */
export function fingerprint(t: string): number {
  const n = t.length;
  let h = keyStart(n);
  for (let k = 0; k < STEPS; k++) h = keyMix(h, t.charCodeAt((k * n / STEPS) | 0));
  for (let i = n - TAIL; i < n; i++) h = keyMix(h, t.charCodeAt(i));
  return keyEnd(h);
}

export class TextCountCache {
  readonly #kept: TwoGenerations<Kept>;

  /** `maxChars`: characters of text held at most, over both generations. */
  constructor(maxChars: number) {
    // One text per fingerprint: a new text of a fingerprint replaces the one there.
    this.#kept = new TwoGenerations<Kept>(maxChars, 1);
  }

  /** The count of `text` (at least CACHE_MIN_CHARS long), or NOT_CACHED. */
  get(text: string): number {
    const fp = fingerprint(text);
    const kept = this.#kept.current(fp);
    if (kept !== undefined && kept.text === text) return kept.count;
    const old = this.#kept.previous(fp);
    if (old === undefined || old.text !== text) return NOT_CACHED;
    this.#kept.renew(fp, old);
    return old.count;
  }

  /** Keeps the count of `text` (at least CACHE_MIN_CHARS long, counted exactly). */
  set(text: string, count: number): void {
    this.#kept.add(fingerprint(text), { text, count, size: text.length + ENTRY_OVERHEAD_CHARS, next: null });
  }

  /** Characters held now (both generations), each entry's ENTRY_OVERHEAD_CHARS included. */
  get chars(): number {
    return this.#kept.size;
  }
}
