/** Usage and generated text of one OpenAI-style stream event, from its data JSON. */
import type { AnswerUsage, GeneratedText } from './inference-api.js';
import { choicesText, tokenCount } from './openai-choice-text.js';

/**
 * Reads one event's data into `into`: hands its generated text (`choices[].text` /
 * `choices[].delta.content`) to `text` (or appends it to `into.text` when `text` is null) and takes
 * the usage counts it reports. Returns true when it is a usage-only chunk (usage set,
 * `choices: []`). Data that is not a JSON object is skipped.
 */
export function readEventUsage(data: string, into: AnswerUsage, text: GeneratedText | null = null): boolean {
  if (data.length === 0 || data.charCodeAt(0) !== 0x7b /* { */) return false;
  let parsed: unknown;
  try {
    parsed = JSON.parse(data);
  } catch {
    return false;
  }
  if (typeof parsed !== 'object' || parsed === null) return false;
  const event = parsed as { usage?: unknown; choices?: unknown };
  const choices = event.choices;
  if (Array.isArray(choices) && choices.length !== 0) {
    const piece = choicesText(choices);
    if (piece.length > 0) {
      if (text !== null) text.add(piece);
      else into.text += piece;
    }
  }
  const usage = event.usage;
  if (typeof usage !== 'object' || usage === null) return false;
  const counts = usage as { prompt_tokens?: unknown; completion_tokens?: unknown };
  const prompt = tokenCount(counts.prompt_tokens);
  const completion = tokenCount(counts.completion_tokens);
  if (prompt !== null) into.promptTokens = prompt;
  if (completion !== null) {
    into.completionTokens = completion;
    if (text !== null) text.stop();
  }
  return Array.isArray(choices) && choices.length === 0;
}
