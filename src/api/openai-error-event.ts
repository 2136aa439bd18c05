/**
 * A pod's own error event inside a stream it answered 200: the generation failed partway and the
 * server says so in the stream, since its status line is gone.
 *
 * - Chat and completions (OpenAI, vLLM, SGLang, TGI): an event whose data has a top-level `error`:
 *   `{"error": {"message": …, "type": …, "code": …}}` (vLLM and SGLang write it with Python's
 *   `json.dumps`, spaces after the colons; older vLLM has `"object": "error"` inside it), TGI's
 *   `{"error": "…", "error_type": "…"}`; or vLLM's bare `{"object": "error", "message": …}`.
 * - Responses (`/v1/responses`): an `error` event, `{"type": "error", "code": …, "message": …}`,
 *   or the stream's last event `response.failed`, whose `response.error` says why.
 * - Any stream (llama.cpp's server): an SSE field named `error` instead of `data`,
 *   `error: {"code": 500, "message": …, "type": "server_error"}` then a blank line. The SDKs ignore
 *   a field they do not know, so the client sees only the stream end. Found where lines are read
 *   (openai-sse-usage.ts): only a line that is not a `data` line is looked at, on its first bytes.
 *
 * Tested per event on its first bytes only (`opensWithError`: the member the data opens with, as
 * these servers write it), a few character comparisons and no scan of the event: a token chunk
 * opens with `{"id"` (`{"type"` in Responses). Only an event that passes is parsed, to read its
 * message. A top-level `error` member after others (`{"id": …, "error": {…}, "choices": […]}`, a
 * chunk that also ends the choice with `"finish_reason": "error"`, as OpenRouter sends it) is
 * looked for in the chat and completions stream's last event only, the one before `[DONE]` or
 * before the stream ends (`lastEventErrorMessage`), where a server that stops on its error puts it:
 * once per stream, not per event. A key spelled with escapes is not looked for.
 */
import { skipSpace } from './openai-event-usage.js';

/** Most characters of the pod's message kept (the record's message names the pod besides). */
export const POD_MESSAGE_CHARS = 300;

const COLON = 0x3a;
const QUOTE = 0x22;

/** The data (a chat or completions event's) opens with an `error` member, or with `"object"` set to `"error"`. */
export function opensWithError(data: string): boolean {
  if (data.charCodeAt(0) !== 0x7b /* { */) return false;
  // The first key's first letter tells the two apart; a token chunk's (`{"id"`) is neither. No
  // call on this path (it runs for every event): white space after the brace is looked past only when there is some.
  let key = 1;
  if (data.charCodeAt(1) !== QUOTE) {
    key = firstKey(data);
    if (key < 0) return false;
  }
  const letter = data.charCodeAt(key + 1);
  if (letter === 0x65 /* e */) return data.startsWith('"error"', key) && data.charCodeAt(skipSpace(data, key + 7)) === COLON;
  return letter === 0x6f /* o */ && data.startsWith('"object"', key) && valueIs(data, key + 8, '"error"');
}

/** The data (a Responses event's) opens with `"type"` set to `"error"` or `"response.failed"`. */
export function opensWithResponsesError(data: string): boolean {
  const key = firstKey(data);
  if (key < 0 || data.charCodeAt(key + 1) !== 0x74 /* t */ || !data.startsWith('"type"', key)) return false;
  return valueIs(data, key + 6, '"error"') || valueIs(data, key + 6, '"response.failed"');
}

/** Where the first key of an object starts (its opening quote), or -1 when the data does not open as an object with a key. */
function firstKey(data: string): number {
  if (data.charCodeAt(0) !== 0x7b /* { */) return -1;
  // Servers write the key right after the brace; white space is allowed.
  const key = data.charCodeAt(1) === QUOTE ? 1 : skipSpace(data, 1);
  return data.charCodeAt(key) === QUOTE ? key : -1;
}

