/**
 * o200k_base's pre-tokens of ASCII text, found without its split regex. The regex (gpt-tokenizer's
 * `tokenSplitRegex`, O200K_SPLIT_SOURCE below) matches Unicode property classes and costs about
 * 140 instructions a character through V8's irregexp, 60% of counting an English prompt. On ASCII
 * its classes are a handful of byte ranges, and its seven alternatives, tried in order with
 * backtracking, each reduce to a short scan:
 *
 * 1. `[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(contraction)?`
 * 2. `[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(contraction)?`
 *    together: an optional prefix (not CR, LF, letter or digit) before a letter, the capitals, the
 *    small letters, then `'s`, `'d`, `'m`, `'t`, `'ll`, `'ve` or `'re` in any case;
 * 3. `\p{N}{1,3}`: up to three digits;
 * 4. ` ?[^\s\p{L}\p{N}]+[\r\n/]*`: an optional space, a run of other characters, then CRs, LFs and slashes;
 * 5. `\s*[\r\n]+`: a run of white space up to its last CR or LF;
 * 6. `\s+(?!\S)`: a run of white space at the text's end, or all of it but its last character;
 * 7. `\s+`: the one white-space character left.
 *
 * Tested against the regex itself on every ASCII class boundary and on random texts.
 */
import type { Buffer } from 'node:buffer';
import { isAscii } from '../ascii-text.js';

/** The split regex this module stands for (gpt-tokenizer's o200k_base `tokenSplitRegex.source`). */
export const O200K_SPLIT_SOURCE = "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+(?:'(?:[sS]|[dD]|[mM]|[tT]|[lL][lL]|[vV][eE]|[rR][eE]))?|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*(?:'(?:[sS]|[dD]|[mM]|[tT]|[lL][lL]|[vV][eE]|[rR][eE]))?|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

const UPPER = 1;
const LOWER = 2;
const DIGIT = 3;
/** White space other than CR and LF: space, tab, vertical tab, form feed. */
const BLANK = 4;
/** CR and LF. */
const NEWLINE = 5;
/** Anything else: punctuation, symbols, other control characters. */
const OTHER = 6;

/** The class of each ASCII character. */
const CLASS = new Uint8Array(128).fill(OTHER);
for (let c = 0x41; c <= 0x5a; c++) CLASS[c] = UPPER;
for (let c = 0x61; c <= 0x7a; c++) CLASS[c] = LOWER;
for (let c = 0x30; c <= 0x39; c++) CLASS[c] = DIGIT;
for (const c of [0x20, 0x09, 0x0b, 0x0c]) CLASS[c] = BLANK;
CLASS[0x0a] = NEWLINE;
CLASS[0x0d] = NEWLINE;

const SPACE = 0x20;
const APOSTROPHE = 0x27;
const SLASH = 0x2f;

/**
 * Below this length an ASCII text is checked and copied by a loop over its characters (about 35
 * instructions each); from it on by two native calls, isAscii's length count and `write`, which
 * cost about 700 instructions together and then copy at memory speed.
 */
export const NATIVE_COPY_CHARS = 32;

/**
 * Writes the code units of `text` into `bytes` (at least `text.length` long) when they are all
 * ASCII, and says whether they were (they are then its bytes). When they are not, `bytes` holds
 * some of them, or none.
 */
export function asciiBytes(text: string, bytes: Buffer): boolean {
  const n = text.length;
  if (n >= NATIVE_COPY_CHARS) {
    if (!isAscii(text)) return false;
    bytes.write(text, 0, n, 'latin1');
    return true;
  }
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c > 0x7f) return false;
    bytes[i] = c;
  }
  return true;
}

/**
 * Where the pre-token that starts at `i` ends (exclusive), in the ASCII text `bytes[0, n)`
 * (asciiBytes), `i` below `n`. Successive calls from 0, each from the last one's end, give the
 * regex's matches. The text is read as bytes: a string's `charCodeAt` costs more per character
 * in optimised code than a typed array's element.
 */
export function asciiPretokenEnd(bytes: Uint8Array, i: number, n: number): number {
  const c = CLASS[bytes[i]];
  if (c === UPPER || c === LOWER) return lettersEnd(bytes, i, n);
  if ((c === OTHER || c === BLANK) && i + 1 < n) {
    const next = CLASS[bytes[i + 1]];
    if (next === UPPER || next === LOWER) return lettersEnd(bytes, i + 1, n); // 1, 2 with the prefix
  }
  if (c === DIGIT) {
    let k = i + 1;
    while (k < n && k < i + 3 && CLASS[bytes[k]] === DIGIT) k++;
    return k; // 3
  }
  const from = bytes[i] === SPACE && i + 1 < n && CLASS[bytes[i + 1]] === OTHER ? i + 1 : i;
  if (CLASS[bytes[from]] === OTHER) {
    let k = from + 1;
    while (k < n && CLASS[bytes[k]] === OTHER) k++;
    while (k < n && (CLASS[bytes[k]] === NEWLINE || bytes[k] === SLASH)) k++;
    return k; // 4
  }
  // White space from i: BLANK or NEWLINE.
  let w = i;
  let lastNewline = -1;
  for (let d = c; d === BLANK || d === NEWLINE; d = w < n ? CLASS[bytes[w]] : 0) {
    if (d === NEWLINE) lastNewline = w;
    w++;
  }
  if (lastNewline >= 0) return lastNewline + 1; // 5
  if (w === n || w - i === 1) return w; // 6 at the end, 7 for one character
  return w - 1; // 6, the last character left for the next pre-token
}

/** Capitals, then small letters, from `j` (at least one letter), then a contraction. */
function lettersEnd(bytes: Uint8Array, j: number, n: number): number {
  let k = j;
  while (k < n && CLASS[bytes[k]] === UPPER) k++;
  while (k < n && CLASS[bytes[k]] === LOWER) k++;
  if (k + 1 >= n || bytes[k] !== APOSTROPHE) return k;
  const a = bytes[k + 1] | 0x20; // lower case of a letter
  if (a === 0x73 || a === 0x64 || a === 0x6d || a === 0x74) return k + 2; // 's 'd 'm 't
  if (k + 2 >= n) return k;
  const b = bytes[k + 2] | 0x20;
  if ((a === 0x6c && b === 0x6c) || (a === 0x76 && b === 0x65) || (a === 0x72 && b === 0x65)) return k + 3; // 'll 've 're
  return k;
}
