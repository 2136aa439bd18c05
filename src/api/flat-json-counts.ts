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

/** Whether the string `"key"` ends at b[close], its closing quote (a read before b's start gives undefined: no match). */
function keyEndsAt(b: Buffer, close: number, key: Buffer): boolean {
  return b[close - key.length - 1] === QUOTE && literalEndsAt(b, close - 1, key);
}

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
    if (keyEndsAt(b, i, second)) {
      if (!secondSeen) flatCounts.second = value;
      secondSeen = true;
      i -= second.length + 1;
    } else if (keyEndsAt(b, i, first)) {
      if (!firstSeen) flatCounts.first = value;
      firstSeen = true;
      i -= first.length + 1;
    } else {
      c = b[--i];
      while (c !== QUOTE) {
        if (i <= 0 || c === BACKSLASH || c < 0x20) return -1;
        c = b[--i];
      }
    }
    c = b[--i];
    while (isJsonSpace(c)) c = b[--i];
    if (c === OPEN) return i;
    if (c !== COMMA) return -1;
    c = b[--i];
    while (isJsonSpace(c)) c = b[--i];
  }
}
