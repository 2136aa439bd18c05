import type { GeneratedText, InferenceApi, InferenceRequest } from './inference-api.js';
import { buildUpstreamBody } from './openai-body.js';
import { extractPromptText } from './openai-prompt.js';
import { parseRequest, type ParsedRequest } from './openai-request.js';
import { ResponsesSseScanner } from './openai-responses-sse.js';
import { usageFromResponsesJson } from './openai-responses-usage.js';

/**
 * OpenAI's Responses API, /v1/responses: parsed and counted as the other OpenAI-style paths
 * (`instructions` and `input` are its input), its body sent as the client wrote it (but a
 * rewritten `model`: no `stream_options` is added, so nothing is stripped), and its usage read in
 * its own shapes (`usage.input_tokens`/`output_tokens`, `output[]`, stream events).
 */
export const responsesApi: InferenceApi = {
  parse: parseRequest,
  promptText: (req: InferenceRequest) => extractPromptText(req.body, (req as ParsedRequest).api),
  upstreamBody: (raw: Buffer, req: InferenceRequest, model: string | null) => buildUpstreamBody(raw, req as ParsedRequest, model, false),
  jsonUsage: usageFromResponsesJson,
  streamUsage: (_strip: boolean, text: GeneratedText, tokensPerEvent: number | null) => new ResponsesSseScanner(text, tokensPerEvent),
};
