/**
 * Usage of a complete (non-stream) OpenAI-style answer: the token counts the backend reported and
 * the generated text, which the router counts itself when the backend reports no usage.
 */

import { tokenCount, type AnswerUsage } from './inference-api.js';
import { choicesText } from './openai-choice-text.js';
import {
  bytesAt, flatCounts, flatValueStartBackwards, isJsonSpace, lastTokenByteBefore, readFlatCountsBackwards,
  scalarStartBackwards,
} from './flat-json-counts.js';
import { Buffer } from 'node:buffer';
import { followsMemberStart, KEY_USAGE, memberKeyBefore, trailingUsageObject, USAGE_KEY, usageObjectEndingAt } from './json-tail-usage.js';

/**
 * `promptTokens`/`completionTokens`: `usage.prompt_tokens`/`usage.completion_tokens`, or null when
 * absent or not a non-negative number. `text`: generated text of every choice joined (completions
 * `choices[].text`, chat `choices[].message`: see `choiceText`), read only when no completion count came.
 */
export type JsonUsage = AnswerUsage;

const NONE: JsonUsage = Object.freeze({ promptTokens: null, completionTokens: null, text: '', generated: null });

/**
 * Reads usage and generated text from a non-stream answer body. Malformed JSON gives nulls and ''
 * (`unreadable`).
 * Backends put `usage` last or nearly (OpenAI and TGI last; vLLM and SGLang before a few small
 * members): when only such members follow it and it names a completion count, or the answer has
 * no choices (embeddings), only that member is parsed (see `trailingUsage`); otherwise the whole
 * answer is.
 */
