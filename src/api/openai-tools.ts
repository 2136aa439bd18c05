/**
 * The tool definitions of a request (`tools`), read by their bytes when they were seen before
 * (docs/tokens.md#tool-definitions-read-by-their-bytes).
 *
 * The model servers render the tools into the prompt as JSON, so the router counts their JSON
 * text: the parsed array written again with JSON.stringify (compact, the same text whatever white
 * space the client sent). An agent sends the same tools with every turn; parsing them and writing
 * them again cost about as much as all the rest of such a request. So a body's `tools` member is
 * looked up by its bytes in a memo of this process: when they repeat a value seen before, its text
 * is the one made then and the member is not parsed; the rest of the body is parsed without it.
 * The text, and so the count, is the same as when the member is parsed.
 */
import { Buffer } from 'node:buffer';
import { CUT_FROM, CUT_TO, VALUE_END, VALUE_START, findMember, foundEntry, foundMember } from './json-member-find.js';
import { JsonTextMemo, MIN_BYTES } from './json-text-memo.js';

/** Memory the memo of tool definitions holds at most per router process (two generations). */
export const TOOLS_MEMO_BYTES = 4 * 1024 * 1024;

const memo = new JsonTextMemo(TOOLS_MEMO_BYTES);
const TOOLS_KEY = Buffer.from('tools');
const TOOLS_NEEDLE = Buffer.from('"tools"');

/** The text of tool definitions as counted: their JSON written again; '' when not a non-empty array. */
export function toolsText(tools: unknown): string {
  return Array.isArray(tools) && tools.length > 0 ? JSON.stringify(tools) : '';
}

/** Set by parseWithToolsText when it returns an object: the text of the body's `tools`. */
export let parsedToolsText = '';

/**
 * The JSON object raw[from, …) holds, without its `tools` member, whose text goes to
 * `parsedToolsText`. Null when the body names no `tools` (or names it twice), its tools are too
 * small to be worth it, or anything in it does not parse: the caller then parses the body whole,
 * and reports the parser's own error.
 */
export function parseWithToolsText(raw: Buffer, from: number): Record<string, unknown> | null {
  if (raw.length - from < MIN_BYTES || raw.indexOf(TOOLS_NEEDLE, from) < 0) return null;
  if (!findMember(raw, from, raw.length, TOOLS_KEY, memo)) return null;
  const start = foundMember[VALUE_START];
  const end = foundMember[VALUE_END];
  if (end - start < MIN_BYTES) return null;
  let text: string;
  const known = foundEntry;
  if (known !== null) text = known.text;
  else {
    let tools: unknown;
    try {
      tools = JSON.parse(raw.toString('utf8', start, end));
    } catch {
      return null;
    }
    text = toolsText(tools);
  }
  let rest: unknown;
  try {
    rest = JSON.parse(raw.toString('utf8', from, foundMember[CUT_FROM]) + raw.toString('utf8', foundMember[CUT_TO]));
  } catch {
    return null;
  }
  if (rest === null || typeof rest !== 'object' || Array.isArray(rest)) return null;
  if (known === null) memo.add(raw, start, end - start, text);
  parsedToolsText = text;
  return rest as Record<string, unknown>;
}
