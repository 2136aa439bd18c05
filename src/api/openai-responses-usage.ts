/**
 * Usage and generated text of the Responses API (`/v1/responses`), whose answers are not of the
 * Completions/Chat shape:
 *
 * - an answer (and the `response` of a stream's last event) reports `usage.input_tokens` and
 *   `usage.output_tokens` (with `input_tokens_details`, `output_tokens_details`, `total_tokens`),
 *   not `prompt_tokens`/`completion_tokens`, and carries its text in `output[]`: items of type
 *   `message` whose `content` has parts of type `output_text` (or `refusal`), `function_call`
 *   items (`name`, `arguments`) and `reasoning` items (the `text` of their `summary` and
 *   `content` parts);
 * - a stream's text comes in the `delta` of `response.output_text.delta`,
 *   `response.function_call_arguments.delta`, `response.reasoning_text.delta` and
 *   `response.reasoning_summary_text.delta` events (a function call's name in the item of its
 *   `response.output_item.added`), and its usage in the
 *   `response` of its last event: `response.completed`, `response.incomplete` or
 *   `response.failed`.
 */
import { tokenCount, type AnswerUsage, type GeneratedText } from './inference-api.js';
import { functionCallText } from './openai-function-call.js';
import { takeCounts, takeText } from './openai-event-usage.js';
import { Buffer } from 'node:buffer';
import { trailingUsageObject } from './json-tail-usage.js';

const NONE: AnswerUsage = Object.freeze({ promptTokens: null, completionTokens: null, text: '', generated: null });

interface ResponsesUsage {
  readonly input_tokens?: unknown;
  readonly output_tokens?: unknown;
}

/** A Responses answer (or the `response` of a stream event), as far as usage goes. */
interface ResponseObject {
  readonly usage?: unknown;
  readonly output?: unknown;
}

/** One Responses stream event's data, parsed. */
export interface ResponsesEvent {
  readonly type?: unknown;
  readonly delta?: unknown;
  readonly item?: unknown;
  readonly response?: unknown;
}

const TEXT_DELTA = 'response.output_text.delta';
const ITEM_ADDED = 'response.output_item.added';

/**
 * Whether a stream event of this type carries generated text in its `delta`: output text, a
 * function call's arguments, reasoning text or its summary.
 */
function isTextDelta(type: unknown): boolean {
  return type === TEXT_DELTA || type === 'response.function_call_arguments.delta'
    || type === 'response.reasoning_text.delta' || type === 'response.reasoning_summary_text.delta';
}

/**
 * Usage of a complete (non-stream) Responses answer: `usage.input_tokens` and
 * `usage.output_tokens` (null when absent or not a number >= 0); `text`, the answer's
 * generated text (`outputText`), only when no output count came. The usage is first read from the
 * answer's end (json-tail-usage.ts: in OpenAI's answers only `user` and `metadata`, small members,
 * follow it); only when that finds no output count is the answer parsed whole (its text is then
 * needed), as it is when other members follow the usage. Malformed JSON gives nulls and '' (but an
 * invalid answer that ends with a readable usage is read for it, as the chat reader does).
 */
