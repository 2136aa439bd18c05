/**
 * A BPE encoding's ranks (its mergeable byte sequences and their ranks) packed into one
 * SharedArrayBuffer: the byte sequences back to back, and an open-addressing hash table from a
 * sequence's bytes to its rank. A router process makes it once, from the encoding's `.tiktoken`
 * file (one `base64 rank` line per sequence, as gpt-tokenizer ships it) or from the file the build
 * wrote of it (rank-table-file.ts), and hands the same buffer
 * to its tokenizer threads, so the event loop and the threads share one copy of about 5 MB for
 * o200k_base, where gpt-tokenizer's own tables cost each of them about 68 MB resident
 * (docs/tokens.md, "Memory").
 *
 * Layout (32-bit little-endian words, then bytes):
 *   [0] MAGIC  [1] entries N  [2] slots S (a power of two)  [3] byte length B
 *   starts   Uint32[N + 1]  where entry i's bytes begin (entry i ends where i + 1 begins)
 *   ranks    Int32[N]       entry i's rank
 *   slots    Int32[S]       entry index + 1, 0 for an empty slot (load factor under 0.4)
 *   bytes    Uint8[B]
 */
import { Buffer } from 'node:buffer';
import { readFileSync } from 'node:fs';

const MAGIC = 0x52_4e_4b_31; // "RNK1"
const HEADER_WORDS = 4;
const FNV_OFFSET = 0x811c9dc5;
const FNV_PRIME = 0x01000193;

/** No such sequence. */
export const NO_RANK = -1;

export class RankTable {
  /** The buffer to hand to another thread (`RankTable.fromShared`). */
  readonly shared: SharedArrayBuffer;
  readonly entries: number;
  readonly #starts: Uint32Array;
  readonly #ranks: Int32Array;
  readonly #slots: Int32Array;
  readonly #mask: number;
  readonly #bytes: Uint8Array;

  private constructor(shared: SharedArrayBuffer) {
    const head = new Int32Array(shared, 0, HEADER_WORDS);
    if (head[0] !== MAGIC) throw new Error('not a rank table (wrong magic number)');
    const n = head[1];
    const s = head[2];
    const b = head[3];
    let at = HEADER_WORDS * 4;
    this.#starts = new Uint32Array(shared, at, n + 1);
    at += (n + 1) * 4;
    this.#ranks = new Int32Array(shared, at, n);
    at += n * 4;
    this.#slots = new Int32Array(shared, at, s);
    at += s * 4;
    this.#bytes = new Uint8Array(shared, at, b);
    if (layoutBytes(n, s, b) !== shared.byteLength) throw new Error(`rank table of ${shared.byteLength} bytes, its header says ${layoutBytes(n, s, b)}`);
    this.shared = shared;
    this.entries = n;
    this.#mask = s - 1;
  }

  /** The same table over a buffer another thread built. */
  static fromShared(shared: SharedArrayBuffer): RankTable {
    return new RankTable(shared);
  }

