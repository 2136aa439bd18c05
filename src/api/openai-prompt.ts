/**
 * What of an OpenAI-style request body counts as input. Never throws: values of unexpected shape
 * are skipped.
 */
import { addText, newPromptText, type PromptText } from '../tokens/prompt-text.js';
import type { ApiKind } from './openai-request.js';

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
 * Completions: `prompt`. Chat: `messages`. Responses: `instructions` (a string, the system prompt)
 * and `input` (its `prompt` is a reference to a stored template, not text). Other APIs: `prompt`
 * if present, else `messages`, else `input`, else nothing.
 */
export function extractPromptText(body: Record<string, unknown>, api: ApiKind): PromptText {
  const p = newPromptText();
  if (api === 'completions') addPromptValue(p, body.prompt);
  else if (api === 'chat') {
    if (Array.isArray(body.messages)) addMessages(p, body.messages);
  } else if (api === 'responses') {
    if (typeof body.instructions === 'string') addText(p, body.instructions);
    addPromptValue(p, body.input);
  } else if (body.prompt !== undefined) addPromptValue(p, body.prompt);
  else if (Array.isArray(body.messages)) addMessages(p, body.messages);
  else addPromptValue(p, body.input);
  return p;
}
