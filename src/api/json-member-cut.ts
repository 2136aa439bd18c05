/**
 * Finds the bytes to remove from a JSON object's text so that every top-level member of one name
 * is gone and the rest stays byte for byte: a member and the comma after it (and the white space
 * up to the next member), or, for the last member, the comma before it (from the end of the last
 * member kept). The value may be anything (nested objects and arrays, strings holding brackets or
 * escaped quotes); the object's grammar is checked at its top level, and its values as far as
 * needed to step over them. A key is matched as a JSON parser reads it: one spelled with escapes
 * (`"\u0075sage"`) is the same key, and a key named twice is cut twice (parsers keep the last, or
 * refuse the text).
 */
import { stringEnd } from './json-depth.js';
import { isJsonSpace } from './flat-json-counts.js';
import { valueEnd } from './json-members.js';
import { Buffer } from 'node:buffer';

/** The ranges of the last cutJsonMembers call that found the member: [from, to) pairs, in order, not overlapping. */
export const memberCuts: number[] = [];

const QUOTE = 0x22;
const COMMA = 0x2c;
const COLON = 0x3a;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;

const BACKSLASH = 0x5c;

/**
 * When b[start, end) is one JSON object (white space around it allowed) with top-level members
 * named `key`: sets `memberCuts` to the ranges whose removal leaves the object without them and
 * returns how many there are. 0 when there is no such member or the text is not an object this
 * reads, and, with `whenSet`, when each of them is `null`.
 */
export function cutJsonMembers(b: Buffer, start: number, end: number, key: Buffer, whenSet = false): number {
  memberCuts.length = 0;
  let set = false; // a member named `key` is not null
  let i = skipSpace(b, start, end);
  if (b[i] !== OPEN_BRACE) return 0;
  i = skipSpace(b, i + 1, end);
  if (b[i] === CLOSE_BRACE) return 0;
  let keptEnd = -1; // end of the last kept member's value
  for (;;) {
    if (i >= end || b[i] !== QUOTE) return 0;
    const keyStart = i;
    const close = stringEnd(b, i + 1);
    if (close < 0 || close >= end) return 0;
    const matches = keyIs(b, i + 1, close, key);
    i = skipSpace(b, close + 1, end);
    if (b[i] !== COLON) return 0;
    i = skipSpace(b, i + 1, end);
    const valueStop = valueEnd(b, i, end);
    if (valueStop < 0) return 0;
    if (matches && !set) set = !isNull(b, i, valueStop);
    i = skipSpace(b, valueStop, end);
    const c = b[i];
    if (c !== COMMA && c !== CLOSE_BRACE) return 0;
    if (!matches) {
      keptEnd = valueStop;
    } else if (c === COMMA) {
      memberCuts.push(keyStart, skipSpace(b, i + 1, end)); // up to the next member
    } else if (keptEnd >= 0) {
      // The last member: from the end of the last kept one, the comma before it and the members cut since.
      while (memberCuts.length !== 0 && memberCuts[memberCuts.length - 2] >= keptEnd) memberCuts.length -= 2;
      memberCuts.push(keptEnd, valueStop);
    } else {
      memberCuts.push(keyStart, valueStop);
    }
    if (c === CLOSE_BRACE) {
      if (i >= end || skipSpace(b, i + 1, end) !== end || (whenSet && !set)) return 0;
      return memberCuts.length >> 1;
    }
    i = skipSpace(b, i + 1, end);
  }
}

/** The string b[from, to) (between its quotes) reads as `key`: byte for byte, or once its escapes are decoded. */
export function keyIs(b: Buffer, from: number, to: number, key: Buffer): boolean {
  const n = to - from;
  if (n === key.length) return b.compare(key, 0, n, from, to) === 0;
  // An escape makes a key longer: \uXXXX is 6 bytes for one character.
  if (n < key.length || n > key.length * 6 || !hasBackslash(b, from, to)) return false;
  let decoded: unknown;
  try {
    decoded = JSON.parse(b.toString('utf8', from - 1, to + 1));
  } catch {
    return false;
  }
  return typeof decoded === 'string' && Buffer.byteLength(decoded) === key.length && key.equals(Buffer.from(decoded));
}

function hasBackslash(b: Buffer, from: number, to: number): boolean {
  for (let i = from; i < to; i++) if (b[i] === BACKSLASH) return true;
  return false;
}

/** b[from, to) is the literal `null`. */
function isNull(b: Buffer, from: number, to: number): boolean {
  return to - from === 4 && b[from] === 0x6e && b[from + 1] === 0x75 && b[from + 2] === 0x6c && b[from + 3] === 0x6c;
}

function skipSpace(b: Buffer, i: number, end: number): number {
  while (i < end && isJsonSpace(b[i])) i++;
  return i;
}
