/**
 * Finds the bytes to remove from a JSON object's text so that one top-level member is gone and the
 * rest stays byte for byte: the member and the comma after it (and the white space up to the next
 * member), or, for the last member, the comma before it. The value may be anything (nested
 * objects and arrays, strings holding brackets or escaped quotes); the object's grammar is checked
 * at its top level, and its values as far as needed to step over them. A key spelled with an
 * escape is not matched.
 */
import { stringEnd } from './json-depth.js';
import { isJsonSpace } from './flat-json-counts.js';
import type { Buffer } from 'node:buffer';

/** The range [from, to) of the last successful cutJsonMember call. */
export const memberCut = { from: 0, to: 0 };

const QUOTE = 0x22;
const COMMA = 0x2c;
const COLON = 0x3a;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;

/**
 * When b[start, end) is one JSON object (white space around it allowed) with a top-level member
 * named `key`: sets `memberCut` to the range whose removal leaves the object without that member
 * (the first, if named twice) and returns true. False when there is no such member or the text is
 * not an object this reads.
 */
export function cutJsonMember(b: Buffer, start: number, end: number, key: Buffer): boolean {
  let i = skipSpace(b, start, end);
  if (b[i] !== OPEN_BRACE) return false;
  i = skipSpace(b, i + 1, end);
  if (b[i] === CLOSE_BRACE) return false;
  let previousEnd = -1; // end of the previous member's value
  let cutFrom = -1;
  let cutTo = -1;
  for (;;) {
    if (i >= end || b[i] !== QUOTE) return false;
    const keyStart = i;
    const close = stringEnd(b, i + 1);
    if (close < 0 || close >= end) return false;
    const matches = cutFrom < 0 && close - i - 1 === key.length && b.compare(key, 0, key.length, i + 1, close) === 0;
    i = skipSpace(b, close + 1, end);
    if (b[i] !== COLON) return false;
    i = skipSpace(b, i + 1, end);
    const valueEnd = skipValue(b, i, end);
    if (valueEnd < 0) return false;
    i = skipSpace(b, valueEnd, end);
    const c = b[i];
    if (c !== COMMA && c !== CLOSE_BRACE) return false;
    if (matches) {
      if (c === COMMA) {
        cutFrom = keyStart;
        cutTo = skipSpace(b, i + 1, end);
      } else if (previousEnd >= 0) {
        cutFrom = previousEnd; // the comma before it, and the white space around that comma
        cutTo = valueEnd;
      } else {
        cutFrom = keyStart;
        cutTo = valueEnd;
      }
    }
    if (c === CLOSE_BRACE) {
      if (i >= end || skipSpace(b, i + 1, end) !== end || cutFrom < 0) return false;
      memberCut.from = cutFrom;
      memberCut.to = cutTo;
      return true;
    }
    previousEnd = valueEnd;
    i = skipSpace(b, i + 1, end);
  }
}

function skipSpace(b: Buffer, i: number, end: number): number {
  while (i < end && isJsonSpace(b[i])) i++;
  return i;
}

/** Where the JSON value starting at b[i] ends (the index after it); -1 when it does not end before `end`. */
function skipValue(b: Buffer, i: number, end: number): number {
  if (i >= end) return -1;
  const c = b[i];
  if (c === QUOTE) {
    const close = stringEnd(b, i + 1);
    return close < 0 || close >= end ? -1 : close + 1;
  }
  if (c === OPEN_BRACE || c === OPEN_BRACKET) {
    let depth = 0;
    for (let j = i; j < end; j++) {
      const d = b[j];
      if (d === QUOTE) {
        j = stringEnd(b, j + 1);
        if (j < 0 || j >= end) return -1;
      } else if (d === OPEN_BRACE || d === OPEN_BRACKET) depth++;
      else if ((d === CLOSE_BRACE || d === CLOSE_BRACKET) && --depth === 0) return j + 1;
    }
    return -1;
  }
  // A number or literal: up to the next separator.
  let j = i;
  while (j < end) {
    const d = b[j];
    if (d === COMMA || d === CLOSE_BRACE || d === CLOSE_BRACKET || isJsonSpace(d)) break;
    j++;
  }
  return j === i ? -1 : j;
}
