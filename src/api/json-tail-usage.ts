/**
 * The `usage` member of a JSON answer too large to keep whole, read from its last bytes only.
 * Backends put `usage` last or nearly (OpenAI and TGI last; vLLM and SGLang before a few small
 * members; OpenAI's Responses answers before `user` and `metadata`), so the member is in the
 * answer's last few hundred bytes even when the answer is many megabytes of text or vectors.
 */
import { Buffer } from 'node:buffer';
import {
  bytesAt, flatValueStartBackwards, isJsonSpace, keyStartBackwards, lastTokenByteBefore, scalarStartBackwards,
} from './flat-json-counts.js';

export const USAGE_KEY = Buffer.from('"usage"');
const QUOTE = 0x22;
const OPEN = 0x7b; // {
const CLOSE = 0x7d; // }
const CLOSE_BRACKET = 0x5d; // ]
const COMMA = 0x2c;
const COLON = 0x3a;
/** The most members after `usage` stepped over (as the whole answer's reader: openai-json-usage.ts). */
const MAX_TRAILING_MEMBERS = 16;
/** memberKeyBefore: the member's key is `usage`. */
export const KEY_USAGE = -2;

/**
 * The value of the root object's last `usage` member, parsed, when `tail` (the last bytes of a
 * JSON answer, cut anywhere before them) ends with it, only small members after it: scalars
 * (null, booleans, numbers, strings of at most 256 bytes without escapes) or flat objects or
 * arrays of those, each key without escapes and not `usage`, at most 16. null when the bytes do
 * not end so, the member's value is not an object, or it does not parse.
 *
 * Read from the end as the whole answer's reader does (openai-json-usage.ts trailingUsage, which
 * also reads a flat usage's counts as it walks): in valid JSON the last `}` closes the root
 * object, and each small value stepped over is one member of it. The value before them is found
 * in one of two ways. A flat object (the usual usage) is stepped over like the others, and its
 * key read before it. Any other object (a usage with nested details, as the Responses API sends)
 * ends at the last byte of that member, and is found by its key (usageObjectEndingAt).
 */
export function trailingUsageObject(tail: Buffer): Record<string, unknown> | null {
  let e = lastTokenByteBefore(tail, tail.length);
  if (e < 0 || tail[e] !== CLOSE) return null;
  e = lastTokenByteBefore(tail, e);
  for (let members = 0; e >= 0 && members <= MAX_TRAILING_MEMBERS; members++) {
    const last = tail[e];
    const start = last === CLOSE || last === CLOSE_BRACKET ? flatValueStartBackwards(tail, e) : scalarStartBackwards(tail, e);
    if (start < 0) return last === CLOSE ? usageObjectEndingAt(tail, e) : null;
    const before = memberKeyBefore(tail, start);
    if (before === KEY_USAGE) return last === CLOSE ? parsedObject(tail, start, e) : null;
    if (before < 0) return null;
    e = before;
  }
  return null;
}

/**
 * Where the last `"usage"` starts before `end` (the key ends before it), or -1. A loop in JS: the
 * key sits a few dozen bytes from the end, closer than a call into Buffer's native search costs.
 */
function lastKeyBefore(b: Buffer, end: number): number {
  const n = USAGE_KEY.length;
  for (let i = end - n; i >= 0; i--) if (b[i] === QUOTE && bytesAt(b, i, USAGE_KEY)) return i;
  return -1;
}

/** Whether the last byte before b[at] that is not white space is `,` or `{`: what a member's key follows. */
export function followsMemberStart(b: Buffer, at: number): boolean {
  let p = at - 1;
  while (p >= 0 && isJsonSpace(b[p])) p--;
  return p >= 0 && (b[p] === COMMA || b[p] === OPEN);
}

/**
 * For the root member whose value starts at b[start]: the index of the last byte of the member
 * before it (white space aside), -1 when the key or the comma before it is not there, has an
 * escape, or no member comes before, or KEY_USAGE when the key is `usage` (after `,` or `{`).
 */
export function memberKeyBefore(b: Buffer, start: number): number {
  const open = keyStartBackwards(b, start);
  if (open < 0) return -1;
  const i = lastTokenByteBefore(b, open);
  if (i < 0) return -1;
  // The key holds no quote but its closing one (keyStartBackwards): `"usage"` from `open` is all of it.
  if (bytesAt(b, open, USAGE_KEY) && (b[i] === COMMA || b[i] === OPEN)) return KEY_USAGE;
  return b[i] === COMMA ? lastTokenByteBefore(b, i) : -1;
}

/**
 * The usage object that ends at b[end] (a root member's value that is not flat, only members not
 * named `usage` after it), parsed; null when none is. The `"usage"` keys before it are tried from
 * the last: the member is the usage when, from the `{` after its key to b[end], the bytes parse as
 * one object (a span from a nested object's or another member's `{` holds more closing braces
 * than it opens, and does not parse; a `"usage"` inside a string has escaped quotes, so it is
 * never found).
 */
export function usageObjectEndingAt(b: Buffer, end: number): Record<string, unknown> | null {
  for (let k = lastKeyBefore(b, end); k > 0; k = lastKeyBefore(b, k)) {
    if (!followsMemberStart(b, k)) continue;
    let q = k + USAGE_KEY.length;
    while (q < end && isJsonSpace(b[q])) q++;
    if (b[q] !== COLON) continue;
    q++;
    while (q < end && isJsonSpace(b[q])) q++;
    if (b[q] !== OPEN) continue;
    const usage = parsedObject(b, q, end);
    if (usage !== null) return usage;
  }
  return null;
}

/** b[start..end] parsed, when it is a JSON object; else null. */
function parsedObject(b: Buffer, start: number, end: number): Record<string, unknown> | null {
  let v: unknown;
  try {
    v = JSON.parse(b.toString('utf8', start, end + 1));
  } catch {
    return null;
  }
  return typeof v === 'object' && v !== null && !Array.isArray(v) ? v as Record<string, unknown> : null;
}
