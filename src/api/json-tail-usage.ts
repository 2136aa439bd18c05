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

const USAGE_KEY = Buffer.from('"usage"');
const OPEN = 0x7b; // {
const CLOSE = 0x7d; // }
const CLOSE_BRACKET = 0x5d; // ]
const COMMA = 0x2c;
const COLON = 0x3a;
/** The most members after `usage` stepped over (as the whole answer's reader: openai-json-usage.ts). */
const MAX_TRAILING_MEMBERS = 16;

/**
 * The value of the root object's last `usage` member, parsed, when `tail` (the last bytes of a
 * JSON answer, cut anywhere before them) ends with it, only small members after it: scalars
 * (null, booleans, numbers, strings of at most 256 bytes without escapes) or flat objects or
 * arrays of those, each key without escapes and not `usage`, at most 16. null when the bytes do
 * not end so, the member's value is not an object, or it does not parse.
 *
 * Read from the end as the whole answer's reader does (openai-json-usage.ts trailingUsage): in
 * valid JSON the last `}` closes the root object, and each small value stepped over is one member
 * of it. The value before them is found in one of two ways. A flat object (the usual usage) is
 * stepped over like the others, and its key read before it. Any other object (a usage with nested
 * details, as the Responses API sends) ends at the last byte of that member; the `"usage"` keys
 * before it are tried from the last: the member is the usage when, from the `{` after its key to
 * that byte, the bytes parse as one object (a span from a nested object's or another member's
 * `{` holds more closing braces than it opens, and does not parse; a `"usage"` inside a string
 * has escaped quotes, so it is never found).
 */
export function trailingUsageObject(tail: Buffer): Record<string, unknown> | null {
  let e = lastTokenByteBefore(tail, tail.length);
  if (e < 0 || tail[e] !== CLOSE) return null;
  e = lastTokenByteBefore(tail, e);
  for (let members = 0; e >= 0 && members <= MAX_TRAILING_MEMBERS; members++) {
    const last = tail[e];
    const start = last === CLOSE || last === CLOSE_BRACKET ? flatValueStartBackwards(tail, e) : scalarStartBackwards(tail, e);
    if (start < 0) return last === CLOSE ? usageEndingAt(tail, e) : null;
    const key = keyStartBackwards(tail, start);
    if (key < 0) return null;
    const before = lastTokenByteBefore(tail, key);
    if (before < 0) return null;
    // The key holds no quote but its closing one (keyStartBackwards): `"usage"` from `key` is all of it.
    if (bytesAt(tail, key, USAGE_KEY)) return last === CLOSE && (tail[before] === COMMA || tail[before] === OPEN) ? parsedObject(tail, start, e) : null;
    if (tail[before] !== COMMA) return null;
    e = lastTokenByteBefore(tail, before);
  }
  return null;
}

/** The usage object that ends at tail[end] (a root member's value, not flat), found by its key; null when none is. */
function usageEndingAt(tail: Buffer, end: number): Record<string, unknown> | null {
  for (let k = tail.lastIndexOf(USAGE_KEY, end); k > 0; k = tail.lastIndexOf(USAGE_KEY, k - 1)) {
    const before = lastTokenByteBefore(tail, k);
    if (before < 0 || (tail[before] !== COMMA && tail[before] !== OPEN)) continue;
    let q = k + USAGE_KEY.length;
    while (q < end && isJsonSpace(tail[q])) q++;
    if (tail[q] !== COLON) continue;
    q++;
    while (q < end && isJsonSpace(tail[q])) q++;
    if (tail[q] !== OPEN) continue;
    const usage = parsedObject(tail, q, end);
    if (usage !== null) return usage;
  }
  return null;
}

/** tail[start..end] parsed, when it is a JSON object; else null. */
function parsedObject(tail: Buffer, start: number, end: number): Record<string, unknown> | null {
  let v: unknown;
  try {
    v = JSON.parse(tail.toString('utf8', start, end + 1));
  } catch {
    return null;
  }
  return typeof v === 'object' && v !== null && !Array.isArray(v) ? v as Record<string, unknown> : null;
}
