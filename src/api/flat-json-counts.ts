/**
 * Reads two counts out of a small flat JSON object without JSON.parse: the usage object of an
 * answer (`{"prompt_tokens":5,"completion_tokens":16,"total_tokens":21}`) is parsed on every
 * request, and a parse builds an object and interns its keys for three numbers.
 *
 * Only a plain shape is read: members whose values are unsigned integers of at most 15 digits
 * (no sign, fraction, exponent or leading zero), `null`, `true` or `false`, keys without escapes
 * or control characters, JSON white space between tokens. Anything else (a nested object, a
 * string, a float, a key with an escape, invalid JSON) gives `false`, and the caller parses the
 * object with JSON.parse as before. Within that shape the grammar is checked whole, so every
 * object read here is one JSON.parse accepts, with the same values (a duplicate key: the last).
 */

/** The counts of the last `readFlatCounts` call: the integer value of each key, or -1 when absent or not an integer. */
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

function isSpace(c: number): boolean {
  return c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
}

function skipSpace(b: Buffer, i: number, end: number): number {
  while (i < end && isSpace(b[i])) i++;
  return i;
}

function keyIs(b: Buffer, from: number, to: number, key: Buffer): boolean {
  if (to - from !== key.length) return false;
  for (let j = 0; j < key.length; j++) if (b[from + j] !== key[j]) return false;
  return true;
}

function literalAt(b: Buffer, i: number, end: number, word: Buffer): boolean {
  if (i + word.length > end) return false;
  for (let j = 0; j < word.length; j++) if (b[i + j] !== word[j]) return false;
  return true;
}

/**
 * Reads the object b[start..end] (b[start] is `{`, b[end] its `}`) into `flatCounts` for the
 * keys `first` and `second` (their UTF-8 bytes, no escapes). Returns false, with `flatCounts`
 * undefined, when the object is not of the plain shape above.
 */
export function readFlatCounts(b: Buffer, start: number, end: number, first: Buffer, second: Buffer): boolean {
  flatCounts.first = -1;
  flatCounts.second = -1;
  if (b[start] !== OPEN || b[end] !== CLOSE) return false;
  let i = skipSpace(b, start + 1, end);
  if (i === end) return true; // {}
  for (;;) {
    // key
    if (b[i] !== QUOTE) return false;
    const keyStart = ++i;
    while (i < end) {
      const c = b[i];
      if (c === QUOTE) break;
      if (c === BACKSLASH || c < 0x20) return false;
      i++;
    }
    if (i >= end) return false;
    const keyEnd = i++;
    i = skipSpace(b, i, end);
    if (b[i] !== COLON) return false;
    i = skipSpace(b, i + 1, end);
    // value
    let value = -1;
    const c = b[i];
    if (c >= ZERO && c <= NINE) {
      const from = i;
      value = 0;
      while (i < end && b[i] >= ZERO && b[i] <= NINE) value = value * 10 + (b[i++] - ZERO);
      const digits = i - from;
      if (digits > MAX_DIGITS || (digits > 1 && c === ZERO)) return false;
    } else if (literalAt(b, i, end, NULL)) i += NULL.length;
    else if (literalAt(b, i, end, TRUE)) i += TRUE.length;
    else if (literalAt(b, i, end, FALSE)) i += FALSE.length;
    else return false;
    if (keyIs(b, keyStart, keyEnd, first)) flatCounts.first = value;
    else if (keyIs(b, keyStart, keyEnd, second)) flatCounts.second = value;
    i = skipSpace(b, i, end);
    if (i === end) return true;
    if (b[i] !== COMMA) return false;
    i = skipSpace(b, i + 1, end);
  }
}
