/**
 * One text's o200k_base tokens, special-token text counted as plain text (as the router does):
 * for every pre-token, 1 when it is a single token, else the parts its byte-pair merge leaves
 * (merge-count.ts). Pre-tokens come from o200k_base's split regex (O200K_SPLIT_SOURCE), or for
 * ASCII text from ascii-pretokens.ts, which finds the same ones without it. The lookups go to a
 * RankTable (rank-table.ts), never to a Map of strings. ASCII text is copied once, whole, into a
 * reused buffer (its code units are its bytes), where its pre-tokens are found and looked up in
 * place; a pre-token of other text is written there as UTF-8 before its lookup.
 *
 * Pre-tokens that needed a merge keep their count in a small cache (MERGE_CACHE_ENTRIES, emptied
 * when full): a rare word repeated in a prompt, or across prompts, is merged once.
 *
 * A pre-token holding a lone surrogate is not a string any token is: gpt-tokenizer looks it up by
 * its text (and finds nothing), then merges its bytes with each lone surrogate as U+FFFD. The
 * same happens here: such a pre-token skips the lookup of its whole bytes.
 */
import { asciiBytes, asciiPretokenEnd, O200K_SPLIT_SOURCE } from './ascii-pretokens.js';
import { MergeCounter } from './merge-count.js';
import { NO_RANK, type RankTable } from './rank-table.js';
import { Buffer } from 'node:buffer';

/** The UTF-8 encoding of U+FFFD, written for a lone surrogate (as TextEncoder does). */
const REPLACEMENT = [0xef, 0xbf, 0xbd] as const;

/** Merged pre-tokens remembered; pre-tokens are at most 256 characters (bounded-segments.ts), so the cache holds at most ~2 MB of text. */
export const MERGE_CACHE_ENTRIES = 4096;

export class PretokenCounter {
  readonly #table: RankTable;
  readonly #merge: MergeCounter;
  readonly #split = new RegExp(O200K_SPLIT_SOURCE, 'gu');
  readonly #mergedCounts = new Map<string, number>();
  #utf8: Buffer = Buffer.allocUnsafeSlow(1024);
  /** Set by #encode: the pre-token just written held a lone surrogate. */
  #lone = false;

  constructor(table: RankTable) {
    this.#table = table;
    this.#merge = new MergeCounter(table);
  }

  /** Tokens of `text`. */
  count(text: string): number {
    const bytes = this.#room(text.length);
    if (asciiBytes(text, bytes)) {
      // ASCII: its code units are its bytes, now in #utf8; pre-tokens are found and looked up there.
      const end = text.length;
      let n = 0;
      for (let i = 0; i < end;) {
        const e = asciiPretokenEnd(bytes, i, end);
        n += this.#table.rankOfBytes(bytes, i, e) !== NO_RANK ? 1 : this.#merged(text.slice(i, e), i, e);
        i = e;
      }
      return n;
    }
    const split = this.#split;
    let n = 0;
    split.lastIndex = 0;
    let m: RegExpExecArray | null;
    // Every alternative of the regex matches at least one character, and every character is
    // matched by one of them: exec walks the text from piece to piece.
    while ((m = split.exec(text)) !== null) n += this.#countPiece(m[0]);
    return n;
  }

  #countPiece(piece: string): number {
    const len = this.#encode(piece);
    if (!this.#lone && this.#table.rankOfBytes(this.#utf8, 0, len) !== NO_RANK) return 1;
    return this.#merged(piece, 0, len);
  }

  /** Tokens of `piece`, not a single token, whose bytes are #utf8[from, to): from the cache, else merged. */
  #merged(piece: string, from: number, to: number): number {
    const known = this.#mergedCounts.get(piece);
    if (known !== undefined) return known;
    const tokens = this.#merge.count(this.#utf8, from, to);
    if (this.#mergedCounts.size >= MERGE_CACHE_ENTRIES) this.#mergedCounts.clear();
    this.#mergedCounts.set(piece, tokens);
    return tokens;
  }

  /** Writes `piece` as UTF-8 at the start of #utf8 (lone surrogates as U+FFFD); its length in bytes. */
  #encode(piece: string): number {
    const buf = this.#room(piece.length * 3);
    let lone = false;
    let b = 0;
    for (let i = 0; i < piece.length; i++) {
      const c = piece.charCodeAt(i);
      if (c < 0x80) {
        buf[b++] = c;
      } else if (c < 0x800) {
        buf[b++] = 0xc0 | (c >> 6);
        buf[b++] = 0x80 | (c & 0x3f);
      } else if (c >= 0xd800 && c <= 0xdfff) {
        const d = i + 1 < piece.length ? piece.charCodeAt(i + 1) : 0;
        if (c <= 0xdbff && d >= 0xdc00 && d <= 0xdfff) {
          const cp = 0x10000 + ((c - 0xd800) << 10) + (d - 0xdc00);
          buf[b++] = 0xf0 | (cp >> 18);
          buf[b++] = 0x80 | ((cp >> 12) & 0x3f);
          buf[b++] = 0x80 | ((cp >> 6) & 0x3f);
          buf[b++] = 0x80 | (cp & 0x3f);
          i++;
        } else {
          lone = true;
          buf[b++] = REPLACEMENT[0];
          buf[b++] = REPLACEMENT[1];
          buf[b++] = REPLACEMENT[2];
        }
      } else {
        buf[b++] = 0xe0 | (c >> 12);
        buf[b++] = 0x80 | ((c >> 6) & 0x3f);
        buf[b++] = 0x80 | (c & 0x3f);
      }
    }
    this.#lone = lone;
    return b;
  }

  /** #utf8, grown to hold at least `bytes`. */
  #room(bytes: number): Buffer {
    if (this.#utf8.length < bytes) {
      let size = this.#utf8.length;
      while (size < bytes) size *= 2;
      this.#utf8 = Buffer.allocUnsafeSlow(size);
    }
    return this.#utf8;
  }
}
