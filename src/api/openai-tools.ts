/**
 * The tool definitions of a request (`tools`), read by their bytes when they were seen before
 * (docs/tokens.md#tool-definitions-read-by-their-bytes).
 *
 * The model servers render the tools into the prompt as JSON, so the router counts their JSON
 * text: the parsed array written again with JSON.stringify (compact, the same text whatever white
 * space the client sent). An agent sends the same tools with every turn; parsing them and writing
 * them again cost about as much as all the rest of such a request. So when the body's last large
 * member (json-last-member.ts) is `tools` and its bytes repeat a value seen before, its text is the
 * one made then, the member is not parsed, and the rest of the body is parsed without it. A body
 * whose tools are new is parsed whole, and its tools' bytes kept for the next request. The text,
 * and so the count, is the same either way.
 */
import { Buffer } from 'node:buffer';
import { CUT_FROM, CUT_TO, findMemberCut, lastLargeValueEnd, memberCut, textWithout, valueStartBackwards } from './json-last-member.js';
import { JsonTextMemo, MIN_BYTES } from './json-text-memo.js';
import { parsePromptJson, type PromptPlace } from './openai-system-prompt.js';
import { MAX_JSON_DEPTH, nestsDeeperThan, nestsDeeperThanSkipping, tooDeep } from './json-depth.js';

/** Memory the memo of tool definitions holds at most per router process (two generations). */
export const TOOLS_MEMO_BYTES = 4 * 1024 * 1024;

/**
 * New tools stop being kept after this many bodies in a row brought tools not kept (a client whose
 * tools change every request); then one body in LEARN_EVERY is still tried.
 */
const LEARN_MISSES = 16;
const LEARN_EVERY = 64;

const memo = new JsonTextMemo(TOOLS_MEMO_BYTES);
const TOOLS_KEY = Buffer.from('"tools"');
const CLOSE_BRACKET = 0x5d;
let missesInARow = 0;

/** The text of tool definitions as counted: their JSON written again; '' when not a non-empty array. */
export function toolsText(tools: unknown): string {
  return Array.isArray(tools) && tools.length > 0 ? JSON.stringify(tools) : '';
}

/**
 * Set by parseBody: the text of the body's `tools` when it was read by their bytes (the body
 * returned then lacks them) or made while keeping them (the body holds them too); else null.
 */
export let bodyToolsText: string | null = null;

/**
 * The JSON value of raw[from, …), its tools read by their bytes when they can be (bodyToolsText),
 * and its system prompt too when `prompt` says where it is (openai-system-prompt.ts); throws the
 * parser's error for a body that is not JSON, as JSON.parse of the whole body does. With
 * `checkDepth`, first refuses a body that nests deeper than MAX_JSON_DEPTH (tooDeep), counting the
 * brackets of tools it kept by their number (json-depth.ts nestsDeeperThanSkipping).
 */
export function parseBody(raw: Buffer, from: number, prompt: PromptPlace | null, checkDepth: boolean): unknown {
  bodyToolsText = null;
  const last = raw.length - from > MIN_BYTES ? lastLargeValueEnd(raw, from, TOOLS_KEY) : -1;
  if (last < 0 || raw[last] !== CLOSE_BRACKET) {
    if (checkDepth && nestsDeeperThan(raw, MAX_JSON_DEPTH)) throw tooDeep();
    return parseText(raw, from, -1, -1, prompt);
  }
  const known = memo.find(raw, from, last + 1);
  if (checkDepth) {
    const deep = known === null ? nestsDeeperThan(raw, MAX_JSON_DEPTH) : nestsDeeperThanSkipping(raw, MAX_JSON_DEPTH, last + 1 - known.raw.length, last + 1, known.openers);
    if (deep) throw tooDeep();
  }
  if (known !== null) {
    const rest = restWithout(raw, from, last + 1 - known.raw.length, last, prompt);
    if (rest !== null) {
      missesInARow = 0;
      bodyToolsText = known.text;
      return rest;
    }
  }
  const body: unknown = parseText(raw, from, -1, -1, prompt);
  const text = toolsText(body !== null && typeof body === 'object' ? (body as { tools?: unknown }).tools : undefined);
  if (text === '') return body;
  bodyToolsText = text;
  if (known === null && (missesInARow++ < LEARN_MISSES || missesInARow % LEARN_EVERY === 0)) keep(raw, from, last, text);
  return body;
}

/** The object without the tools member whose value is raw[start, last], parsed; null when that is not the member or does not parse. */
function restWithout(raw: Buffer, from: number, start: number, last: number, prompt: PromptPlace | null): Record<string, unknown> | null {
  if (!findMemberCut(raw, from, start, last, TOOLS_KEY)) return null;
  let rest: unknown;
  try {
    rest = parseText(raw, from, memberCut[CUT_FROM], memberCut[CUT_TO], prompt);
  } catch {
    return null;
  }
  // Named twice: a parser keeps the last, and the body is parsed whole instead.
  if (rest === null || typeof rest !== 'object' || Array.isArray(rest) || Object.hasOwn(rest, 'tools')) return null;
  return rest as Record<string, unknown>;
}

/** The JSON value of raw[from, …) without raw[cutFrom, cutTo) (cutFrom < 0: none); the system prompt at `prompt` read by its bytes when known. */
function parseText(raw: Buffer, from: number, cutFrom: number, cutTo: number, prompt: PromptPlace | null): unknown {
  if (prompt !== null) return parsePromptJson(raw, from, cutFrom, cutTo, prompt);
  return JSON.parse(textWithout(raw, from, cutFrom, cutTo));
}

/**
 * Keeps the bytes of the tools whose text is `text`, when they are the value that ends at
 * raw[last] (the body's last large member, which parsed whole): found reading back at most a few
 * times the text's length, keyed `tools`, and read back to the same text.
 */
function keep(raw: Buffer, from: number, last: number, text: string): void {
  const start = valueStartBackwards(raw, last, from, 4 * text.length + 1024);
  if (start < 0 || !findMemberCut(raw, from, start, last, TOOLS_KEY)) return;
  let again: unknown;
  try {
    again = JSON.parse(raw.toString('utf8', start, last + 1));
  } catch {
    return;
  }
  if (toolsText(again) === text) memo.add(raw, start, last + 1, text);
}
