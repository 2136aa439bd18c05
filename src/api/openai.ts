import type { GeneratedText, InferenceApi, InferenceRequest } from './inference-api.js';
import { buildUpstreamBody } from './openai-body.js';
import { usageFromJson } from './openai-json-usage.js';
import { extractPromptText } from './openai-prompt.js';
import { parseRequest, type ParsedRequest } from './openai-request.js';
import { SseUsageScanner } from './openai-sse-usage.js';

const KEEP = { stripUsageChunk: false, expectCount: false };
const STRIP = { stripUsageChunk: true, expectCount: false };
const KEEP_EXPECTING = { stripUsageChunk: false, expectCount: true };
const STRIP_EXPECTING = { stripUsageChunk: true, expectCount: true };

/** The OpenAI-style API: /v1/completions, /v1/chat/completions and other /v1 paths. */
export const openAiApi: InferenceApi = {
  parse: parseRequest,
  promptText: (req: InferenceRequest) => extractPromptText(req.body, (req as ParsedRequest).api),
  upstreamBody: (raw: Buffer, req: InferenceRequest, model: string | null) => buildUpstreamBody(raw, req as ParsedRequest, model),
  jsonUsage: usageFromJson,
  streamUsage: (strip: boolean, text: GeneratedText, expectCount: boolean) =>
    new SseUsageScanner(expectCount ? (strip ? STRIP_EXPECTING : KEEP_EXPECTING) : (strip ? STRIP : KEEP), text),
};
