/**
 * What of a parsed request body counts as input: the strings to tokenize and the tokens known
 * without tokenizing. Never throws: values of unexpected shape are skipped.
 */
import type { ApiKind } from './token-counter.js';

/** Chat framing per message (`<|im_start|>{role}\n{content}<|im_end|>\n`) and before the reply. */
export const TOKENS_PER_MESSAGE = 3;
export const TOKENS_TO_PRIME_REPLY = 3;
/** Characters the chars estimator adds per chat message: `<|im_start|>` + `\n` + `<|im_end|>` + `\n`. */
export const RENDERED_CHARS_PER_MESSAGE = '<|im_start|>'.length + 1 + '<|im_end|>'.length + 1;

export interface PromptText {
  /** Strings to tokenize: prompt strings; for chat, each message's role and text parts. */
  readonly texts: string[];
  /** Total length of `texts` (decides inline versus pool). */
  chars: number;
  /** Token-id prompts (number[] / number[][]): their length, exact in every estimator. */
  idTokens: number;
  /** Chat messages seen (each costs TOKENS_PER_MESSAGE, plus the reply priming once). */
  messages: number;
}

function newPromptText(): PromptText {
  return { texts: [], chars: 0, idTokens: 0, messages: 0 };
}

function addText(p: PromptText, s: string): void {
  if (s.length === 0) return;
  p.texts.push(s);
  p.chars += s.length;
}

/** Content of one chat message: a string, or an array of parts whose `text` is counted. */
function addContent(p: PromptText, content: unknown): void {
  if (typeof content === 'string') {
    addText(p, content);
    return;
  }
  if (!Array.isArray(content)) return;
  for (let i = 0; i < content.length; i++) {
    const part: unknown = content[i];
    if (typeof part === 'string') addText(p, part);
    else if (part !== null && typeof part === 'object') {
      const text = (part as { text?: unknown }).text;
      if (typeof text === 'string') addText(p, text);
    }
  }
}

function addMessage(p: PromptText, m: object): void {
  p.messages++;
  const role = (m as { role?: unknown }).role;
  if (typeof role === 'string') addText(p, role);
  addContent(p, (m as { content?: unknown }).content);
}

function addMessages(p: PromptText, messages: unknown[]): void {
  for (let i = 0; i < messages.length; i++) {
    const m: unknown = messages[i];
    if (m !== null && typeof m === 'object' && !Array.isArray(m)) addMessage(p, m);
  }
}

/**
 * A prompt value: a string, or an array of strings, token ids (number[]), token-id arrays
 * (number[][]) or - as in the Responses API `input` - message objects.
 */
function addPromptValue(p: PromptText, v: unknown): void {
  if (typeof v === 'string') {
    addText(p, v);
    return;
  }
  if (!Array.isArray(v)) return;
  for (let i = 0; i < v.length; i++) {
    const item: unknown = v[i];
    if (typeof item === 'string') addText(p, item);
    else if (typeof item === 'number') p.idTokens++;
    else if (Array.isArray(item)) {
      for (let j = 0; j < item.length; j++) if (typeof item[j] === 'number') p.idTokens++;
    } else if (item !== null && typeof item === 'object') addMessage(p, item);
  }
}

/**
 * Completions: `prompt`. Chat: `messages`. Other APIs: `prompt` if present, else `messages`,
 * else `input`, else nothing.
 */
export function extractPromptText(body: Record<string, unknown>, api: ApiKind): PromptText {
  const p = newPromptText();
  if (api === 'completions') addPromptValue(p, body.prompt);
  else if (api === 'chat') {
    if (Array.isArray(body.messages)) addMessages(p, body.messages);
  } else if (body.prompt !== undefined) addPromptValue(p, body.prompt);
  else if (Array.isArray(body.messages)) addMessages(p, body.messages);
  else addPromptValue(p, body.input);
  return p;
}

/** A plain text (generated output) as a PromptText. */
export function textPrompt(text: string): PromptText {
  const p = newPromptText();
  addText(p, text);
  return p;
}

/** Chat framing tokens the bpe estimator adds: 3 per message plus 3 to prime the reply (0 without messages). */
export function framingTokens(p: PromptText): number {
  return p.messages === 0 ? 0 : p.messages * TOKENS_PER_MESSAGE + TOKENS_TO_PRIME_REPLY;
}
