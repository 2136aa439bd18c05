import { RouterError } from '../errors.js';

/** Deepest nesting of arrays and objects a request body may have (documented in docs/errors.md). */
export const MAX_JSON_DEPTH = 512;

/** The refusal of a body that nests deeper than MAX_JSON_DEPTH. */
export function tooDeep(): RouterError {
  return new RouterError('invalid_request', `request body nests arrays/objects deeper than ${MAX_JSON_DEPTH} levels`);
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACE = 0x7b;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACE = 0x7d;
const CLOSE_BRACKET = 0x5d;

/**
 * True when `raw` nests arrays/objects deeper than `max`, counting brackets outside strings.
 * One pass over the bytes; string contents (most of a prompt) are skipped with the native
 * indexOf. Needs no valid JSON: JSON.parse judges that afterwards. `from` and `depth`: read from
 * raw[from], a place outside any string at that depth (the bytes before it checked already).
 */
export function nestsDeeperThan(raw: Buffer, max: number, from = 0, depth = 0): boolean {
  if (depth > max) return true;
  // Most bodies hold far fewer brackets than the limit: counting them with the native indexOf
  // settles those without looking at every byte.
  if (raw.length - from <= max - depth || !moreOpenersThan(raw, max - depth, from)) return false;
  return scanDeeperThan(raw, max, from, depth);
}

/**
 * nestsDeeperThan(raw, max) for a body whose bytes raw[skipFrom, skipTo) are a value kept before
 * (the tools' memo), which holds `skipOpeners` `{` and `[` bytes (openersIn, counted when it was
 * kept): the count that settles most bodies adds that number instead of finding them one by one
 * (an agent's tools are most of its body's brackets). The same answer as nestsDeeperThan.
 */
export function nestsDeeperThanSkipping(raw: Buffer, max: number, skipFrom: number, skipTo: number, skipOpeners: number): boolean {
  if (raw.length <= max || !moreOpenersThan(raw, max, 0, skipFrom, skipTo, skipOpeners)) return false;
  return scanDeeperThan(raw, max, 0, 0);
}

/** `{` and `[` bytes of `raw`, all counted (in strings or not). */
export function openersIn(raw: Buffer): number {
  return openersOutside(raw, OPEN_BRACE, 0, -1, -1, 0, Infinity) + openersOutside(raw, OPEN_BRACKET, 0, -1, -1, 0, Infinity);
}

/** The brackets' walk of nestsDeeperThan, from raw[from] at `depth`. */
function scanDeeperThan(raw: Buffer, max: number, from: number, depth: number): boolean {
  const n = raw.length;
  let i = from;
  while (i < n) {
    const c = raw[i];
    if (c === QUOTE) {
      i = stringEnd(raw, i + 1);
      if (i < 0) return false;
    } else if (c === OPEN_BRACE || c === OPEN_BRACKET) {
      if (++depth > max) return true;
    } else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) depth--;
    i++;
  }
  return false;
}

/** Index of the quote that closes the string whose contents start at `from`; -1 when unclosed. */
export function stringEnd(raw: Buffer, from: number): number {
  let q = raw.indexOf(QUOTE, from);
  while (q >= 0) {
    if (!quoteIsEscaped(raw, q, from)) return q;
    q = raw.indexOf(QUOTE, q + 1);
  }
  return -1;
}

/** Whether the quote at raw[q] follows an odd number of backslashes (counted back to `from`): an escaped quote, inside a string. */
export function quoteIsEscaped(raw: Buffer, q: number, from: number): boolean {
  let slashes = 0;
  for (let j = q - 1; j >= from && raw[j] === BACKSLASH; j--) slashes++;
  return (slashes & 1) === 1;
}

/**
 * True when `raw` from `from` on holds more than `max` `{` and `[` bytes (in strings or not);
 * those of raw[skipFrom, skipTo) (skipFrom -1: none) are not looked for, `skipOpeners` counting
 * for them.
 */
function moreOpenersThan(raw: Buffer, max: number, from: number, skipFrom = -1, skipTo = -1, skipOpeners = 0): boolean {
  const count = openersOutside(raw, OPEN_BRACE, from, skipFrom, skipTo, skipOpeners, max);
  return count > max || openersOutside(raw, OPEN_BRACKET, from, skipFrom, skipTo, count, max) > max;
}

/**
 * `count` plus the `byte`s of raw[from, …) outside raw[skipFrom, skipTo) (skipFrom -1: none),
 * counted up to just past `max`.
 */
function openersOutside(raw: Buffer, byte: number, from: number, skipFrom: number, skipTo: number, count: number, max: number): number {
  for (let i = raw.indexOf(byte, from); i >= 0; i = raw.indexOf(byte, i + 1)) {
    if (i >= skipFrom && i < skipTo) {
      i = skipTo - 1;
      continue;
    }
    if (++count > max) return count;
  }
  return count;
}
