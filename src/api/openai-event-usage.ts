/** Usage and generated text of one OpenAI-style stream event, from its data JSON. */
import { tokenCount, type AnswerUsage, type GeneratedText } from './inference-api.js';
import { choicesText } from './openai-choice-text.js';

/** One stream event's data, parsed. */
export interface StreamEvent {
  readonly usage?: unknown;
  readonly choices?: unknown;
}

/** The event's data as a JSON object, or null (anything else is skipped). */
export function parseEvent(data: string): StreamEvent | null {
  if (data.length === 0 || !startsObject(data)) return null;
  let parsed: unknown;
  try {
    parsed = JSON.parse(data);
  } catch {
    return null;
  }
  return typeof parsed === 'object' && parsed !== null ? parsed as StreamEvent : null;
}

/**
 * False when the event's data can hold no usage: no `"usage"` key other than one set to null (as
 * OpenAI's token chunks carry when usage was asked for) and no `\u` escape of a letter of `usage`
 * (a key could be spelled with one; escaped text, `\u00e9` or `\u4e2d`, cannot spell it). A
 * `"usage"` that is a string value is not followed by a colon. Conservative: true whenever unsure;
 * then the event is parsed.
 */
export function mayCarryUsage(data: string): boolean {
  return escapesUsageLetter(data) || setsUsageKey(data);
}

/** The data has a `"usage"` key (spelled without escapes, at any depth) set to something else than null. */
export function setsUsageKey(data: string): boolean {
  let at = data.indexOf('"usage"');
  while (at !== -1) {
    let i = skipSpace(data, at + 7);
    if (data.charCodeAt(i) === 0x3a /* : */) {
      i = skipSpace(data, i + 1);
      if (!data.startsWith('null', i)) return true;
    }
    at = data.indexOf('"usage"', at + 7);
  }
  return false;
}

/**
 * The data has a `\u` escape of a letter of `usage` (`\u0075`, `\u0073`, `\u0061`, `\u0067`,
 * `\u0065`): only then can a key spelled with escapes read as `usage`.
 */
export function escapesUsageLetter(data: string): boolean {
  let at = data.indexOf('\\u00');
  while (at !== -1) {
    const hi = data.charCodeAt(at + 4);
    const lo = data.charCodeAt(at + 5);
    // 0x75 u, 0x73 s, 0x61 a, 0x67 g, 0x65 e
    if ((hi === 0x37 && (lo === 0x35 || lo === 0x33)) || (hi === 0x36 && (lo === 0x31 || lo === 0x37 || lo === 0x35))) return true;
    at = data.indexOf('\\u00', at + 4);
  }
  return false;
}

/** The data's first character but JSON white space is `{` (a data line may start with white space, or be empty). */
export function startsObject(data: string): boolean {
  const c = data.charCodeAt(0);
  return c === 0x7b /* { */ || (c <= 0x20 && data.charCodeAt(skipSpace(data, 0)) === 0x7b);
}

/** The index of the first character at or after `i` that is not JSON white space. */
export function skipSpace(s: string, i: number): number {
  let c = s.charCodeAt(i);
  while (c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d) c = s.charCodeAt(++i);
  return i;
}

/** The event reports `usage.completion_tokens`: the generated text is not needed any more. */
export function reportsCompletion(event: StreamEvent): boolean {
  const usage = event.usage;
  return typeof usage === 'object' && usage !== null && tokenCount((usage as { completion_tokens?: unknown }).completion_tokens) !== null;
}

/**
 * Reads one parsed event into `into`: hands its generated text (`choices[].text` /
 * `choices[].delta.content`) to `text` (or appends it to `into.text` when `text` is null) and takes
 * the usage counts it reports. Returns true when it is a usage-only chunk: usage set, and
 * `choices: []` (as OpenAI and vLLM send it), or `choices` null or left out with nothing else but
 * the chunk's identity (`id`, `object`, `created`, `model`, `system_fingerprint`), as some
 * servers send it: forwarded without its usage, such an event would reach the client as a chunk
 * with no choices it did not ask for.
 */
export function applyEvent(event: StreamEvent, into: AnswerUsage, text: GeneratedText | null = null): boolean {
  const choices = event.choices;
  if (Array.isArray(choices) && choices.length !== 0) takeText(choicesText(choices), into, text);
  const usage = event.usage;
  if (typeof usage !== 'object' || usage === null || Array.isArray(usage)) return false; // not a usage object: nothing read
  const counts = usage as { prompt_tokens?: unknown; completion_tokens?: unknown };
  takeCounts(counts.prompt_tokens, counts.completion_tokens, into, text);
  if (Array.isArray(choices)) return choices.length === 0;
  return (choices === undefined || choices === null) && onlyIdentity(event);
}

/** Members a chunk has besides its content: what identifies it. */
const IDENTITY_MEMBERS = new Set(['id', 'object', 'created', 'model', 'system_fingerprint', 'service_tier', 'choices', 'usage']);

/** The event has no member but its identity, `choices` and `usage`. */
function onlyIdentity(event: StreamEvent): boolean {
  for (const key in event) if (!IDENTITY_MEMBERS.has(key)) return false;
  return true;
}

/** A piece of generated text of an event: to `text`, or appended to `into.text` when `text` is null. */
export function takeText(piece: string, into: AnswerUsage, text: GeneratedText | null): void {
  if (piece.length === 0) return;
  if (text !== null) text.add(piece);
  else into.text += piece;
}

/**
 * An event's input and output counts as the backend reported them (each kept when a number >= 0):
 * into `into`; an output count stops `text` (the generated text is not needed any more).
 */
export function takeCounts(prompt: unknown, completion: unknown, into: AnswerUsage, text: GeneratedText | null): void {
  const p = tokenCount(prompt);
  const c = tokenCount(completion);
  if (p !== null) into.promptTokens = p;
  if (c !== null) {
    into.completionTokens = c;
    if (text !== null) text.stop();
  }
}

/** parseEvent then applyEvent: data that is not a JSON object is skipped (false). */
export function readEventUsage(data: string, into: AnswerUsage, text: GeneratedText | null = null): boolean {
  const event = parseEvent(data);
  return event !== null && applyEvent(event, into, text);
}