export function usageFromResponsesJson(body: Buffer | string): AnswerUsage {
  // Its usage read from its end (before `user` and `metadata`), when that names the output count:
  // the rest, the text included, is not needed then.
  if (typeof body !== 'string') {
    const fromEnd = usageFromResponsesTail(body);
    if (fromEnd !== null && fromEnd.completionTokens !== null) return fromEnd;
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(typeof body === 'string' ? body : body.toString('utf8'));
  } catch {
    return { ...NONE, unreadable: true };
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return { ...NONE, unreadable: true };
  const answer = parsed as ResponseObject;
  const usage = usageObject(answer);
  const completionTokens = usage === null ? null : tokenCount(usage.output_tokens);
  return {
    promptTokens: usage === null ? null : tokenCount(usage.input_tokens),
    completionTokens,
    text: completionTokens === null ? outputText(answer.output) : '',
    generated: null,
  };
}

/**
 * The counts of a Responses answer too large to keep whole, from its last bytes
 * (json-tail-usage.ts: its `usage`, with nested details, before `user` and `metadata`); null when
 * they do not end with its usage.
 */
export function usageFromResponsesTail(tail: Buffer): AnswerUsage | null {
  const u = trailingUsageObject(tail);
  if (u === null) return null;
  return { promptTokens: tokenCount(u.input_tokens), completionTokens: tokenCount(u.output_tokens), text: '', generated: null };
}

function usageObject(response: ResponseObject): ResponsesUsage | null {
  const usage = response.usage;
  return typeof usage === 'object' && usage !== null ? usage as ResponsesUsage : null;
}

/**
 * The generated text of `output`: every `output_text` (and refusal) part of every `message`
 * item, the name and arguments of every `function_call` item, and the text of every `reasoning`
 * item's `summary` and `content` parts, joined.
 */
export function outputText(output: unknown): string {
  if (!Array.isArray(output)) return '';
  let text = '';
  for (let i = 0; i < output.length; i++) {
    const item: unknown = output[i];
    if (typeof item !== 'object' || item === null) continue;
    const { type, content, summary } = item as { type?: unknown; content?: unknown; summary?: unknown };
    if (type === 'message') text += partsText(content, 'output_text');
    else if (type === 'function_call') text += functionCallText(item);
    else if (type === 'reasoning') text += partsText(summary, null) + partsText(content, null);
  }
  return text;
}

/**
 * The `text` of the parts of `parts` (of type `type` only, when not null) and the `refusal` of
 * refusal parts, joined.
 */
function partsText(parts: unknown, type: string | null): string {
  if (!Array.isArray(parts)) return '';
  let text = '';
  for (let j = 0; j < parts.length; j++) {
    const part: unknown = parts[j];
    if (typeof part !== 'object' || part === null) continue;
    const p = part as { type?: unknown; text?: unknown; refusal?: unknown };
    if ((type === null || p.type === type) && typeof p.text === 'string') text += p.text;
    else if (typeof p.refusal === 'string') text += p.refusal;
  }
  return text;
}

/** The `response` of a stream's last event (completed, incomplete or failed), else null. */
function finalResponse(event: ResponsesEvent): ResponseObject | null {
  const type = event.type;
  if (type !== 'response.completed' && type !== 'response.incomplete' && type !== 'response.failed') return null;
  const response = event.response;
  return typeof response === 'object' && response !== null ? response as ResponseObject : null;
}

/** The event is a stream's last and reports `usage.output_tokens`: the generated text is not needed any more. */
export function responsesEventReportsCompletion(event: ResponsesEvent): boolean {
  const response = finalResponse(event);
  if (response === null) return false;
  const usage = usageObject(response);
  return usage !== null && tokenCount(usage.output_tokens) !== null;
}

/**
 * Reads one parsed Responses stream event into `into`: hands the `delta` of an event that carries
 * generated text (`isTextDelta`), and the name of a function call item as it is added, to `text`
 * (or appends it to `into.text` when `text` is null) and takes the usage counts of the stream's
 * last event. Never a usage-only chunk to strip (false).
 */
export function applyResponsesEvent(event: ResponsesEvent, into: AnswerUsage, text: GeneratedText | null): boolean {
  const type = event.type;
  if (isTextDelta(type)) {
    if (typeof event.delta === 'string') takeText(event.delta, into, text);
    return false;
  }
  if (type === ITEM_ADDED) {
    // A function call's name comes with its item; its arguments follow in deltas.
    const item = event.item;
    if (typeof item === 'object' && item !== null && (item as { type?: unknown }).type === 'function_call') {
      const name = (item as { name?: unknown }).name;
      if (typeof name === 'string') takeText(name, into, text);
    }
    return false;
  }
  const response = finalResponse(event);
  if (response === null) return false;
  const usage = usageObject(response);
  if (usage !== null) takeCounts(usage.input_tokens, usage.output_tokens, into, text);
  return false;
}
