/**
 * Reads two counts out of a small flat JSON object without JSON.parse: the usage object of an
 * answer (`{"prompt_tokens":5,"completion_tokens":16,"total_tokens":21}`) is parsed on every
 * request, and a parse builds an object and interns its keys for three numbers.
 *
 * Only a plain shape is read: members whose values are unsigned integers of at most 15 digits
 * (no sign, fraction, exponent or leading zero), `null`, `true` or `false`, keys without escapes
 * or control characters, JSON white space between tokens. Anything else (a nested object, a
 * string, a float, a key with an escape, invalid JSON) is not read, and the caller parses the
 * object with JSON.parse as before. Within that shape the grammar is checked whole, so every
 * object read here is one JSON.parse accepts, with the same values (a duplicate key: the last).
 */
import { Buffer } from 'node:buffer';
import { equalBytes, viewOf, viewOfBytes } from '../byte-view.js';

/** The counts of the last `readFlatCountsBackwards` call: the integer value of each key, or -1 when absent or not an integer. */
export const flatCounts = { first: -1, second: -1 };

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COLON = 0x3a;
const COMMA = 0x2c;
const OPEN = 0x7b;
const CLOSE = 0x7d;
const ZERO = 0x30;
const NINE = 0x39;
const MAX_DIGITS = 15;
const NULL = Buffer.from('null');
const TRUE = Buffer.from('true');
const FALSE = Buffer.from('false');

/** JSON white space; one comparison for the usual bytes, above the space. */
export function isJsonSpace(c: number): boolean {
  return c <= 0x20 && (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09);
}

/** The index of the first byte from b[i] on that is not JSON white space (b.length at its end). */
export function skipSpace(b: Buffer, i: number): number {
  while (isJsonSpace(b[i])) i++;
  return i;
}

/** Whether b[at..] starts with `bytes` (a read past b's end gives undefined: no match). */
export function bytesAt(b: Buffer, at: number, bytes: Buffer): boolean {
  for (let j = 0; j < bytes.length; j++) if (b[at + j] !== bytes[j]) return false;
  return true;
}

/** Whether the literal `word` ends at b[i] (its last byte). */
function literalEndsAt(b: Buffer, i: number, word: Buffer): boolean {
  const from = i - word.length + 1;
  return from >= 0 && bytesAt(b, from, word);
}

/**
 * Whether the string `"key"` ends at b[close], its closing quote (a read before b's start gives
 * undefined: no match). `v` is b's view (byte-view.ts), `kv` the key's; the key is compared four
 * bytes at a time.
 */
function keyEndsAt(b: Buffer, v: DataView, close: number, key: Buffer, kv: DataView): boolean {
  const from = close - key.length;
  return b[from - 1] === QUOTE && equalBytes(v, b.byteOffset + from, kv, key.length);
}

/** A quote, a backslash or a control character among the four bytes of `w` (none: the key goes on through them). */
function endsPlainRun(w: number): boolean {
  const q = w ^ QUOTES;
  const s = w ^ BACKSLASHES;
  return ((((w - CONTROL_BOUND) & ~w) | ((q - ONES) & ~q) | ((s - ONES) & ~s)) & HIGH_BITS) !== 0;
}

const ONES = 0x01010101;
const CONTROL_BOUND = 0x20202020;
const QUOTES = 0x22222222;
const BACKSLASHES = 0x5c5c5c5c;
const HIGH_BITS = 0x80808080 | 0;

/**
 * The opening quote of a key without escapes or control characters whose closing quote is
 * b[close], or -1: walked back four bytes at a time while none of them can end the key, then byte
 * by byte.
 */
function keyOpeningQuote(b: Buffer, v: DataView, close: number): number {
  const off = b.byteOffset;
  let i = close - 1;
  while (i >= 3 && !endsPlainRun(v.getInt32(off + i - 3, true))) i -= 4;
  for (; i >= 0; i--) {
    const c = b[i];
    if (c === QUOTE) return i;
    if (c === BACKSLASH || c < 0x20) return -1;
  }
  return -1;
}

