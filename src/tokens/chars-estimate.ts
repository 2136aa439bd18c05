/**
 * The `chars` estimator: ceil(characters / 4), the count existing deployments of this route API
 * expect. Chat messages are measured as rendered `<|im_start|>{role}\n{content}<|im_end|>\n`.
 * Token-id prompts count their length, images and audio their estimate (`knownTokens`). Also the
 * fallback when a bpe count is not available in time.
 */
import { RENDERED_CHARS_PER_MESSAGE, type PromptText } from './prompt-text.js';

export const CHARS_PER_TOKEN = 4;

export function charsEstimate(p: PromptText): number {
  const chars = p.chars + p.messages * RENDERED_CHARS_PER_MESSAGE;
  return Math.ceil(chars / CHARS_PER_TOKEN) + p.knownTokens;
}

export function charsEstimateText(text: string): number {
  return Math.ceil(text.length / CHARS_PER_TOKEN);
}
