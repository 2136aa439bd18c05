/**
 * Splitting an operational log line too long to be written whole. The primary and the workers
 * write to one stderr; a write to a pipe is atomic only up to PIPE_BUF (4096 bytes on Linux), and
 * a longer one can be split by the kernel when the pipe is full, another process's line landing in
 * the middle of it (measured: 8,000-byte lines from two processes beside short ones from a third,
 * through a slow reader, came out mixed in 2,247 of 24,000 lines). So a line longer than
 * LINE_BYTES is written as several lines, each whole and within it, the message split between
 * them and each marked `part` of `parts`.
 */
import { PIPE_BUF } from './pipe-buf.js';

/** Most bytes of one line, its newline included. */
export const LINE_BYTES = PIPE_BUF;

/** Bytes a code point takes in UTF-8. */
export function utf8Bytes(cp: number): number {
  return cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
}

/** Bytes a code point takes in UTF-8 inside a JSON string (escapes counted). */
export function jsonStringBytes(cp: number): number {
  if (cp === 0x22 || cp === 0x5c || cp === 0x08 || cp === 0x0c || cp === 0x0a || cp === 0x0d || cp === 0x09) return 2;
  if (cp < 0x20) return 6;
  if (cp >= 0xd800 && cp <= 0xdfff) return 6; // a lone surrogate, escaped by JSON.stringify
  if ((cp >= 0x7f && cp <= 0x9f) || cp === 0x2028 || cp === 0x2029) return 6; // escaped after it (ops-log.ts)
  return utf8Bytes(cp);
}

/** Bytes a code point takes in a text line's message (ops-log.ts textMessage: controls as \xHH, the separators as \uHHHH). */
export function textMessageBytes(cp: number): number {
  if (cp === 0x0a) return 2;
  if (cp === 0x09) return 1;
  if (cp < 0x20 || (cp >= 0x7f && cp <= 0x9f)) return 4;
  if (cp === 0x2028 || cp === 0x2029) return 6;
  return utf8Bytes(cp);
}

/**
 * `text` cut into pieces of at most `budget` bytes each by `cost`, at code point boundaries (a
 * piece holds at least one code point, whatever the budget).
 */
export function splitByBytes(text: string, budget: number, cost: (cp: number) => number): string[] {
  const pieces: string[] = [];
  let start = 0;
  let bytes = 0;
  for (let i = 0; i < text.length;) {
    const cp = text.codePointAt(i)!;
    const width = cp > 0xffff ? 2 : 1;
    const c = cost(cp);
    if (bytes + c > budget && i > start) {
      pieces.push(text.slice(start, i));
      start = i;
      bytes = 0;
    }
    bytes += c;
    i += width;
  }
  pieces.push(text.slice(start));
  return pieces;
}
