import { RouterError } from '../errors.js';
import type { InferenceRequest } from './inference-api.js';
import { MAX_JSON_DEPTH, nestsDeeperThan, tooDeep } from './json-depth.js';
import { bodyToolsText, parseBody } from './openai-tools.js';
import { CHAT_SYSTEM_PROMPT, RESPONSES_INSTRUCTIONS } from './openai-system-prompt.js';
import { CONVERSATION_MEMO_BYTES, ConversationMemo } from './conversation-memo.js';
import type { KeptPrompt } from '../tokens/prompt-text.js';

/** Which OpenAI-style API a request body belongs to. */
export type ApiKind = 'completions' | 'chat' | 'responses' | 'other';

/** The parts of an OpenAI-style request body the router acts on. */
export interface ParsedRequest extends InferenceRequest {
  readonly api: ApiKind;
  /**
   * The client itself asked for stream usage (stream_options.include_usage). Not read for the
   * Responses API, whose streams always end with their usage.
   */
  readonly clientAskedUsage: boolean;
  /** The body's `stream_options` member as the client sent it (undefined when absent). */
  readonly streamOptions: unknown;
  /**
   * The text of the body's `tools` as counted, when parsing made it (openai-tools.ts): read by the
   * tools' bytes (`body` then lacks the member) or written while keeping them (`body` holds them).
   * Null when the prompt's text is made from `body.tools` (or the body has none).
   */
  readonly toolsText: string | null;
  /** The kept conversation the body's messages go on from (conversation-memo.ts), else null. */
  readonly conversation: KeptPrompt | null;
}

/**
 * A ParsedRequest without its body, as a thread that parsed the body hands it back (structured
 * clone: plain values only). `attachRequest` makes it a ParsedRequest again on the event loop.
 */
export interface DetachedRequest {
  readonly model: string;
  readonly api: ApiKind;
  readonly stream: boolean;
  readonly clientAskedUsage: boolean;
  readonly streamOptions: unknown;
}

/** The Responses API's path. */
export const RESPONSES_PATH = '/v1/responses';

export function apiKindOf(url: string): ApiKind {
  if (url === '/v1/chat/completions') return 'chat';
  if (url === '/v1/completions') return 'completions';
  if (url === RESPONSES_PATH) return 'responses';
  return 'other';
}

/** A form's field name at the body's start, as curl -d 'model=x' or an HTML form sends it. */
const FORM_FIELD = /^[A-Za-z0-9_.%-]+=/;
/** The start of a multipart body (curl -F): its boundary line, then a part's headers. */
const MULTIPART = /^--[^\r\n]*\r?\n[Cc]ontent-[Dd]isposition: *form-data/;

/**
 * What the body that JSON.parse refused looks like, when it is a form rather than broken JSON
 * (the usual mistakes: curl's -F or -d with fields instead of a JSON text): said before the
 * parser's own message. Read only on that error.
 */
function notJsonHint(raw: Buffer): string {
  const head = raw.toString('latin1', 0, Math.min(raw.length, 256));
  if (MULTIPART.test(head)) return ' (it is a multipart form, as curl -F sends; send the JSON object itself, e.g. curl -d \'{"model": …}\' -H \'content-type: application/json\')';
  if (FORM_FIELD.test(head)) return ' (it looks like form fields, name=value; send a JSON object, e.g. {"model": …})';
  return '';
}

/**
 * The body's JSON value. A UTF-8 byte order mark before the JSON is skipped, as the model
 * servers' parsers do (RFC 8259 lets a parser ignore it); the body still goes upstream as it came.
 */
export function parseJson(raw: Buffer): unknown {
  return JSON.parse(hasBom(raw) ? raw.toString('utf8', 3) : raw.toString('utf8'));
}

function hasBom(raw: Buffer): boolean {
  return raw[0] === 0xef && raw[1] === 0xbb && raw[2] === 0xbf;
}

/** Long conversations seen by this event loop or thread (conversation-memo.ts). */
const conversations = new ConversationMemo(CONVERSATION_MEMO_BYTES);

/**
 * Sets the memory for long conversations kept by this event loop or thread
 * (ROUTER_TOKENIZER_CONVERSATION_BYTES; 0 = none), letting go of those kept. Called at start.
 */
export function keepConversations(maxBytes: number): void {
  conversations.setMaxBytes(maxBytes);
}
/** Bodies this process took from a kept conversation, and conversations it kept. */
export const conversationMemoStats: Readonly<ConversationMemo['stats']> = conversations.stats;
/** The tools' text read by their bytes from the members after a known conversation's messages, else null. */
let tailToolsText: string | null = null;

function parseConversationTail(tail: Buffer): unknown {
  const value = parseBody(tail, 0, null, false);
  tailToolsText = bodyToolsText;
  return value;
}

