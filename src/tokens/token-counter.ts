import type { PromptText } from './prompt-text.js';

export interface TokenCounter {
  /**
   * Input tokens of a prompt (built by the request's API from its body). Small prompts are counted
   * inline (a number is returned); large ones go to the tokenizer pool (a Promise).
   */
  countPrompt(p: PromptText): number | Promise<number>;
  /** Tokens of generated text (output count when a backend reports no usage). */
  countText(text: string): number | Promise<number>;
  close(): Promise<void>;
}
