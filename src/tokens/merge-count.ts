/**
 * The tokens of one pre-token that is not itself a token: tiktoken's byte-pair merge over its
 * UTF-8 bytes (merge the adjacent pair of lowest rank, leftmost first, until no pair has a rank),
 * counting the parts left instead of listing them. The same merges as gpt-tokenizer's
 * `bytePairMerge`, over a RankTable and two reused scratch arrays: no allocation per call.
 */
import { NO_RANK, type RankTable } from './rank-table.js';

const NONE = 0x7fffffff;

export class MergeCounter {
  readonly #table: RankTable;
  #starts = new Int32Array(256);
  #ranks = new Int32Array(256);

  constructor(table: RankTable) {
    this.#table = table;
  }

  /** Tokens of `buf[from, to)`. */
  count(buf: Uint8Array, from: number, to: number): number {
    const len = to - from;
    if (len <= 1) return len;
    if (this.#starts.length <= len) {
      let size = this.#starts.length;
      while (size <= len) size *= 2;
      this.#starts = new Int32Array(size);
      this.#ranks = new Int32Array(size);
    }
    const table = this.#table;
    const starts = this.#starts;
    const ranks = this.#ranks;
    // m part boundaries (starts[0] = from ... starts[m - 1] = to); ranks[i]: the rank of the pair
    // of parts that begins at boundary i, NONE where there is no such token or no second part.
    let m = len + 1;
    for (let i = 0; i < m; i++) {
      starts[i] = from + i;
      ranks[i] = i + 2 <= len ? rankOr(table.rankOfBytes(buf, from + i, from + i + 2)) : NONE;
    }
    while (m > 1) {
      let low = NONE;
      let at = -1;
      for (let i = 0; i < m - 1; i++) {
        if (ranks[i] < low) {
          low = ranks[i];
          at = i;
        }
      }
      if (at === -1) break;
      // Merge parts at and at + 1: boundary at + 1 goes, and so does the pair rank at `at`.
      for (let i = at + 1; i < m - 1; i++) starts[i] = starts[i + 1];
      for (let i = at; i < m - 1; i++) ranks[i] = ranks[i + 1];
      m--;
      ranks[at] = at + 2 < m ? rankOr(table.rankOfBytes(buf, starts[at], starts[at + 2])) : NONE;
      if (at > 0) ranks[at - 1] = at + 1 < m ? rankOr(table.rankOfBytes(buf, starts[at - 1], starts[at + 1])) : NONE;
    }
    return m - 1;
  }
}

function rankOr(rank: number): number {
  return rank === NO_RANK ? NONE : rank;
}
