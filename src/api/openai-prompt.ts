/**
 * What of an OpenAI-style request body counts as input. Never throws: values of unexpected shape
 * are skipped.
 */
import { addText, newPromptText, type KeptPrompt, type PromptText } from '../tokens/prompt-text.js';
import { functionCallArguments, functionCallName } from './openai-function-call.js';
import { mediaPartTokens } from './openai-media.js';
import type { ApiKind } from './openai-request.js';
import { toolsText } from './openai-tools.js';

/**
 * Content of one chat message: a string, or an array of parts whose `text` (a refusal part:
 * `refusal`) is counted; an image or audio part (no text) adds its estimate (openai-media.ts).
 */
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
      else {
        // An assistant message's refusal part carries its text in `refusal`.
        const refusal = (part as { refusal?: unknown }).refusal;
        if (typeof refusal === 'string') addText(p, refusal);
        else p.knownTokens += mediaPartTokens(part);
      }
    }
  }
}

/** A function call's name and arguments, as two texts (openai-function-call.ts says why). */
function addFunctionCall(p: PromptText, call: unknown): void {
  addText(p, functionCallName(call));
  addText(p, functionCallArguments(call));
}

/**
 * One chat message or Responses input item: its role, `name`, content, and what else the model
 * reads of it: an assistant's `tool_calls` (each function's name and arguments) and legacy
 * `function_call`; a Responses `function_call` item's `arguments` (its `name` is the name above)
 * and a `function_call_output` item's `output` (a string or content parts).
 */
function addMessage(p: PromptText, m: object): void {
  p.messages++;
  const msg = m as {
    role?: unknown; name?: unknown; content?: unknown; tool_calls?: unknown; function_call?: unknown; arguments?: unknown; output?: unknown;
  };
  if (typeof msg.role === 'string') addText(p, msg.role);
  if (typeof msg.name === 'string') addText(p, msg.name);
  addContent(p, msg.content);
  const calls = msg.tool_calls;
  if (Array.isArray(calls)) {
    for (let i = 0; i < calls.length; i++) {
      const call: unknown = calls[i];
      if (call !== null && typeof call === 'object') addFunctionCall(p, (call as { function?: unknown }).function);
    }
  }
  if (msg.function_call !== undefined) addFunctionCall(p, msg.function_call);
  if (typeof msg.arguments === 'string') addText(p, msg.arguments);
  if (msg.output !== undefined) addContent(p, msg.output);
}

/**
 * The tool (function) definitions a request offers the model (`tools`, legacy `functions`): the
 * model servers render them into the prompt as JSON, so their JSON text is counted.
 */
function addTools(p: PromptText, tools: unknown): void {
  addText(p, toolsText(tools));
}

function addMessages(p: PromptText, messages: unknown[], from = 0, to = messages.length): void {
  for (let i = from; i < to; i++) {
    const m: unknown = messages[i];
    if (m !== null && typeof m === 'object' && !Array.isArray(m)) addMessage(p, m);
  }
}

/**
 * The messages of a body that goes on from a kept conversation (`found`: its first messages are
 * that conversation's). The part whose count is known (the conversation's, or the one it went on
 * from) adds its count, not its texts; the texts of the rest of the conversation go in first, and
 * the counter keeps their count with it (prompt-text.ts PromptKeep), so that its next turn adds it.
 */
function addConversation(p: PromptText, messages: unknown[], found: KeptPrompt): void {
  const known = found.tokens >= 0 ? found : found.base !== null && found.base.tokens >= 0 ? found.base : null;
  let from = 0;
  if (known !== null) {
    p.knownTokens += known.tokens + known.known;
    p.messages += known.counted;
    from = known.messages;
  }
  if (found.tokens < 0) {
    const textsFrom = p.texts.length;
    const knownBefore = p.knownTokens;
    const countedBefore = p.messages;
    addMessages(p, messages, from, found.messages);
    found.known = (known === null ? 0 : known.known) + p.knownTokens - knownBefore;
    found.counted = (known === null ? 0 : known.counted) + p.messages - countedBefore;
    p.keep = { target: found, from: textsFrom, to: p.texts.length, baseTokens: known === null ? 0 : known.tokens };
    from = found.messages;
  }
  addMessages(p, messages, from);
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
    else if (typeof item === 'number') p.knownTokens++;
    else if (Array.isArray(item)) {
      for (let j = 0; j < item.length; j++) if (typeof item[j] === 'number') p.knownTokens++;
    } else if (item !== null && typeof item === 'object') addMessage(p, item);
  }
}

/**
 * Completions: `prompt`. Chat: `messages`. Responses: `instructions` (a string, the system prompt)
 * and `input` (its `prompt` is a reference to a stored template, not text). Other APIs: `prompt`
 * if present, else `messages`, else `input`, else nothing. Every API but completions: also the
 * JSON of its tool definitions (`tools`, `functions`); `parsedToolsText`: the text of `tools`
 * when parsing made it (then `body.tools` is not read: the body may lack it).
 */
export function extractPromptText(body: Record<string, unknown>, api: ApiKind, parsedToolsText: string | null = null, conversation: KeptPrompt | null = null): PromptText {
  const p = newPromptText();
  if (api === 'completions') addPromptValue(p, body.prompt);
  else if (api === 'chat') {
    if (Array.isArray(body.messages)) {
      if (conversation !== null) addConversation(p, body.messages, conversation);
      else addMessages(p, body.messages);
    }
  } else if (api === 'responses') {
    if (typeof body.instructions === 'string') addText(p, body.instructions);
    addPromptValue(p, body.input);
  } else if (body.prompt !== undefined) addPromptValue(p, body.prompt);
  else if (Array.isArray(body.messages)) addMessages(p, body.messages);
  else addPromptValue(p, body.input);
  if (api !== 'completions') {
    // Tools read by their bytes (openai-tools.ts) came as their text, and may not be in the body.
    if (parsedToolsText !== null) addText(p, parsedToolsText);
    else if (body.tools !== undefined) addTools(p, body.tools);
    if (body.functions !== undefined) addTools(p, body.functions);
  }
  return p;
}
