/** Reading generated text out of parsed OpenAI-style answers and stream chunks (their counts: inference-api.ts tokenCount). */
import { functionCallText } from './openai-function-call.js';

/**
 * Text of one choice: `text` (completions), else what the model generated in `message` (chat
 * answer) or `delta` (chat stream chunk): its `content` (an array of parts contributes the parts'
 * `text`), its `refusal`, its reasoning (`reasoning_content`, or `reasoning`, as vLLM's reasoning
 * parsers send it), and the function name and arguments of its `tool_calls` (or of a legacy
 * `function_call`).
 */
export function choiceText(choice: unknown): string {
  if (typeof choice !== 'object' || choice === null) return '';
  const c = choice as { text?: unknown; message?: unknown; delta?: unknown };
  if (typeof c.text === 'string') return c.text;
  const holder = c.message ?? c.delta;
  if (typeof holder !== 'object' || holder === null) return '';
  const h = holder as {
    content?: unknown; refusal?: unknown; reasoning_content?: unknown; reasoning?: unknown; tool_calls?: unknown; function_call?: unknown;
  };
  const content = contentText(h.content);
  // Most chunks carry only content (a null refusal at most): their text is returned as it is.
  if ((h.refusal === undefined || h.refusal === null) && h.reasoning_content === undefined && h.reasoning === undefined
    && h.tool_calls === undefined && h.function_call === undefined) return content;
  let text = content;
  if (typeof h.refusal === 'string') text += h.refusal;
  if (typeof h.reasoning_content === 'string') text += h.reasoning_content;
  else if (typeof h.reasoning === 'string') text += h.reasoning;
  const calls = h.tool_calls;
  if (Array.isArray(calls)) {
    for (let i = 0; i < calls.length; i++) {
      const call: unknown = calls[i];
      if (typeof call === 'object' && call !== null) text += functionCallText((call as { function?: unknown }).function);
    }
  }
  return text + functionCallText(h.function_call);
}

function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  let text = '';
  for (const part of content) {
    if (typeof part === 'object' && part !== null && typeof (part as { text?: unknown }).text === 'string') {
      text += (part as { text: string }).text;
    }
  }
  return text;
}

/** Joined text of all choices of a parsed answer or chunk ('' when `choices` is not an array). */
export function choicesText(choices: unknown): string {
  if (!Array.isArray(choices)) return '';
  if (choices.length === 1) return choiceText(choices[0]);
  let text = '';
  for (const choice of choices) text += choiceText(choice);
  return text;
}