/** After a key ending before `at`: a colon, then the JSON text `value` (white space allowed around the colon). */
function valueIs(data: string, at: number, value: string): boolean {
  const colon = skipSpace(data, at);
  return data.charCodeAt(colon) === COLON && data.startsWith(value, skipSpace(data, colon + 1));
}

/**
 * The message of a chat or completions error event (one `opensWithError` passed): its error's
 * `message` (or the error itself when it is a string, or its JSON), bounded; null when its
 * `error` is empty (`null`, `""`: no error, as the SDKs read it). Data that is not JSON is its own
 * message: its client's SDK fails on it too.
 */
export function errorEventMessage(data: string): string | null {
  const event = parseObject(data);
  if (event === undefined) return bounded(data);
  return event === null ? null : chatErrorMessage(event);
}

/** An event's `error` (null when empty), else the event itself when its `object` is `"error"`, else null. */
function chatErrorMessage(event: Record<string, unknown>): string | null {
  if ('error' in event) return event.error ? describe(event.error) : null;
  return event.object === 'error' ? describe(event) : null;
}

/** As errorEventMessage, for a Responses error event (one `opensWithResponsesError` passed). */
export function responsesErrorEventMessage(data: string): string | null {
  const event = parseObject(data);
  if (event === undefined) return bounded(data);
  if (event === null) return null;
  if (event.type === 'error') return describe(event);
  const response = event.response;
  const error = typeof response === 'object' && response !== null ? (response as Record<string, unknown>).error : undefined;
  return error ? describe(error) : 'response.failed without an error';
}

/**
 * The message of the last event of a chat or completions stream (before `[DONE]`, or before its
 * end) when it is an error event with its `error` member (or `"object": "error"`) anywhere among
 * its top-level members; null when it is none, its error is empty, or it is not a JSON object.
 */
export function lastEventErrorMessage(data: string): string | null {
  // Only data that has `"error"` (as a key or a value) is parsed: a usage chunk or a token chunk
  // seldom does. Searched by its tail: its first letter, `r`, is rarer in JSON than a quote.
  if (!data.includes('rror"')) return null;
  const event = parseObject(data);
  return event === null || event === undefined ? null : chatErrorMessage(event);
}

/**
 * The message of an SSE field named `error` (llama.cpp's server: `{"code": …, "message": …,
 * "type": …}`): its `message`, or its `error`'s (as errorEventMessage), or its JSON; a value that
 * is not JSON is its own message; null when empty (or JSON `null`, `false`, `""`).
 */
export function errorFieldMessage(value: string): string | null {
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch {
    return value === '' ? null : bounded(value);
  }
  if (!parsed) return null;
  if (typeof parsed === 'object' && !Array.isArray(parsed) && 'error' in parsed) return chatErrorMessage(parsed as Record<string, unknown>);
  return describe(parsed);
}

/** The data's JSON object; null for other JSON, undefined when it is not JSON. */
function parseObject(data: string): Record<string, unknown> | null | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(data);
  } catch {
    return undefined;
  }
  return typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed) ? parsed as Record<string, unknown> : null;
}

/** An error's text: itself when a string, its `message` when it has one, else its JSON. */
function describe(error: unknown): string {
  if (typeof error === 'string') return bounded(error);
  if (typeof error === 'object' && error !== null) {
    const message = (error as { message?: unknown }).message;
    if (typeof message === 'string' && message !== '') return bounded(message);
  }
  return bounded(JSON.stringify(error) ?? String(error));
}

/** At most POD_MESSAGE_CHARS characters, then `...` (a surrogate pair is not split). */
export function bounded(text: string): string {
  if (text.length <= POD_MESSAGE_CHARS) return text;
  let end = POD_MESSAGE_CHARS;
  const last = text.charCodeAt(end - 1);
  if (last >= 0xd800 && last <= 0xdbff) end--;
  return `${text.slice(0, end)}...`;
}
