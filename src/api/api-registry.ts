import type { InferenceApi } from './inference-api.js';
import { openAiApi } from './openai.js';

/** The API a request path speaks. Every /v1 path is OpenAI-style today. */
export function apiFor(_url: string): InferenceApi {
  return openAiApi;
}

/** The /v1 endpoints the router serves with POST; another method on them answers 405 (allow: POST). */
const POST_ENDPOINTS: ReadonlySet<string> = new Set(['/v1/completions', '/v1/chat/completions', '/v1/embeddings', '/v1/responses']);

export function isPostEndpoint(url: string): boolean {
  return POST_ENDPOINTS.has(url);
}
