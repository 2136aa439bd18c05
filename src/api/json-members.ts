import { stringEnd } from './json-depth.js';
import { isJsonSpace, skipSpace } from './flat-json-counts.js';
import { Buffer } from 'node:buffer';

/**
 * Set by readMember, for the member whose key starts at the index it was given: where the key ends
 * (past its closing quote), where its value starts and ends, and where the next member starts (or
 * the object's closing brace).
 */
export const member = new Int32Array(4);
export const KEY_END = 0;
export const VALUE_START = 1;
export const VALUE_END = 2;
export const NEXT = 3;

/** Where the first member of the JSON object `raw` starts (its key's quote), or its closing brace. */
export function firstMember(raw: Buffer): number {
  return skipSpace(raw, raw.indexOf(0x7b) + 1);
}

/**
 * Reads the member of a valid JSON object (it was parsed) whose key's quote is raw[i] into
 * `member`. The members of an object: from firstMember(raw), then member[NEXT], while the byte
 * there is not `}`.
 */
export function readMember(raw: Buffer, i: number): void {
  const keyEnd = stringEnd(raw, i + 1) + 1;
  const start = skipSpace(raw, skipSpace(raw, keyEnd) + 1); // past the colon
  const end = valueEnd(raw, start);
  let next = skipSpace(raw, end);
  if (raw[next] === 0x2c) next = skipSpace(raw, next + 1);
  member[KEY_END] = keyEnd;
  member[VALUE_START] = start;
  member[VALUE_END] = end;
  member[NEXT] = next;
}

/**
 * The name of the key raw[from, to) (its quotes included) as JSON.parse reads it, when it is
 * written with escapes ("mod\u0065l"); null when it has none: its bytes are its name.
 */
export function escapedKeyName(raw: Buffer, from: number, to: number): string | null {
  let escaped = false;
  for (let j = from + 1; j < to - 1 && !escaped; j++) escaped = raw[j] === 0x5c;
  return escaped ? (JSON.parse(raw.toString('utf8', from, to)) as string) : null;
}

/**
 * End (exclusive) of the JSON value that starts at raw[i], when it ends before `end` (the bytes
 * may be any, not yet parsed): a string to its closing quote, an object or array to the bracket
 * that closes it (its strings stepped over; that the brackets match JSON.parse checks), a number
 * or literal to the next separator; -1 when it does not end before `end` or nothing is there.
 */
export function valueEnd(raw: Buffer, i: number, end = raw.length): number {
  if (i >= end) return -1;
  const c = raw[i];
  if (c === 0x22) {
    const close = stringEnd(raw, i + 1);
    return close < 0 || close >= end ? -1 : close + 1;
  }
  if (c === 0x7b || c === 0x5b) {
    let depth = 0;
    for (let j = i; j < end; j++) {
      const d = raw[j];
      if (d === 0x22) {
        j = stringEnd(raw, j + 1);
        if (j < 0 || j >= end) return -1;
      } else if (d === 0x7b || d === 0x5b) depth++;
      else if ((d === 0x7d || d === 0x5d) && --depth === 0) return j + 1;
    }
    return -1;
  }
  // A number or literal: up to the next separator.
  let j = i;
  while (j < end) {
    const d = raw[j];
    if (d === 0x2c || d === 0x7d || d === 0x5d || isJsonSpace(d)) break;
    j++;
  }
  return j === i ? -1 : j;
}

/** What rewriteMembers does with one top-level member. */
export interface MemberChange {
  /** The member's name as JSON.parse reads it. */
  readonly name: string;
  /** Its new value as JSON bytes; null: the member is removed. */
  readonly value: Buffer | null;
  /** Only a member that is there (and not null) is replaced; none is added. */
  readonly ifPresent?: boolean;
}

const OPEN = Buffer.from('{');
const COMMA = Buffer.from(',');
const CLOSE = Buffer.from('}');

/**
 * `raw`, a JSON object that was parsed, with the top-level members of `changes` removed, replaced
 * or added (at the end), every other member's bytes as they came (numbers keep their spelling). A
 * name given more than once in `raw` has each of its members changed alike.
 */
export function rewriteMembers(raw: Buffer, changes: readonly MemberChange[]): Buffer {
  const parts: Buffer[] = [OPEN];
  const seen = new Array<boolean>(changes.length).fill(false);
  let members = 0;
  const n = raw.length;
  for (let i = firstMember(raw); i < n && raw[i] !== 0x7d; i = member[NEXT]) {
    readMember(raw, i);
    const keyEnd = member[KEY_END];
    const start = member[VALUE_START];
    const end = member[VALUE_END];
    const at = changeOf(raw, i, keyEnd, changes);
    if (at < 0) {
      if (members++ > 0) parts.push(COMMA);
      parts.push(raw.subarray(i, end));
    } else {
      const c = changes[at];
      seen[at] = true;
      const isNull = end - start === 4 && raw.toString('latin1', start, end) === 'null';
      const value = c.ifPresent === true && isNull ? raw.subarray(start, end) : c.value;
      if (value !== null) {
        if (members++ > 0) parts.push(COMMA);
        parts.push(raw.subarray(i, keyEnd), COLON, value);
      }
    }
  }
  for (let k = 0; k < changes.length; k++) {
    const c = changes[k];
    if (seen[k] || c.value === null || c.ifPresent === true) continue;
    if (members++ > 0) parts.push(COMMA);
    parts.push(Buffer.from(JSON.stringify(c.name)), COLON, c.value);
  }
  parts.push(CLOSE);
  return Buffer.concat(parts);
}

const COLON = Buffer.from(':');

/** The index in `changes` of the member whose key is raw[from, to) (quotes included), or -1. */
function changeOf(raw: Buffer, from: number, to: number, changes: readonly MemberChange[]): number {
  for (let k = 0; k < changes.length; k++) {
    const want = changes[k].name;
    if (to - from === want.length + 2 && raw.toString('latin1', from + 1, to - 1) === want) return k;
  }
  const name = escapedKeyName(raw, from, to);
  if (name === null) return -1;
  for (let k = 0; k < changes.length; k++) if (changes[k].name === name) return k;
  return -1;
}
