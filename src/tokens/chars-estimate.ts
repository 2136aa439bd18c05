/**
 * The `chars` estimator: ceil(characters / 4), the count existing deployments of this route API
 * expect. Chat messages are measured as rendered `<|im_start|>{role}\n{content}<|im_end|>\n`.
 * Token-id prompts count their length, images and audio their estimate (`knownTokens`). Also the
 * fallback when a bpe count is not available in time.
 */
import { RENDERED_CHARS_PER_MESSAGE, type PromptText } from './prompt-text.js';

export const CHARS_PER_TOKEN = 4;

export function charsEstimate(p: PromptText): number {
  return charsEstimateOf(p, p.chars);
}

/**
 * The estimate of `p` with only `chars` of its text characters measured (the rest counted
 * elsewhere, e.g. texts whose count was kept): its messages' framing and known tokens added whole.
 */
export function charsEstimateOf(p: PromptText, chars: number): number {
  return Math.ceil((chars + p.messages * RENDERED_CHARS_PER_MESSAGE) / CHARS_PER_TOKEN) + p.knownTokens;
}

export function charsEstimateText(text: string): number {
  return Math.ceil(text.length / CHARS_PER_TOKEN);
}
