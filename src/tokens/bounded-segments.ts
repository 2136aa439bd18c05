/**
 * Cuts text into segments whose BPE cost is bounded. BPE (and the o200k pre-tokenizer regex) is
 * super-linear in the length of a run without a whitespace/non-whitespace change: 200 KB of `a`
 * or of spaces takes ~25 s in one call. Segments are cut
 * - inside any run of whitespace or of non-whitespace longer than MAX_RUN_CHARS (never between the
 *   two halves of a surrogate pair) - the only cuts that can change the count, by about one token
 *   per cut, and only for texts holding such runs;
 * - once a segment reaches SEGMENT_TARGET_CHARS, at the next position that is a pre-token boundary
 *   of o200k_base (a space before a letter of any script, or a line break before a letter or an
 *   ASCII digit),
 *   which leaves the count exact; failing that, at the next run change once it reaches
 *   SEGMENT_MAX_CHARS. These keep every tokenizer call short, so a pooled count can stop at its
 *   deadline between segments.
 * A text with no run longer than MAX_RUN_CHARS is therefore counted exactly.
 */

/** Longest run counted in one piece (see docs/tokens.md for cost and accuracy figures). */
export const MAX_RUN_CHARS = 256;
export const SEGMENT_TARGET_CHARS = 4096;
export const SEGMENT_MAX_CHARS = 16_384;

/** Same set as the regular-expression class `\s`. */
export function isWhitespace(c: number): boolean {
  if (c <= 0x20) return c === 0x20 || (c >= 0x09 && c <= 0x0d);
  if (c < 0xa0) return false;
  return c === 0xa0 || c === 0x1680 || (c >= 0x2000 && c <= 0x200a) || c === 0x2028 || c === 0x2029 ||
    c === 0x202f || c === 0x205f || c === 0x3000 || c === 0xfeff;
}

function isAsciiLetter(c: number): boolean {
  const l = c | 0x20;
  return l >= 0x61 && l <= 0x7a;
}

function isAsciiDigit(c: number): boolean {
  return c >= 0x30 && c <= 0x39;
}

const LETTER = /^\p{L}/u;

/**
 * The character at i is a letter (\p{L}, of any script: o200k's word pre-tokens begin with one,
 * after at most one character that is not a letter, digit or line break, such as a space).
 */
function isLetterAt(text: string, i: number): boolean {
  const c = text.charCodeAt(i);
  if (c < 0x80) return isAsciiLetter(c);
  return LETTER.test(text.slice(i, i + 2));
}

/**
 * Is position i (where whitespace-ness changes) a boundary of o200k pre-tokens? A space after
 * non-whitespace and before a letter begins a word's pre-token (no pre-token ends with a space
 * that a letter follows), and so does a letter or digit after a line break.
 */
function isExactCut(text: string, i: number): boolean {
  const c = text.charCodeAt(i);
  if (c === 0x20) return isLetterAt(text, i + 1);
  const before = text.charCodeAt(i - 1);
  return (before === 0x0a || before === 0x0d) && (isAsciiDigit(c) || isLetterAt(text, i));
}

/** End (exclusive) of the segment that starts at `start` (< text.length). */
export function nextSegmentEnd(text: string, start: number): number {
  const end = text.length;
  if (end - start <= MAX_RUN_CHARS) return end;
  let runStart = start;
  let runIsSpace = isWhitespace(text.charCodeAt(start));
  for (let i = start + 1; i < end; i++) {
    const c = text.charCodeAt(i);
    const isSpace = isWhitespace(c);
    if (isSpace !== runIsSpace) {
      const length = i - start;
      if (length >= SEGMENT_TARGET_CHARS && (length >= SEGMENT_MAX_CHARS || isExactCut(text, i))) return i;
      runStart = i;
      runIsSpace = isSpace;
    } else if (i - runStart >= MAX_RUN_CHARS) {
      // Keep a surrogate pair together: cut before its high half.
      return c >= 0xdc00 && c <= 0xdfff ? i - 1 : i;
    }
  }
  return end;
}

/**
 * The last position in text[from, to) where the text can be cut without changing its o200k count
 * (a space after non-whitespace and before a letter, or a line break before a letter or an ASCII
 * digit), or -1 when there is none.
 */
export function lastExactCut(text: string, from: number, to: number): number {
  for (let i = Math.min(to, text.length - 1) - 1; i > from && i > 0; i--) {
    const c = text.charCodeAt(i);
    const isSpace = isWhitespace(c);
    if (isSpace === isWhitespace(text.charCodeAt(i - 1))) continue;
    if (isExactCut(text, i)) return i;
  }
  return -1;
}