/** The body of a chat request that goes on from a conversation this process kept, else null. */
function goOnConversation(raw: Buffer, from: number): Record<string, unknown> | null {
  tailToolsText = null;
  return conversations.parse(raw, from, parseConversationTail);
}

/** Parses and checks a request body; throws RouterError(invalid_request) naming what is wrong. */
export function parseRequest(raw: Buffer, url: string): ParsedRequest {
  if (raw.length === 0) throw new RouterError('invalid_request', 'request body is empty; expected a JSON object');
  const api = apiKindOf(url);
  const from = hasBom(raw) ? 3 : 0;
  // A chat body that goes on from a kept conversation: its kept bytes' depth was checked with them,
  // and the memo checks the rest. The other bodies of chat and Responses are checked by parseBody,
  // before it parses, where it knows whether their tools' bytes were kept.
  const known = api === 'chat' ? goOnConversation(raw, from) : null;
  if (known === null && api === 'completions' && nestsDeeperThan(raw, MAX_JSON_DEPTH)) throw tooDeep();
  let toolsText: string | null = null;
  let conversation: KeptPrompt | null = null;
  let body: unknown;
  if (known !== null) {
    body = known;
    toolsText = tailToolsText;
    conversation = conversations.found;
  } else {
    try {
      // Every API but completions counts the tools' text (openai-prompt.ts), read by their bytes when known (openai-tools.ts).
      if (api === 'completions') body = parseJson(raw);
      else {
        body = parseBody(raw, from, api === 'chat' ? CHAT_SYSTEM_PROMPT : api === 'responses' ? RESPONSES_INSTRUCTIONS : null, true);
        toolsText = bodyToolsText;
        if (api === 'chat') conversations.learn(raw, from, body);
      }
    } catch (err) {
      if (err instanceof RouterError) throw err; // nested too deep (parseBody)
      throw new RouterError('invalid_request', `request body is not valid JSON${notJsonHint(raw)}: ${(err as Error).message}`);
    }
  }
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw new RouterError('invalid_request', 'request body must be a JSON object');
  }
  const obj = body as Record<string, unknown>;
  const model = obj.model;
  if (typeof model !== 'string' || model.trim() === '') {
    throw new RouterError('invalid_request', 'request body must name a model: "model" must be a non-empty string', 400, null, 'missing_model');
  }
  if (api === 'completions') {
    const p = obj.prompt;
    if (typeof p !== 'string' && !Array.isArray(p)) {
      throw new RouterError('invalid_request', '"prompt" is required for /v1/completions and must be a string or an array', 400, null, 'missing_prompt');
    }
  } else if (api === 'chat') {
    const m = obj.messages;
    if (!Array.isArray(m) || m.length === 0) {
      throw new RouterError('invalid_request', '"messages" is required for /v1/chat/completions and must be a non-empty array', 400, null, 'missing_messages');
    }
  }
  const stream = obj.stream === true;
  const opts = obj.stream_options;
  const clientAskedUsage = stream && opts !== null && typeof opts === 'object' && (opts as Record<string, unknown>).include_usage === true;
  return { body: obj, model, api, stream, clientAskedUsage, streamOptions: opts, toolsText, conversation };
}

/** `req` without its body (for a thread to hand back). */
export function detachRequest(req: ParsedRequest): DetachedRequest {
  return { model: req.model, api: req.api, stream: req.stream, clientAskedUsage: req.clientAskedUsage, streamOptions: req.streamOptions };
}

/**
 * A request parsed in a thread, on the event loop again. What the router acts on came with it;
 * its body is parsed again from `raw` only if something asks for it (nothing on the usual paths:
 * the prompt came counted from the same thread; openai-body.ts reads `streamOptions`, and the
 * whole body only for a body that names `model` or `stream_options` twice).
 */
class AttachedRequest implements ParsedRequest {
  readonly model: string;
  readonly api: ApiKind;
  readonly stream: boolean;
  readonly clientAskedUsage: boolean;
  readonly streamOptions: unknown;
  /** The body, when asked for, is parsed whole (its tools included). */
  readonly toolsText = null;
  readonly conversation = null;
  #raw: Buffer | null;
  #body: Record<string, unknown> | null = null;

  constructor(d: DetachedRequest, raw: Buffer) {
    this.model = d.model;
    this.api = d.api;
    this.stream = d.stream;
    this.clientAskedUsage = d.clientAskedUsage;
    this.streamOptions = d.streamOptions;
    this.#raw = raw;
  }

  get body(): Record<string, unknown> {
    if (this.#body === null) {
      // The thread parsed these bytes already: they are a JSON object.
      this.#body = parseJson(this.#raw!) as Record<string, unknown>;
      this.#raw = null;
    }
    return this.#body;
  }
}

export function attachRequest(d: DetachedRequest, raw: Buffer): ParsedRequest {
  return new AttachedRequest(d, raw);
}
