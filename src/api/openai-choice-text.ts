/** Reading token counts and generated text out of parsed OpenAI-style answers and stream chunks. */

/** A usage count as reported by a backend: a finite number >= 0, else null. */
export function tokenCount(value: unknown): number | null {
  return typeof value === 'number' && value >= 0 && Number.isFinite(value) ? Math.floor(value) : null;
}

/**
 * Text of one choice: `text` (completions), `message.content` (chat answer) or `delta.content`
 * (chat stream chunk). Chat content given as an array of parts contributes the parts' `text`.
 */
export function choiceText(choice: unknown): string {
  if (typeof choice !== 'object' || choice === null) return '';
  const c = choice as { text?: unknown; message?: { content?: unknown }; delta?: { content?: unknown } };
  if (typeof c.text === 'string') return c.text;
  const holder = c.message ?? c.delta;
  if (typeof holder !== 'object' || holder === null) return '';
  return contentText(holder.content);
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
