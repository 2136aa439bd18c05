/**
 * A function call as the OpenAI APIs carry it, `{ name, arguments }`: the `function` of a chat
 * tool call, a legacy `function_call`, a Responses `function_call` item; in a stream, the pieces
 * one chunk carries. One reader for the prompt (openai-prompt.ts) and the answer
 * (openai-choice-text.ts, openai-responses-usage.ts).
 */

/** The call's `name`; '' when it has none (or `call` is not an object). */
export function functionCallName(call: unknown): string {
  if (typeof call !== 'object' || call === null) return '';
  const name = (call as { name?: unknown }).name;
  return typeof name === 'string' ? name : '';
}

/** The call's `arguments` (JSON text); '' when it has none (or `call` is not an object). */
export function functionCallArguments(call: unknown): string {
  if (typeof call !== 'object' || call === null) return '';
  const args = (call as { arguments?: unknown }).arguments;
  return typeof args === 'string' ? args : '';
}

/**
 * Name and arguments as one text, for the answer's generated text (which joins all it reads of a
 * choice). The prompt counts them as two texts instead: a rendered prompt never puts them side by
 * side (a chat template writes the name in the call's header or as a JSON member, the arguments
 * apart), and for a call's usual shape, a name then a JSON object, both ways count the same.
 */
export function functionCallText(call: unknown): string {
  return functionCallName(call) + functionCallArguments(call);
}