  /**
   * The table of a `.tiktoken` file's bytes: lines of `base64 rank`. Throws naming the line when
   * one is malformed or a sequence repeats. Decodes straight from the bytes: no string per line,
   * so building leaves no garbage behind but the file's buffer.
   */
  static fromTiktoken(file: Uint8Array, source: string): RankTable {
    let n = 0;
    for (let i = 0; i < file.length; i++) if (file[i] === NEWLINE) n++;
    if (file.length > 0 && file[file.length - 1] !== NEWLINE) n++;
    let slotCount = 1024;
    while (slotCount < n * 2.5) slotCount *= 2;
    // Base64 decodes to at most 3/4 of its length: an upper bound for the bytes, trimmed below.
    const scratch = new Uint8Array(Math.ceil(file.length * 0.75));
    const starts = new Uint32Array(n + 1);
    const ranks = new Int32Array(n);
    let b = 0;
    let at = 0;
    for (let i = 0; i < n; i++) {
      let eol = file.indexOf(NEWLINE, at);
      if (eol === -1) eol = file.length;
      const space = file.indexOf(SPACE, at);
      const rank = space > at && space < eol ? decimal(file, space + 1, eol) : -1;
      const written = rank < 0 ? -1 : decodeBase64(file, at, space, scratch, b);
      if (written <= 0) {
        const line = Buffer.from(file.buffer, file.byteOffset + at, Math.min(eol - at, 60)).toString('latin1');
        throw new Error(`${source}:${i + 1}: expected "base64 rank", got ${JSON.stringify(line)}`);
      }
      starts[i] = b;
      ranks[i] = rank;
      b += written;
      at = eol + 1;
    }
    starts[n] = b;
    const shared = new SharedArrayBuffer(layoutBytes(n, slotCount, b));
    new Int32Array(shared, 0, HEADER_WORDS).set([MAGIC, n, slotCount, b]);
    const table = new RankTable(shared);
    table.#starts.set(starts);
    table.#ranks.set(ranks);
    table.#bytes.set(scratch.subarray(0, b));
    const bytes = table.#bytes;
    for (let i = 0; i < n; i++) {
      const slot = table.#probe(bytes, starts[i], starts[i + 1]);
      if (table.#slots[slot] !== 0) throw new Error(`${source}:${i + 1}: this byte sequence is already listed`);
      table.#slots[slot] = i + 1;
    }
    return table;
  }

  /** The rank of `buf[start, end)`, or NO_RANK. */
  rankOfBytes(buf: Uint8Array, start: number, end: number): number {
    const v = this.#slots[this.#probe(buf, start, end)];
    return v === 0 ? NO_RANK : this.#ranks[v - 1];
  }

  /** The slot that holds `buf[start, end)`, or the empty slot where it would go. */
  #probe(buf: Uint8Array, start: number, end: number): number {
    const len = end - start;
    const slots = this.#slots;
    const starts = this.#starts;
    const bytes = this.#bytes;
    const mask = this.#mask;
    for (let slot = hashBytes(buf, start, end) & mask; ; slot = (slot + 1) & mask) {
      const v = slots[slot];
      if (v === 0) return slot;
      const s = starts[v - 1];
      if (starts[v] - s === len) {
        let k = 0;
        while (k < len && bytes[s + k] === buf[start + k]) k++;
        if (k === len) return slot;
      }
    }
  }
}

/** A `.tiktoken` file's bytes; throws naming the file when it cannot be read. */
export function readRanksFile(path: string): Buffer {
  try {
    return readFileSync(path);
  } catch (err) {
    throw new Error(`cannot read the token ranks file ${path}: ${(err as Error).message}`);
  }
}

const NEWLINE = 0x0a;
const SPACE = 0x20;

/** The value of each base64 character (standard alphabet), -1 for any other byte. */
const BASE64 = new Int8Array(256).fill(-1);
'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/'.split('').forEach((c, i) => { BASE64[c.charCodeAt(0)] = i; });

/** The decimal number in `file[start, end)` (at most 9 digits), or -1. */
function decimal(file: Uint8Array, start: number, end: number): number {
  if (end <= start || end - start > 9) return -1;
  let v = 0;
  for (let i = start; i < end; i++) {
    const d = file[i] - 0x30;
    if (d < 0 || d > 9) return -1;
    v = v * 10 + d;
  }
  return v;
}

/**
 * Decodes the base64 of `src[start, end)` (padded with `=` to a multiple of 4) into `dst` at `at`;
 * the bytes written, or -1 when it is not such base64.
 */
function decodeBase64(src: Uint8Array, start: number, end: number, dst: Uint8Array, at: number): number {
  if (end <= start || (end - start) % 4 !== 0) return -1;
  let pad = 0;
  if (src[end - 1] === 0x3d) pad = src[end - 2] === 0x3d ? 2 : 1;
  let out = at;
  for (let i = start; i < end; i += 4) {
    const last = i + 4 === end;
    const a = BASE64[src[i]];
    const b = BASE64[src[i + 1]];
    const c = last && pad === 2 ? 0 : BASE64[src[i + 2]];
    const d = last && pad >= 1 ? 0 : BASE64[src[i + 3]];
    if ((a | b | c | d) < 0) return -1;
    const v = (a << 18) | (b << 12) | (c << 6) | d;
    dst[out++] = v >> 16;
    if (!(last && pad === 2)) dst[out++] = (v >> 8) & 0xff;
    if (!(last && pad >= 1)) dst[out++] = v & 0xff;
  }
  return out - at;
}

/** The bytes of a table of n sequences of b bytes in all, with s slots (the layout above). */
function layoutBytes(n: number, s: number, b: number): number {
  return (HEADER_WORDS + (n + 1) + n + s) * 4 + b;
}

/** FNV-1a over `buf[start, end)`. */
function hashBytes(buf: Uint8Array, start: number, end: number): number {
  let h = FNV_OFFSET;
  for (let k = start; k < end; k++) h = Math.imul(h ^ buf[k], FNV_PRIME);
  return h;
}