// The views of the last two keys read (the usage reader's are the same two every time).
let firstKey: Buffer | null = null;
let firstView: DataView = viewOfBytes(NULL);
let secondKey: Buffer | null = null;
let secondView: DataView = viewOfBytes(NULL);

/**
 * Reads the object that ends at b[end] (its `}`) from that end, for a caller that finds the object
 * by its end (the usage member that closes an answer), into `flatCounts` for the keys `first` and
 * `second` (their UTF-8 bytes, no escapes). Returns the index of the object's `{`, or -1, with
 * `flatCounts` undefined, when the object is not of the plain shape above. Each byte is visited
 * once, instead of once to find where the object starts and again to read it.
 */
export function readFlatCountsBackwards(b: Buffer, end: number, first: Buffer, second: Buffer): number {
  flatCounts.first = -1;
  flatCounts.second = -1;
  let firstSeen = false;
  let secondSeen = false;
  if (end < 1 || b[end] !== CLOSE) return -1;
  let i = end - 1;
  let c = b[i];
  while (isJsonSpace(c)) c = b[--i];
  if (c === OPEN) return i; // {}
  const v = viewOf(b);
  if (first !== firstKey) {
    firstKey = first;
    firstView = viewOfBytes(first);
  }
  if (second !== secondKey) {
    secondKey = second;
    secondView = viewOfBytes(second);
  }
  for (;;) {
    // value, from its last byte
    let value = -1;
    if (c >= ZERO && c <= NINE) {
      const last = i;
      let scale = 1;
      value = 0;
      do {
        value += (c - ZERO) * scale;
        scale *= 10;
        c = b[--i];
      } while (c >= ZERO && c <= NINE);
      const digits = last - i;
      if (digits > MAX_DIGITS || (digits > 1 && b[i + 1] === ZERO)) return -1;
    } else {
      const word = c === 0x6c ? NULL : c === 0x65 ? (b[i - 3] === 0x74 ? TRUE : FALSE) : null; // l: null; e: true or false
      if (word === null || !literalEndsAt(b, i, word)) return -1;
      i -= word.length;
      c = b[i];
    }
    while (isJsonSpace(c)) c = b[--i];
    if (c !== COLON) return -1;
    c = b[--i];
    while (isJsonSpace(c)) c = b[--i];
    // key, from its closing quote: one of the two read is compared in place (its bytes need no
    // other check); any other key is walked to its opening quote.
    if (c !== QUOTE) return -1;
    if (keyEndsAt(b, v, i, second, secondView)) {
      if (!secondSeen) flatCounts.second = value;
      secondSeen = true;
      i -= second.length + 1;
    } else if (keyEndsAt(b, v, i, first, firstView)) {
      if (!firstSeen) flatCounts.first = value;
      firstSeen = true;
      i -= first.length + 1;
    } else {
      i = keyOpeningQuote(b, v, i);
      if (i < 0) return -1;
    }
    c = b[--i];
    while (isJsonSpace(c)) c = b[--i];
    if (c === OPEN) return i;
    if (c !== COMMA) return -1;
    c = b[--i];
    while (isJsonSpace(c)) c = b[--i];
  }
}

/*
 * Backward readers of the small values a backend puts after an answer's `usage` member
 * (`"prompt_logprobs":null`, `"metadata":{"weight_version":"default"}`): each takes the index of
 * a value's last byte and returns the index of its first, or -1 when the value is not of the
 * plain shape read here. Read from a byte known to end a JSON token, each such value is one
 * token (or one flat object or array of them), so what precedes it is what precedes the token.
 */

const MINUS = 0x2d;
const PLUS = 0x2b;
const DOT = 0x2e;
const LETTER_E = 0x65;
const LETTER_CAPITAL_E = 0x45;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
/** The longest string (its bytes between the quotes) and number read; a longer one is not read. */
const MAX_STRING = 256;
const MAX_NUMBER = 32;

function isDigit(c: number): boolean {
  return c >= ZERO && c <= NINE;
}

