/** Which OpenAI-style API a request body belongs to. */
export type ApiKind = 'completions' | 'chat' | 'other';

export interface TokenCounter {
  /**
   * Input tokens of a parsed request body. Small prompts are counted inline (a number is returned);
   * large ones go to the tokenizer pool (a Promise). Never throws for odd shapes: counts what it can.
   */
  countRequest(body: Record<string, unknown>, api: ApiKind): number | Promise<number>;
  /** Tokens of generated text (output count when a backend reports no usage). */
  countText(text: string): number | Promise<number>;
  close(): Promise<void>;
}
