/**
 * The header lines of a response head: latin1 text whose lines each end in CRLF, read from
 * `from` to its end into [name, value, name, value, ...]. Names are kept as received; values
 * lose the optional whitespace (SP, HTAB) around them.
 *
 * The usual head, whole in one packet, is read from its bytes (scanHead: one pass, names checked
 * against a table of token characters, no regular expression) and then cut from one latin1 string
 * (headersAt). A head split across reads, or one the byte reading finds irregular, is read from
 * its text (headerLines), which throws the error that names the fault: a name that is not a token,
 * a line without a colon, a bare CR or LF or a NUL.
 */
import { malformed } from './errors.js';
import { viewOf } from '../../byte-view.js';
import { SHORTEST_USUAL_LONG_NAME, usualLongName, usualLongNameOf } from './usual-long-names.js';

const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const LONE_CR_LF = /\r(?!\n)|(?<!\r)\n|\0/;
const CR = 13;
const LF = 10;
const COLON = 58;
const SP = 32;
const HTAB = 9;

/** 1 for the token characters of RFC 9110 (header names), by byte. */
const TOKEN_CHAR = new Uint8Array(256);
for (const c of "!#$%&'*+-.^_`|~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz") TOKEN_CHAR[c.charCodeAt(0)] = 1;

export const BARE_CR_LF = 'bare CR or LF or NUL in the response head';

/** scanHead: the head does not end within the bytes given. */
export const HEAD_INCOMPLETE = -1;
/** scanHead: a line that is not a plain header line (the text path names the fault). */
export const HEAD_IRREGULAR = -2;

/** HeadMarks' view before its first head. */
const EMPTY_VIEW = new DataView(new ArrayBuffer(4));

/** Where scanHead marks the header lines: four offsets per line (MARKS_PER_LINE), `n` of them in use. */
export class HeadMarks {
  n = 0;
  at = new Int32Array(MARKS_PER_LINE * 32);
  /** Every byte of the head is ASCII (below 0x80): its text is then its UTF-8 too. */
  ascii = true;
  /** A view of the bytes scanned, and where the head starts in it: usualNameOfLine reads the long names there. */
  view: DataView = EMPTY_VIEW;
  viewStart = 0;
}

/** Per header line: name start and end, value start and end. */
const MARKS_PER_LINE = 4;

/** Whether byte `c` ends a line's content here: CR, LF or NUL (one comparison for the usual bytes, above CR). */
function ends(c: number): boolean {
  return c <= CR && (c === CR || c === LF || c === 0);
}

/** Any byte of `v` below 0x0e (CR, LF, NUL, HTAB and the other low controls): the classic "has a byte less than n" test, per 32-bit word. */
const LOW_BYTES = 0x0e0e0e0e;
const HIGH_BITS = 0x80808080 | 0;

const CASE_BIT = 0x20202020;
const FROM_SMALL_A = 0x1f1f1f1f;
const PAST_SMALL_Z = 0x05050505;
const HYPHENS = 0x2d2d2d2d;
const LOW_SEVEN = 0x7f7f7f7f;

/**
 * Whether the four bytes of `w` are letters (either case) or hyphens, as the usual header names'
 * are: then they are token characters, and a name is read four bytes at a time (a name byte
 * costs a read and a table lookup). Any other byte, a token character or not, leaves the word to
 * the byte loop.
 */
function isNameWord(w: number): boolean {
  if ((w & HIGH_BITS) !== 0) return false;
  // Lower case, then each byte in a..z: from 0x61 a byte's high bit is set, from 0x7b as well.
  const x = w | CASE_BIT;
  const letters = ((x + FROM_SMALL_A) & ~(x + PAST_SMALL_Z)) & HIGH_BITS;
  // Each byte that is a hyphen: its high bit set where the byte xor 0x2d is zero.
  const h = w ^ HYPHENS;
  const hyphens = ~(((h & LOW_SEVEN) + LOW_SEVEN) | h) & HIGH_BITS;
  return (letters | hyphens) === HIGH_BITS;
}

/** The bits of every byte lineEnd passed since scanHead began, ORed: a high bit set means a byte above 0x7f. */
let passedBits = 0;

/**
 * The first CR, LF or NUL of `buf` from `j`, or `n` (its length) when there is none. Four bytes
 * at a time while none of them is below 0x0e, which a header value's bytes seldom are; a word
 * with such a byte (an HTAB, say) is checked byte by byte. `off` is the buffer's offset in `v`.
 * The bytes passed are ORed into passedBits.
 */
function lineEnd(buf: Buffer, v: DataView, off: number, j: number, n: number): number {
  let bits = 0;
  for (;;) {
    while (j + 4 <= n) {
      const w = v.getInt32(off + j, true);
      if (((w - LOW_BYTES) & ~w & HIGH_BITS) !== 0) break;
      bits |= w;
      j += 4;
    }
    const stop = j + 4 < n ? j + 4 : n;
    for (; j < stop; j++) {
      const c = buf[j];
      if (ends(c)) {
        passedBits |= bits;
        return j;
      }
      bits |= c;
    }
    if (j >= n) {
      passedBits |= bits;
      return n;
    }
  }
}

/**
 * Reads a response head from `buf` at `start`: the status line up to its CRLF, then header lines
 * up to the blank line. Returns the index just past the blank line, with four marks per header
 * line in `marks` (name start and end, value start and end without the whitespace around it,
 * relative to `start`), and whether every byte of it is ASCII; else HEAD_INCOMPLETE or
 * HEAD_IRREGULAR. Line ends are found four bytes at a time (lineEnd); names are checked byte by
 * byte against the token characters (all ASCII).
 */
