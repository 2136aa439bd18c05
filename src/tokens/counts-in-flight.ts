/**
 * Long prompt texts being counted in the tokenizer pool, for the requests that carry the same text
 * meanwhile (docs/tokens.md#repeated-texts): they wait for that count instead of sending the text
 * to the pool again. A burst of requests with one new document (the same question asked of it
 * several ways at once, a client's retries) then costs the pool one count of it, not one each, and
 * no count queued behind the copies runs out of its budget.
 *
 * Filed by the cache's fingerprint (count-cache.ts) and compared whole: a text whose fingerprint
 * another text in flight holds is counted on its own, as before.
 */
import { OVER_BUDGET } from './bpe-count.js';
import { fingerprint } from './count-cache.js';

/** A pool task's answer: each text's count, or OVER_BUDGET (tokenizer-pool.ts countEach). */
export type EachCounts = readonly number[] | typeof OVER_BUDGET;

/** A text in flight: the task counting it and its place among the task's texts. */
export interface CountInFlight {
  readonly text: string;
  readonly counts: Promise<EachCounts>;
  readonly index: number;
}

export class CountsInFlight {
  readonly #texts = new Map<number, CountInFlight>();

  /** The count of `text` being made, or null. */
  find(text: string): CountInFlight | null {
    // Most of the time nothing is in flight: no fingerprint then (a miss already took one in the cache).
    if (this.#texts.size === 0) return null;
    const c = this.#texts.get(fingerprint(text));
    return c !== undefined && c.text === text ? c : null;
  }

  /** `counts[index]` will be `text`'s count (unless its fingerprint is taken by another text in flight). */
  add(text: string, counts: Promise<EachCounts>, index: number): void {
    const fp = fingerprint(text);
    if (!this.#texts.has(fp)) this.#texts.set(fp, { text, counts, index });
  }

  /** `text`'s count is made (or given up): later requests find it in the cache, or count it anew. */
  remove(text: string): void {
    const fp = fingerprint(text);
    const c = this.#texts.get(fp);
    if (c !== undefined && c.text === text) this.#texts.delete(fp);
  }

  /** Texts in flight now. */
  get size(): number {
    return this.#texts.size;
  }
}

/** The count `c` answers for its text, or -1 when the task gave none (over budget, failed). */
export function countOf(c: CountInFlight, counts: EachCounts): number {
  return counts === OVER_BUDGET || c.index >= counts.length ? -1 : counts[c.index];
}
