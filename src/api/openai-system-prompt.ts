/**
 * The system prompt of a chat body (its first message's text) or of a Responses body (its
 * `instructions`), read by its bytes when they were seen before
 * (docs/tokens.md#system-prompts-read-by-their-bytes).
 *
 * An agent sends the same system prompt with every turn, byte for byte, often of many kilobytes.
 * Parsing it makes a new string each time, which the count cache then compares whole with the one
 * it kept. So the prompt, when it is a string of at least MIN_PROMPT_BYTES, is kept by its bytes
 * (json-text-memo.ts, keyed by its first bytes) with the string a parse made of it. A body whose
 * first member of the prompt's key (`"content"`, `"instructions"`) has a value that repeats one
 * kept is parsed with that value written as a short marker string instead, and the kept string
 * takes the marker's place.
 *
 * The marker holds a secret of the process, so no client can send it: when, and only when, the
 * parsed body has the marker where the prompt is (`messages[0].content`, `instructions`), the
 * bytes replaced were that member's whole value (replacing one JSON string by another leaves every other token where it was), and its text
 * is the kept one. Otherwise (the member was another object's, named twice, or the body is not
 * JSON) the body is parsed as it came, with the parser's own error. The text, and so the count, is
 * the same either way.
 */
import { Buffer } from 'node:buffer';
import { randomBytes } from 'node:crypto';
import { JsonTextMemo } from './json-text-memo.js';
import { textWithout } from './json-last-member.js';
import { valueEnd } from './json-members.js';
import { skipSpace } from './flat-json-counts.js';

/** Memory the memo of system prompts holds at most per event loop or tokenizer thread (two generations). */
export const SYSTEM_PROMPT_MEMO_BYTES = 4 * 1024 * 1024;

/** System prompts shorter than this, in bytes as sent, are parsed: they cost little to read. */
export const MIN_PROMPT_BYTES = 1024;

/**
 * New prompts stop being kept after this many bodies in a row brought a long one not kept (a client
 * whose system prompt changes every request); then one body in LEARN_EVERY is still tried.
 */
const LEARN_MISSES = 16;
const LEARN_EVERY = 64;

/** Where a body's system prompt is: the first member of `key` in its bytes, `member` of what `holder` finds in its value. */
export interface PromptPlace {
  readonly key: Buffer;
  readonly member: string;
  holder(body: unknown): Record<string, unknown> | null;
}

/** A chat body's: its first message's `content` (SDKs write the first message before anything else that has one). */
export const CHAT_SYSTEM_PROMPT: PromptPlace = { key: Buffer.from('"content"'), member: 'content', holder: firstMessage };
/** A Responses body's: its `instructions`. */
export const RESPONSES_INSTRUCTIONS: PromptPlace = { key: Buffer.from('"instructions"'), member: 'instructions', holder: asObject };

const memo = new JsonTextMemo(SYSTEM_PROMPT_MEMO_BYTES, 'first-bytes');
const MARKER_TEXT = `\u0000inference-router:${randomBytes(12).toString('base64')}`;
const MARKER = JSON.stringify(MARKER_TEXT);
const QUOTE = 0x22;
const COLON = 0x3a;
let missesInARow = 0;

/** Bodies whose system prompt was read by its bytes, and prompts kept, in this event loop or thread. */
export const systemPromptMemoStats = { found: 0, kept: 0 };

/**
 * The JSON value of raw[from, …) without the bytes raw[cutFrom, cutTo) (cutFrom < 0: none), its
 * system prompt at `place` read by its bytes when it can be; throws the parser's error for a text
 * that is not JSON, as JSON.parse of that text does.
 */
export function parsePromptJson(raw: Buffer, from: number, cutFrom: number, cutTo: number, place: PromptPlace): unknown {
  // Only a prompt before the cut: SDKs write the messages and the instructions before the tools.
  const limit = cutFrom < 0 ? raw.length : cutFrom;
  const start = firstStringValue(raw, from, limit, place.key);
  const known = start < 0 ? null : memo.findFrom(raw, start, limit);
  if (known !== null) {
    const end = start + known.raw.length;
    let body: unknown;
    try {
      body = JSON.parse(raw.toString('utf8', from, start) + MARKER + textWithout(raw, end, cutFrom, cutTo));
    } catch {
      body = undefined;
    }
    const holder = place.holder(body);
    if (holder !== null && holder[place.member] === MARKER_TEXT) {
      holder[place.member] = known.text;
      missesInARow = 0;
      systemPromptMemoStats.found++;
      return body;
    }
  }
  const body: unknown = JSON.parse(textWithout(raw, from, cutFrom, cutTo));
  if (start < 0 || known !== null) return body;
  const text = place.holder(body)?.[place.member];
  // Too short whatever its bytes (a character is at most 6 bytes as sent, as an escape).
  if (typeof text !== 'string' || text.length * 6 < MIN_PROMPT_BYTES) return body;
  const end = valueEnd(raw, start, limit);
  // A long prompt not kept (a short one does not hold back the learning of long ones).
  if (end >= 0 && end - start >= MIN_PROMPT_BYTES && (missesInARow++ < LEARN_MISSES || missesInARow % LEARN_EVERY === 0)) keep(raw, start, end, text);
  return body;
}

/**
 * Keeps the bytes raw[start, end) of the prompt `text` (what the parse found where the prompt is),
 * the string whose opening quote is the first member of the place's key: when parsed again they give
 * that very text.
 */
function keep(raw: Buffer, start: number, end: number, text: string): void {
  let again: unknown;
  try {
    again = JSON.parse(raw.toString('utf8', start, end));
  } catch {
    return;
  }
  if (again !== text) return;
  // The string of this body's parse: the one the count cache keeps, so later lookups compare it by reference.
  memo.add(raw, start, end, text);
  systemPromptMemoStats.kept++;
}

/** A parsed body when it is an object, else null. */
function asObject(body: unknown): Record<string, unknown> | null {
  return body !== null && typeof body === 'object' && !Array.isArray(body) ? body as Record<string, unknown> : null;
}

/** `messages[0]` of a parsed body when it is an object, else null. */
function firstMessage(body: unknown): Record<string, unknown> | null {
  const messages = asObject(body)?.messages;
  return Array.isArray(messages) && messages.length > 0 ? asObject(messages[0]) : null;
}

/**
 * Where the value of the first `key` member of raw[from, limit) starts, when it is a string (its
 * opening quote), else -1. Only the first: the prompt's member comes before any other of its key.
 */
function firstStringValue(raw: Buffer, from: number, limit: number, key: Buffer): number {
  const k = raw.indexOf(key, from);
  if (k < 0) return -1;
  let i = skipSpace(raw, k + key.length);
  if (i >= limit || raw[i] !== COLON) return -1;
  i = skipSpace(raw, i + 1);
  return i < limit && raw[i] === QUOTE ? i : -1;
}
