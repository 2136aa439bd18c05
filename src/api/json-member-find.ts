/**
 * Finds one top-level member of a JSON object's text without reading its value when the value's
 * bytes are known: a JsonTextMemo that holds them gives the value's end at once (a memory
 * comparison), where stepping over a large array byte by byte would cost what parsing it does.
 *
 * The object's grammar is checked at its top level and its other values as far as needed to step
 * over them; the text is not validated (the caller parses what it keeps, and the member's value
 * when the memo did not know it).
 */
import { stringEnd } from './json-depth.js';
import { isJsonSpace } from './flat-json-counts.js';
import { keyIs, skipValue } from './json-member-cut.js';
import type { JsonTextMemo, MemoEntry } from './json-text-memo.js';
import type { Buffer } from 'node:buffer';

const QUOTE = 0x22;
const COMMA = 0x2c;
const COLON = 0x3a;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;

/** Where findMember found the member: indexes into `foundMember`. */
export const VALUE_START = 0;
export const VALUE_END = 1;
/** [CUT_FROM, CUT_TO): the bytes whose removal leaves the object without the member (and its comma). */
export const CUT_FROM = 2;
export const CUT_TO = 3;

/** Set by the last findMember call that returned true. */
export const foundMember = new Int32Array(4);

/** The memo's entry for the found member's value, or null when it was stepped over (set by findMember). */
export let foundEntry: MemoEntry | null = null;

function skipSpace(b: Buffer, i: number, end: number): number {
  while (i < end && isJsonSpace(b[i])) i++;
  return i;
}

/**
 * True when b[start, end) is one JSON object (white space around it allowed) that names `key`
 * exactly once at its top level; sets `foundMember` and `foundEntry`. False when it does not name
 * it, names it twice (a parser keeps the last), or is not an object this reads.
 */
export function findMember(b: Buffer, start: number, end: number, key: Buffer, memo: JsonTextMemo | null): boolean {
  foundEntry = null;
  let found = false;
  let i = skipSpace(b, start, end);
  if (b[i] !== OPEN_BRACE) return false;
  i = skipSpace(b, i + 1, end);
  if (b[i] === CLOSE_BRACE) return false;
  let keptEnd = -1; // end of the value of the member before the current one
  for (;;) {
    if (i >= end || b[i] !== QUOTE) return false;
    const keyStart = i;
    const close = stringEnd(b, i + 1);
    if (close < 0 || close >= end) return false;
    const matches = keyIs(b, i + 1, close, key);
    if (matches && found) return false;
    i = skipSpace(b, close + 1, end);
    if (b[i] !== COLON) return false;
    i = skipSpace(b, i + 1, end);
    let valueEnd: number;
    if (matches) {
      const entry = memo === null ? null : memo.find(b, i, end);
      valueEnd = entry === null ? skipValue(b, i, end) : i + entry.raw.length;
      foundEntry = entry;
    } else valueEnd = skipValue(b, i, end);
    if (valueEnd < 0) return false;
    const next = skipSpace(b, valueEnd, end);
    const c = b[next];
    if (c !== COMMA && c !== CLOSE_BRACE) return false;
    if (matches) {
      found = true;
      foundMember[VALUE_START] = i;
      foundMember[VALUE_END] = valueEnd;
      if (c === COMMA) {
        // Up to the next member.
        foundMember[CUT_FROM] = keyStart;
        foundMember[CUT_TO] = skipSpace(b, next + 1, end);
      } else if (keptEnd >= 0) {
        // The last member: from the end of the member before it, its comma included.
        foundMember[CUT_FROM] = keptEnd;
        foundMember[CUT_TO] = valueEnd;
      } else {
        // The only member.
        foundMember[CUT_FROM] = keyStart;
        foundMember[CUT_TO] = valueEnd;
      }
    }
    keptEnd = valueEnd;
    if (c === CLOSE_BRACE) return found && skipSpace(b, next + 1, end) === end;
    i = skipSpace(b, next + 1, end);
  }
}
