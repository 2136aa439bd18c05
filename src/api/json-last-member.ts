/**
 * The root object's last large member, read from the end of its text: the JSON an SDK sends puts
 * the request's parameters in a fixed order, and the tool definitions after the messages, followed
 * only by small members (`temperature`, `tool_choice`, `stream`, ...). Reading from the end finds
 * them in a few hundred bytes, however long the conversation before them, where a walk from the
 * start would step over every message (docs/tokens.md#tool-definitions-read-by-their-bytes).
 *
 * Read as json-tail-usage.ts reads an answer's usage: in valid JSON the last `}` closes the root
 * object, and each small value stepped over back from it is one member of it. None of this
 * validates the text: the caller parses what it keeps.
 */
import type { Buffer } from 'node:buffer';
import {
  bytesAt, flatValueStartBackwards, keyStartBackwards, lastTokenByteBefore, scalarStartBackwards, skipSpace,
} from './flat-json-counts.js';
import { quoteIsEscaped } from './json-depth.js';

const QUOTE = 0x22;
const COMMA = 0x2c;
const OPEN = 0x7b;
const CLOSE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
/** The most small members after the large one stepped over. */
const MAX_TRAILING_MEMBERS = 16;

/**
 * The index of the last byte of the value of the root object's last member that is an array or
 * object other than a flat one (json-tail-usage.ts's small values: scalars, flat objects and arrays
 * of them), when only small members follow it, none of them keyed `key` (its quotes included);
 * else -1. `from` is where the object's text starts.
 */
export function lastLargeValueEnd(b: Buffer, from: number, key: Buffer): number {
  let e = lastTokenByteBefore(b, b.length);
  if (e < from || b[e] !== CLOSE) return -1;
  e = lastTokenByteBefore(b, e);
  for (let members = 0; e > from && members <= MAX_TRAILING_MEMBERS; members++) {
    const last = b[e];
    let start: number;
    if (last === CLOSE || last === CLOSE_BRACKET) {
      start = flatValueStartBackwards(b, e);
      if (start < 0) return e;
    } else start = scalarStartBackwards(b, e);
    if (start < 0) return -1;
    const open = keyStartBackwards(b, start);
    if (open < 0 || bytesAt(b, open, key)) return -1;
    const before = lastTokenByteBefore(b, open);
    if (before < from || b[before] !== COMMA) return -1;
    e = lastTokenByteBefore(b, before);
  }
  return -1;
}

/**
 * The first byte of the array or object whose last byte is b[last] (`]` or `}`), looking back at
 * most `maxBytes`; -1 when its start is not within them. A quote delimits a string when an even
 * number of backslashes precede it (an escaped quote follows an odd number), so strings are known
 * reading back as reading forth.
 */
export function valueStartBackwards(b: Buffer, last: number, from: number, maxBytes: number): number {
  const limit = Math.max(from, last - maxBytes);
  let depth = 0;
  for (let i = last; i >= limit; i--) {
    const c = b[i];
    if (c === QUOTE) {
      // Back to the quote that opens this string.
      do {
        i--;
        while (i >= limit && b[i] !== QUOTE) i--;
        if (i < limit) return -1;
      } while (quoteIsEscaped(b, i, limit));
    } else if (c === CLOSE || c === CLOSE_BRACKET) depth++;
    else if ((c === OPEN || c === OPEN_BRACKET) && --depth === 0) return i;
  }
  return -1;
}

/** Set by findMemberCut: the bytes [CUT_FROM, CUT_TO) whose removal leaves the object without the member. */
export const memberCut = new Int32Array(2);
export const CUT_FROM = 0;
export const CUT_TO = 1;

/**
 * For the root member whose value is b[start, last], after which only small members follow (as
 * lastLargeValueEnd found): true when its key is `key` (its quotes included, spelled without
 * escapes), setting `memberCut` to the member and the comma that joins it to the others.
 */
export function findMemberCut(b: Buffer, from: number, start: number, last: number, key: Buffer): boolean {
  // The key holds no quote but its closing one (keyStartBackwards): `key` from `open` is all of it.
  const open = keyStartBackwards(b, start);
  if (open < from || !bytesAt(b, open, key)) return false;
  const before = lastTokenByteBefore(b, open);
  if (before < from) return false;
  if (b[before] === COMMA) {
    // From the comma before it (the member is never the first).
    memberCut[CUT_FROM] = before;
    memberCut[CUT_TO] = last + 1;
    return true;
  }
  if (b[before] !== OPEN || lastTokenByteBefore(b, before) >= from) return false;
  // The first member: up to the next one, or to the object's end.
  const next = skipSpace(b, last + 1);
  if (b[next] === COMMA) {
    memberCut[CUT_FROM] = open;
    memberCut[CUT_TO] = skipSpace(b, next + 1);
    return true;
  }
  if (b[next] !== CLOSE) return false;
  memberCut[CUT_FROM] = open;
  memberCut[CUT_TO] = last + 1;
  return true;
}

/** The text of b[from, …) without the bytes b[cutFrom, cutTo) (cutFrom < 0: none), decoded as UTF-8. */
export function textWithout(b: Buffer, from: number, cutFrom: number, cutTo: number): string {
  return cutFrom < 0 ? b.toString('utf8', from) : b.toString('utf8', from, cutFrom) + b.toString('utf8', cutTo);
}
