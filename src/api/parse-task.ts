/**
 * Piscina task, run in a tokenizer thread for a large request body (thread-parse.ts): parses and
 * checks the body and builds its prompt there, as the event loop would. Compiled to
 * dist/api/parse-task.js.
 */
import { Buffer } from 'node:buffer';
import { workerData } from 'node:worker_threads';
import { RouterError } from '../errors.js';
import type { PromptText } from '../tokens/prompt-text.js';
import type { TokenizerThreadData } from '../tokens/tokenizer-pool.js';
import { apiFor, keepParsedConversations } from './api-registry.js';

// The thread keeps long conversations in the memory the router's setting gives each thread.
const conversationBytes = (workerData as Partial<TokenizerThreadData> | null | undefined)?.conversationBytes;
if (typeof conversationBytes === 'number') keepParsedConversations(conversationBytes);

export interface ParseTask {
  /** The body's bytes: shared with the event loop when the front read them into shared memory, else a copy (structured clone). */
  readonly raw: Uint8Array;
  /** The request's path: which API's parse. */
  readonly url: string;
}

/** The request without its body and its prompt, or the error that refuses it. */
export type ParseAnswer =
  | { readonly ok: true; readonly request: object; readonly prompt: PromptText }
  | { readonly ok: false; readonly error: RefusalFields };

/** A RouterError's fields (an Error's own class does not survive a structured clone). */
export interface RefusalFields {
  readonly type: RouterError['type'];
  readonly message: string;
  readonly status: number;
  readonly code: RouterError['code'];
  readonly headers: Record<string, string> | null;
}

export default function parseTask(task: ParseTask): ParseAnswer {
  const raw = Buffer.from(task.raw.buffer, task.raw.byteOffset, task.raw.byteLength);
  const api = apiFor(task.url);
  try {
    const req = api.parse(raw, task.url);
    return { ok: true, request: api.detach(req), prompt: api.promptText(req) };
  } catch (err) {
    if (!(err instanceof RouterError)) throw err; // the event loop parses it again (thread-parse.ts)
    return { ok: false, error: { type: err.type, message: err.message, status: err.status, code: err.code, headers: err.headers === null ? null : { ...err.headers } } };
  }
}
