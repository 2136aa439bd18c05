import type { GeneratedText, InferenceApi, InferenceRequest } from './inference-api.js';
import { buildUpstreamBody } from './openai-body.js';
import { usageFromJson, usageFromJsonTail } from './openai-json-usage.js';
import { extractPromptText } from './openai-prompt.js';
import { attachRequest, detachRequest, parseRequest, type DetachedRequest, type ParsedRequest } from './openai-request.js';
import { SseUsageScanner } from './openai-sse-usage.js';
import { openAiStreamErrorEvent } from './openai-error.js';
import { openAiDisaggregation } from './openai-disaggregation.js';

const KEEP = { stripUsageChunk: false };
const STRIP = { stripUsageChunk: true };

/** The OpenAI-style API: /v1/completions, /v1/chat/completions and other /v1 paths (not /v1/responses: openai-responses.ts). */
export const openAiApi: InferenceApi = {
  parse: parseRequest,
  promptText: (req: InferenceRequest) => extractPromptText(req.body, (req as ParsedRequest).api, (req as ParsedRequest).toolsText, (req as ParsedRequest).conversation),
  detach: (req: InferenceRequest) => detachRequest(req as ParsedRequest),
  attach: (detached: object, raw: Buffer) => attachRequest(detached as DetachedRequest, raw),
  upstreamBody: (raw: Buffer, req: InferenceRequest, model: string | null) => buildUpstreamBody(raw, req as ParsedRequest, model),
  jsonUsage: usageFromJson,
  tailUsage: usageFromJsonTail,
  streamUsage: (strip: boolean, text: GeneratedText, tokensPerEvent: number | null) =>
    new SseUsageScanner(strip ? STRIP : KEEP, text, tokensPerEvent),
  streamErrorEvent: openAiStreamErrorEvent,
  disaggregation: openAiDisaggregation,
};