/** Whether b[from..to] (inclusive) is a JSON number: `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`. */
function isJsonNumber(b: Buffer, from: number, to: number): boolean {
  let i = from;
  if (b[i] === MINUS) i++;
  if (b[i] === ZERO) i++;
  else if (isDigit(b[i])) while (i <= to && isDigit(b[i])) i++;
  else return false;
  if (i <= to && b[i] === DOT) {
    const d = ++i;
    while (i <= to && isDigit(b[i])) i++;
    if (i === d) return false;
  }
  if (i <= to && (b[i] === LETTER_E || b[i] === LETTER_CAPITAL_E)) {
    i++;
    if (i <= to && (b[i] === PLUS || b[i] === MINUS)) i++;
    const d = i;
    while (i <= to && isDigit(b[i])) i++;
    if (i === d) return false;
  }
  return i === to + 1;
}

/**
 * The opening quote of the string whose closing quote is b[close]: the quote before it, when no
 * byte between is a backslash or a control character and at most MAX_STRING lie between; else -1.
 * The caller checks that the byte before the returned quote (white space aside) is a token the
 * string may follow (`:`, `,`, `{`, `[`): then that quote is no escaped one (an escaped quote
 * follows a backslash), so it opens the string.
 */
export function stringStartBackwards(b: Buffer, close: number): number {
  const limit = Math.max(0, close - 1 - MAX_STRING);
  for (let i = close - 1; i >= limit; i--) {
    const c = b[i];
    if (c > BACKSLASH) continue; // letters, `_`: one comparison
    if (c === QUOTE) return i;
    if (c === BACKSLASH || c < 0x20) return -1;
  }
  return -1;
}

/** The first byte of the scalar (null, true, false, a number, a short string without escapes) that ends at b[last], or -1. */
export function scalarStartBackwards(b: Buffer, last: number): number {
  const c = b[last];
  if (c === QUOTE) return stringStartBackwards(b, last);
  if (isDigit(c)) {
    let i = last - 1;
    for (; i >= 0; i--) {
      const d = b[i];
      if (!(isDigit(d) || d === DOT || d === MINUS || d === PLUS || d === LETTER_E || d === LETTER_CAPITAL_E)) break;
      if (last - i >= MAX_NUMBER) return -1;
    }
    return isJsonNumber(b, i + 1, last) ? i + 1 : -1;
  }
  const word = c === 0x6c ? NULL : c === LETTER_E ? (b[last - 3] === 0x74 ? TRUE : FALSE) : null;
  return word !== null && literalEndsAt(b, last, word) ? last - word.length + 1 : -1;
}

/** The index of the last byte before b[at] that is not JSON white space, or -1. */
export function lastTokenByteBefore(b: Buffer, at: number): number {
  let i = at - 1;
  while (i >= 0 && isJsonSpace(b[i])) i--;
  return i;
}

/**
 * The opening quote of the key of the member whose value starts at b[valueStart] (`"key" :`
 * before it, white space aside, the key without escapes), or -1.
 */
export function keyStartBackwards(b: Buffer, valueStart: number): number {
  const colon = lastTokenByteBefore(b, valueStart);
  if (colon < 0 || b[colon] !== COLON) return -1;
  const close = lastTokenByteBefore(b, colon);
  if (close < 0 || b[close] !== QUOTE) return -1;
  return stringStartBackwards(b, close);
}

/**
 * The `{` or `[` that opens the flat object or array ending at b[last] (`}` or `]`): an object
 * whose members have keys without escapes and scalar values, an array of scalars; -1 when it is
 * not so flat.
 */
export function flatValueStartBackwards(b: Buffer, last: number): number {
  const object = b[last] === CLOSE;
  if (!object && b[last] !== CLOSE_BRACKET) return -1;
  const open = object ? OPEN : OPEN_BRACKET;
  let i = lastTokenByteBefore(b, last);
  if (i >= 0 && b[i] === open) return i; // {} or []
  for (;;) {
    if (i < 0) return -1;
    const start = scalarStartBackwards(b, i);
    if (start < 0) return -1;
    if (object) {
      const key = keyStartBackwards(b, start);
      if (key < 0) return -1;
      i = lastTokenByteBefore(b, key);
    } else i = lastTokenByteBefore(b, start);
    if (i < 0) return -1;
    if (b[i] === open) return i;
    if (b[i] !== COMMA) return -1;
    i = lastTokenByteBefore(b, i);
  }
}
