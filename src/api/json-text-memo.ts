/**
 * The texts the router derives from large JSON values it has read before, found by the values'
 * bytes (docs/tokens.md#tool-definitions-read-by-their-bytes).
 *
 * An application sends the same tool definitions with every turn, byte for byte. Parsing their
 * JSON and writing it again (the text that is counted) cost more than the rest of such a request
 * together. With this memo a request whose bytes before a value's end repeat a value seen before
 * takes that value's text as it was made then, without parsing it.
 *
 * A lookup samples the last MIN_BYTES bytes before the value's end into a fingerprint (from a
 * secret of the process, as count-cache.ts's), then compares the bytes of the values filed under
 * it whole (a memory comparison). A memo keyed by first bytes samples the first MIN_BYTES from the
 * value's start instead, for values found where they start (a chat body's system prompt:
 * openai-system-prompt.ts). Values shorter than MIN_BYTES are not kept: they cost little to read.
 *
 * Two generations bound the memory (src/two-generations.ts, as count-cache.ts's): new values go
 * into the current one; when its bytes reach half the budget it becomes the previous one and the
 * previous one is dropped; a value found in the previous generation moves into the current one.
 */
import { Buffer } from 'node:buffer';
import { keyEnd, keyMix, keyStart, TwoGenerations } from '../two-generations.js';
import { openersIn } from './json-depth.js';

/** Values shorter than this (in bytes) are not kept; the fingerprint reads this many bytes (the last). */
export const MIN_BYTES = 256;

/** What an entry's bookkeeping is charged against the budget, in bytes. */
const ENTRY_OVERHEAD_BYTES = 128;

/** Bytes sampled for the fingerprint: every fourth of the last MIN_BYTES. */
const STEP = 4;

/**
 * Values kept under one fingerprint at most (values that share their last bytes, or that a client
 * made to share the sampled ones): a lookup compares at most this many. A new one beyond replaces them.
 */
export const MAX_CHAIN = 8;

/** One value's bytes as they came and the text made from it. */
export interface MemoEntry {
  readonly raw: Buffer;
  readonly text: string;
  /** Its `{` and `[` bytes (json-depth.ts openersIn): what a body's depth check adds for it instead of finding them. */
  readonly openers: number;
  /** What it is charged against the budget: its bytes, its text at 2 bytes a character, ENTRY_OVERHEAD_BYTES. */
  readonly size: number;
  /** The next entry of the same fingerprint (values that share their last MIN_BYTES bytes). */
  next: MemoEntry | null;
}

/** A fingerprint of b[end - MIN_BYTES, end) (the caller checks that those bytes are there). */
function fingerprint(b: Buffer, end: number): number {
  let h = keyStart(MIN_BYTES);
  for (let i = end - MIN_BYTES; i < end; i += STEP) h = keyMix(h, b[i]);
  return keyEnd(h);
}

/**
 * Which bytes of a value file it: its last MIN_BYTES (found from where the value ends: `find`), or
 * its first (found from where it starts: `findFrom`).
 */
export type MemoKey = 'last-bytes' | 'first-bytes';

export class JsonTextMemo {
  readonly #kept: TwoGenerations<MemoEntry>;
  readonly #byFirst: boolean;

  /** `maxBytes`: memory held at most over both generations (raw bytes, texts at 2 bytes a character). */
  constructor(maxBytes: number, key: MemoKey = 'last-bytes') {
    this.#kept = new TwoGenerations<MemoEntry>(maxBytes, MAX_CHAIN);
    this.#byFirst = key === 'first-bytes';
  }

  /**
   * The entry whose raw bytes are those that end at b[end) (and start at or after `from`), or null.
   * The caller knows that a JSON value ends there.
   */
  find(b: Buffer, from: number, end: number): MemoEntry | null {
    if (end - from < MIN_BYTES || this.#kept.empty || this.#byFirst) return null;
    const fp = fingerprint(b, end);
    const hit = matching(this.#kept.current(fp), b, from, end);
    if (hit !== null) return hit;
    const old = matching(this.#kept.previous(fp), b, from, end);
    if (old !== null) this.#kept.renew(fp, old);
    return old;
  }

  /**
   * In a memo keyed by first bytes: the entry whose raw bytes are those that start at b[start] (and
   * end at or before `limit`), or null. The caller knows that a JSON value starts there.
   */
  findFrom(b: Buffer, start: number, limit: number): MemoEntry | null {
    if (limit - start < MIN_BYTES || this.#kept.empty || !this.#byFirst) return null;
    const fp = fingerprint(b, start + MIN_BYTES);
    const hit = matchingFrom(this.#kept.current(fp), b, start, limit);
    if (hit !== null) return hit;
    const old = matchingFrom(this.#kept.previous(fp), b, start, limit);
    if (old !== null) this.#kept.renew(fp, old);
    return old;
  }

  /** Keeps `text` for the value b[start, end) (copied); nothing for a value under MIN_BYTES. */
  add(b: Buffer, start: number, end: number, text: string): void {
    if (end - start < MIN_BYTES) return;
    // A buffer of its own, not a slice of Node's shared pool, which a kept value would hold whole.
    const raw = Buffer.allocUnsafeSlow(end - start);
    raw.set(b.subarray(start, end));
    this.#kept.add(fingerprint(b, this.#byFirst ? start + MIN_BYTES : end), { raw, text, openers: openersIn(raw), size: raw.length + 2 * text.length + ENTRY_OVERHEAD_BYTES, next: null });
  }

  /** Memory held now (both generations), as `maxBytes` counts it. */
  get bytes(): number {
    return this.#kept.size;
  }
}

/** The first entry of the chain whose raw bytes end at b[end), starting at or after `from`. */
function matching(e: MemoEntry | null | undefined, b: Buffer, from: number, end: number): MemoEntry | null {
  for (; e !== undefined && e !== null; e = e.next) {
    const n = e.raw.length;
    if (end - n >= from && b.compare(e.raw, 0, n, end - n, end) === 0) return e;
  }
  return null;
}

/** The first entry of the chain whose raw bytes start at b[start], ending at or before `limit`. */
function matchingFrom(e: MemoEntry | null | undefined, b: Buffer, start: number, limit: number): MemoEntry | null {
  for (; e !== undefined && e !== null; e = e.next) {
    const n = e.raw.length;
    if (start + n <= limit && b.compare(e.raw, 0, n, start, start + n) === 0) return e;
  }
  return null;
}
