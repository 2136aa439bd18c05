import { stringEnd } from './json-depth.js';
import { skipSpace } from './flat-json-counts.js';
import { valueEnd } from './openai-body.js';
import { Buffer } from 'node:buffer';

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
  let i = skipSpace(raw, raw.indexOf(0x7b) + 1);
  while (i < n && raw[i] !== 0x7d) {
    const keyEnd = stringEnd(raw, i + 1) + 1;
    const start = skipSpace(raw, skipSpace(raw, keyEnd) + 1); // past the colon
    const end = valueEnd(raw, start);
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
    i = skipSpace(raw, end);
    if (raw[i] === 0x2c) i = skipSpace(raw, i + 1);
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
  // A name written with escapes ("max\u005ftokens"): what JSON.parse read.
  const escape = raw.indexOf(0x5c, from);
  if (escape < 0 || escape >= to) return -1;
  const name = JSON.parse(raw.toString('utf8', from, to)) as string;
  for (let k = 0; k < changes.length; k++) if (changes[k].name === name) return k;
  return -1;
}
