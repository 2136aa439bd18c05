/**
 * What counts as input: the strings to tokenize and the tokens known without tokenizing. The
 * inference APIs (src/api/) build it from a request body; tokens/ only counts it.
 */

/** Chat framing per message (`<|im_start|>{role}\n{content}<|im_end|>\n`) and before the reply. */
export const TOKENS_PER_MESSAGE = 3;
export const TOKENS_TO_PRIME_REPLY = 3;
/** Characters the chars estimator adds per chat message: `<|im_start|>` + `\n` + `<|im_end|>` + `\n`. */
export const RENDERED_CHARS_PER_MESSAGE = '<|im_start|>'.length + 1 + '<|im_end|>'.length + 1;

export interface PromptText {
  /**
   * Strings to tokenize: prompt strings; for chat, each message's role, name, text parts and tool
   * calls, and the tool definitions.
   */
  readonly texts: string[];
  /** Total length of `texts` (decides inline versus pool). */
  chars: number;
  /**
   * Tokens known without tokenizing, added as they are by every estimator: the length of token-id
   * prompts (number[] / number[][]), and the API's estimate of images and audio in the prompt.
   */
  knownTokens: number;
  /** Chat messages seen (each costs TOKENS_PER_MESSAGE, plus the reply priming once). */
  messages: number;
  /** The texts of a kept conversation whose count the counter is to keep (KeptPrompt), else null. */
  keep: PromptKeep | null;
}

/**
 * A conversation a process kept (api/conversation-memo.ts), as counted: its first `messages`
 * messages. `tokens`: the tokens of their texts once known (-1 until the counter found all of them
 * in its cache); `known` and `counted`: what else they add (tokens of images and audio, chat
 * messages framed), set when its texts were read. `base`: the kept conversation it went on from,
 * while its own count is not known.
 */
export interface KeptPrompt {
  tokens: number;
  known: number;
  counted: number;
  readonly messages: number;
  base: KeptPrompt | null;
}

/** texts[from, to) of a prompt are those of `target`'s messages after `baseTokens`' (those of its base, or 0). */
export interface PromptKeep {
  readonly target: KeptPrompt;
  readonly from: number;
  readonly to: number;
  readonly baseTokens: number;
}

export function newPromptText(): PromptText {
  return { texts: [], chars: 0, knownTokens: 0, messages: 0, keep: null };
}

/** Adds one string to tokenize ('' is skipped). */
export function addText(p: PromptText, s: string): void {
  if (s.length === 0) return;
  p.texts.push(s);
  p.chars += s.length;
}

/** A plain text (generated output) as a PromptText. */
export function textPrompt(text: string): PromptText {
  const p = newPromptText();
  addText(p, text);
  return p;
}

/** Chat framing tokens the bpe estimator adds: 3 per message plus 3 to prime the reply (0 without messages). */
export function framingTokens(p: PromptText): number {
  return p.messages === 0 ? 0 : p.messages * TOKENS_PER_MESSAGE + TOKENS_TO_PRIME_REPLY;
}
