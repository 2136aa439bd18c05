import type { InferenceApi } from './inference-api.js';
import { openAiApi } from './openai.js';

/** The API a request path speaks. Every /v1 path is OpenAI-style today. */
export function apiFor(_url: string): InferenceApi {
  return openAiApi;
}