export function scanHead(buf: Buffer, start: number, marks: HeadMarks): number {
  const n = buf.length;
  const v = viewOf(buf);
  const off = buf.byteOffset;
  let at = marks.at;
  let count = 0;
  passedBits = 0;
  let j = lineEnd(buf, v, off, start, n);
  if (j + 1 >= n) return HEAD_INCOMPLETE;
  let c = buf[j];
  if (c !== CR || buf[j + 1] !== LF) return HEAD_IRREGULAR;
  j += 2;
  for (;;) {
    if (j + 1 >= n) return HEAD_INCOMPLETE;
    if (buf[j] === CR) {
      marks.n = count;
      marks.view = v;
      marks.viewStart = off + start;
      marks.ascii = (passedBits & HIGH_BITS) === 0;
      return buf[j + 1] === LF ? j + 2 : HEAD_IRREGULAR;
    }
    const nameStart = j;
    while (j + 4 <= n && isNameWord(v.getInt32(off + j, true))) j += 4;
    while (j < n && TOKEN_CHAR[c = buf[j]] === 1) j++;
    if (j >= n) return HEAD_INCOMPLETE;
    if (c !== COLON || j === nameStart) return HEAD_IRREGULAR;
    const nameEnd = j++;
    while (j < n && ((c = buf[j]) === SP || c === HTAB)) j++;
    const valueStart = j;
    j = lineEnd(buf, v, off, j, n);
    if (j + 1 >= n) return HEAD_INCOMPLETE;
    if (buf[j] !== CR || buf[j + 1] !== LF) return HEAD_IRREGULAR;
    let valueEnd = j;
    while (valueEnd > valueStart && ((c = buf[valueEnd - 1]) === SP || c === HTAB)) valueEnd--;
    if (count + MARKS_PER_LINE > at.length) {
      const more = new Int32Array(at.length * 2);
      more.set(at);
      at = marks.at = more;
    }
    at[count++] = nameStart - start;
    at[count++] = nameEnd - start;
    at[count++] = valueStart - start;
    at[count++] = valueEnd - start;
    j += 2;
  }
}

/**
 * The header lines scanHead marked, cut from the head's text, into an array made at its length
 * (two entries a line): no push, no growing copies.
 */
export function headersAt(text: string, marks: HeadMarks): string[] {
  const at = marks.at;
  const headers = new Array<string>(marks.n >> 1);
  for (let m = 0, h = 0; m < marks.n; m += MARKS_PER_LINE, h += 2) {
    headers[h] = text.slice(at[m], at[m + 1]);
    headers[h + 1] = text.slice(at[m + 2], at[m + 3]);
  }
  return headers;
}

/**
 * The name of header line `line` that headersAt cut (`name`, of SHORTEST_USUAL_LONG_NAME
 * characters or more), or the same name as a constant when it is a usual one
 * (usual-long-names.ts: a long name cut from the text is costly to compare), read from the bytes
 * scanHead read.
 */
export function usualNameOfLine(marks: HeadMarks, line: number, name: string): string {
  const usual = usualLongName(marks.view, marks.viewStart + marks.at[line * MARKS_PER_LINE], name.length);
  return usual === 0 ? name : usualLongNameOf(usual);
}

/** The header lines of a head's text from `from` (a head that came in several reads, or an irregular one: this names its fault). */
export function headerLines(text: string, from: number): string[] {
  if (LONE_CR_LF.test(text)) throw malformed(BARE_CR_LF);
  const headers: string[] = [];
  for (let pos = from; pos < text.length;) {
    const e = text.indexOf('\r\n', pos);
    const colon = text.indexOf(':', pos);
    if (colon === -1 || colon > e) throw malformed(`header line without a colon: ${JSON.stringify(text.slice(pos, Math.min(e, pos + 80)))}`);
    const name = text.slice(pos, colon);
    if (!TOKEN.test(name)) throw malformed(`bad header name ${JSON.stringify(name.slice(0, 80))}`);
    let v = colon + 1;
    let end = e;
    let c = text.charCodeAt(v);
    while (v < end && (c === SP || c === HTAB)) c = text.charCodeAt(++v);
    while (end > v && ((c = text.charCodeAt(end - 1)) === SP || c === HTAB)) end--;
    headers.push(name, text.slice(v, end));
    pos = e + 2;
  }
  return headers;
}

/**
 * Whether the bytes of a head not yet ended, from `from`, hold a bare LF (one not after a CR), a
 * CR followed by another byte than LF, or a NUL: such a head cannot end in CRLF CRLF as the
 * grammar has it (a pod ending its lines in LF alone, say), so it is refused at once instead of
 * waiting for an end that never comes. A CR as the last byte waits for the next read. `start` is
 * where the head starts (an LF there is bare), `from` the first byte to check.
 */
export function hasBareLineEnd(buf: Buffer, start: number, from: number): boolean {
  const n = buf.length;
  for (let j = from; j < n; j++) {
    const c = buf[j];
    if (c > CR) continue;
    if (c === 0) return true;
    if (c === LF && (j === start || buf[j - 1] !== CR)) return true;
    if (c === CR && j + 1 < n && buf[j + 1] !== LF) return true;
  }
  return false;
}

/** True when a trailer name is a token. */
export function isToken(name: string): boolean {
  return TOKEN.test(name);
}

/** True when the text holds a bare CR or LF or a NUL. */
export function hasBareCrLf(text: string): boolean {
  return LONE_CR_LF.test(text);
}
