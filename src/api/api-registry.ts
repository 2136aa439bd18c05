import type { InferenceApi } from './inference-api.js';
import { openAiApi } from './openai.js';
import { conversationMemoStats, keepConversations, RESPONSES_PATH } from './openai-request.js';
import { systemPromptMemoStats } from './openai-system-prompt.js';
import { responsesApi } from './openai-responses.js';

/**
 * The API a request path speaks. Every /v1 path is OpenAI-style today; /v1/responses has answers
 * and streams of its own shape (openai-responses.ts). A path of another length is told apart by
 * its length alone.
 */
export function apiFor(url: string): InferenceApi {
  return url === RESPONSES_PATH ? responsesApi : openAiApi;
}

/**
 * Sets, at start, the memory the APIs' parsers keep long chat conversations in, per event loop or
 * tokenizer thread (ROUTER_TOKENIZER_CONVERSATION_BYTES; 0 = none; docs/tokens.md#long-conversations).
 */
export function keepParsedConversations(maxBytes: number): void {
  keepConversations(maxBytes);
}

/** Long chat bodies of this event loop or thread that went on from a kept conversation, and conversations kept. */
export const parsedConversations: Readonly<{ found: number; kept: number }> = conversationMemoStats;

/** Chat and Responses bodies of this event loop or thread whose system prompt was read by its bytes, and prompts kept. */
export const parsedSystemPrompts: Readonly<{ found: number; kept: number }> = systemPromptMemoStats;

/** The /v1 endpoints the router serves with POST; another method on them answers 405 (allow: POST). */
export const POST_PATHS: readonly string[] = ['/v1/completions', '/v1/chat/completions', '/v1/embeddings', RESPONSES_PATH];
const POST_ENDPOINTS: ReadonlySet<string> = new Set(POST_PATHS);

export function isPostEndpoint(url: string): boolean {
  return POST_ENDPOINTS.has(url);
}

/**
 * A POST endpoint's path as this module's own string, or null for any other path: uWS hands over
 * a fresh string per request, and later comparisons of the router's own string with itself (the
 * access log's) take no look at the characters. Compared, not hashed (a Set lookup hashes the
 * fresh string).
 */
export function knownEndpointPath(url: string): string | null {
  for (let i = 0; i < POST_PATHS.length; i++) if (POST_PATHS[i] === url) return POST_PATHS[i];
  return null;
}