export function usageFromJson(body: Buffer | string): JsonUsage {
  const bytes = typeof body === 'string' ? Buffer.from(body) : body;
  const fast = trailingUsage(bytes);
  if (fast !== null) return fast;
  let parsed: unknown;
  try {
    parsed = JSON.parse(bytes.toString('utf8'));
  } catch {
    return { ...NONE, unreadable: true };
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return { ...NONE, unreadable: true };
  const answer = parsed as { usage?: unknown; choices?: unknown };
  const usage = typeof answer.usage === 'object' && answer.usage !== null
    ? answer.usage as { prompt_tokens?: unknown; completion_tokens?: unknown }
    : null;
  return {
    promptTokens: usage === null ? null : tokenCount(usage.prompt_tokens),
    completionTokens: usage === null ? null : tokenCount(usage.completion_tokens),
    text: choicesText(answer.choices),
    generated: null,
  };
}

/**
 * The counts of a JSON answer too large to keep whole, from its last bytes (json-tail-usage.ts);
 * null when they do not end with its usage. A usage without a completion count gives a null one
 * (an embeddings answer's; the text of a larger answer is not counted).
 */
export function usageFromJsonTail(tail: Buffer): JsonUsage | null {
  const u = trailingUsageObject(tail);
  if (u === null) return null;
  return { promptTokens: tokenCount(u.prompt_tokens), completionTokens: tokenCount(u.completion_tokens), text: '', generated: null };
}

const PROMPT_TOKENS = Buffer.from('prompt_tokens');
const COMPLETION_TOKENS = Buffer.from('completion_tokens');
const CLOSE = 0x7d; // }
const COLON = 0x3a;
const CLOSE_BRACKET = 0x5d; // ]

/**
 * Whether the object starting at b[start] is the value of a `"usage"` key that follows `,` or
 * `{` (white space allowed between the tokens): `..., "usage": {`.
 */
function isUsageValueAt(b: Buffer, start: number): boolean {
  let p = start - 1;
  while (p >= 0 && isJsonSpace(b[p])) p--;
  if (p < 0 || b[p] !== COLON) return false;
  p--;
  while (p >= 0 && isJsonSpace(b[p])) p--;
  const k = p - USAGE_KEY.length + 1;
  return k > 0 && bytesAt(b, k, USAGE_KEY) && followsMemberStart(b, k);
}

/**
 * The counts readFlatCountsBackwards read, or null when no completion count came and the answer
 * may have choices (the text is needed then).
 */
function flatUsage(b: Buffer): JsonUsage | null {
  if (flatCounts.second < 0 && !hasNoChoices(b)) return null;
  return {
    promptTokens: flatCounts.first < 0 ? null : flatCounts.first,
    completionTokens: flatCounts.second < 0 ? null : flatCounts.second,
    text: '',
    generated: null,
  };
}

const CHOICES_KEY = Buffer.from('"choices"');
const BACKSLASH = 0x5c;
const LETTER_H = 0x68;

/**
 * Whether the answer `b` certainly has no `choices` member, so no generated text to count: an
 * embeddings answer, whose usage names no completion count, would otherwise be parsed whole for
 * nothing (2 MB of vectors: 20-30 ms of the event loop). True when its bytes hold no backslash (a
 * key spelled with escapes) and no `"choices"`, looked for at each `h`: single bytes are found by
 * a native scan many times faster than the word is (a `"choices"` in a string value only sends
 * the answer to the whole parse, as before).
 */
function hasNoChoices(b: Buffer): boolean {
  if (b.indexOf(BACKSLASH) !== -1) return false;
  for (let i = b.indexOf(LETTER_H); i !== -1; i = b.indexOf(LETTER_H, i + 1)) {
    if (bytesAt(b, i - 2, CHOICES_KEY)) return false;
  }
  return true;
}

/** The most members after `usage` stepped over; an answer with more is parsed whole. */
const MAX_TRAILING_MEMBERS = 16;
/**
 * The counts of an answer whose root object has a `usage` member that only small members follow
 * (none: `..., "usage": {...} }`, as OpenAI and TGI send it; vLLM's `..., "usage": {...},
 * "prompt_logprobs": null, "prompt_token_ids": null, "kv_transfer_params": null }`; SGLang's `...,
 * "usage": {...}, "metadata": {"weight_version": "default"} }`), parsing only the usage object;
 * null when the answer does not end so, the object does not parse, or it names no completion
 * count and the answer may have choices (then the text is needed: the caller parses all).
 *
 * The members after usage are read from the answer's end, each value a scalar (null, true, false,
 * a number, a string of at most 256 bytes without escapes) or a flat object or array of them, each
 * key without escapes and not `usage`; anything else, or more than 16 of them, is not read. In
 * valid JSON the answer's last `}` closes the root object, and each value so read is one member of
 * it: a value read from a byte that ends a token (`}`, `]`, `"`, a digit, the last letter of a
 * literal) back to where its grammar starts is that token, or that flat object or array (which
 * holds no quote, brace or bracket but its tokens'); a string's opening quote is the quote before
 * its closing one when no backslash lies between and a `:`, `,`, `{` or `[` precedes it, since an
 * escaped quote follows a backslash. The `}` before the first of them (or the answer's last but
 * one, when none follow) ends the value of a root member, the one before them.
 *
 * That value is the usage object when its key is `"usage"` following `,` or `{` (the quote then
 * opens a string: a quote inside a string is escaped, and one that closes a string cannot be
 * followed by a letter); that member is then the last `usage` of the root object, the one
 * `JSON.parse` keeps, since no key after it is `usage`. An invalid answer that ends so is read
 * for that member instead of giving nulls.
 *
 * The usual usage object, flat integers, is read from its end (readFlatCountsBackwards) and its
 * key checked before it; any other object is found by its key and parsed with JSON.parse.
 */
function trailingUsage(b: Buffer): JsonUsage | null {
  let e = b.length - 1;
  while (e >= 0 && isJsonSpace(b[e])) e--;
  if (e < 0 || b[e] !== CLOSE) return null;
  e = lastTokenByteBefore(b, e);
  for (let members = 0; e >= 0; members++) {
    let start: number;
    if (b[e] === CLOSE) {
      // A flat object of integers (the usage vLLM, SGLang and TGI send) is read from its end, once.
      start = readFlatCountsBackwards(b, e, PROMPT_TOKENS, COMPLETION_TOKENS);
      if (start >= 0 && isUsageValueAt(b, start)) return flatUsage(b);
      if (start < 0) start = flatValueStartBackwards(b, e);
      if (start < 0) return parsedTrailingUsage(b, e);
    } else {
      start = b[e] === CLOSE_BRACKET ? flatValueStartBackwards(b, e) : scalarStartBackwards(b, e);
      if (start < 0) return null;
    }
    const before = memberKeyBefore(b, start);
    if (before === KEY_USAGE) return b[e] === CLOSE ? parsedTrailingUsage(b, e) : null;
    if (before < 0 || members === MAX_TRAILING_MEMBERS) return null;
    e = before;
  }
  return null;
}

/**
 * The counts of the usage object that ends at b[objectEnd], the end of a root member's value that
 * only members not named `usage` follow (see trailingUsage): found by its key and parsed with
 * JSON.parse (json-tail-usage.ts usageObjectEndingAt, which the reader of a large answer's end
 * shares); null as trailingUsage's.
 */
function parsedTrailingUsage(b: Buffer, objectEnd: number): JsonUsage | null {
  const u = usageObjectEndingAt(b, objectEnd);
  if (u === null) return null;
  const completionTokens = tokenCount(u.completion_tokens);
  if (completionTokens === null && !hasNoChoices(b)) return null;
  return { promptTokens: tokenCount(u.prompt_tokens), completionTokens, text: '', generated: null };
}
