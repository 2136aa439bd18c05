/**
 * The router's token counter as these tests use it: counting an OpenAI-style request body the way
 * the pipeline does (the API's prompt text, then countPrompt).
 */
import type { ApiKind } from '../../../src/api/openai-request.js';
import { extractPromptText } from '../../../src/api/openai-prompt.js';
import {
  createTokenCounter as createCounter, type RouterTokenCounter as Counter, type TokenCounterOptions,
} from '../../../src/tokens/create-token-counter.js';
import type { TokenizerSettings } from '../../../src/tokens/tokenizer-settings.js';

export type RouterTokenCounter = Counter & {
  countRequest(body: Record<string, unknown>, api: ApiKind): number | Promise<number>;
};

export function createTokenCounter(s: TokenizerSettings, opts?: TokenCounterOptions): RouterTokenCounter {
  const c = createCounter(s, opts) as RouterTokenCounter;
  c.countRequest = (body, api) => c.countPrompt(extractPromptText(body, api));
  return c;
}
