/**
 * Usage of a complete (non-stream) OpenAI-style answer: the token counts the backend reported and
 * the generated text, which the router counts itself when the backend reports no usage.
 */

import type { AnswerUsage } from './inference-api.js';
import { choicesText, tokenCount } from './openai-choice-text.js';

/**
 * `promptTokens`/`completionTokens`: `usage.prompt_tokens`/`usage.completion_tokens`, or null when
 * absent or not a non-negative number. `text`: generated text of every choice joined (completions
 * `choices[].text`, chat `choices[].message.content`).
 */
export type JsonUsage = AnswerUsage;

/** Reads usage and generated text from a non-stream answer body. Malformed JSON gives nulls and ''. */
export function usageFromJson(body: Buffer | string): JsonUsage {
  let parsed: unknown;
  try {
    parsed = JSON.parse(typeof body === 'string' ? body : body.toString('utf8'));
  } catch {
    return { promptTokens: null, completionTokens: null, text: '', generated: null };
  }
  if (typeof parsed !== 'object' || parsed === null) return { promptTokens: null, completionTokens: null, text: '', generated: null };
  const answer = parsed as { usage?: unknown; choices?: unknown };
  const usage = typeof answer.usage === 'object' && answer.usage !== null
    ? answer.usage as { prompt_tokens?: unknown; completion_tokens?: unknown }
    : null;
  return {
    promptTokens: usage === null ? null : tokenCount(usage.prompt_tokens),
    completionTokens: usage === null ? null : tokenCount(usage.completion_tokens),
    text: choicesText(answer.choices),
    generated: null,
  };
}
