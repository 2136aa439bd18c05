import type { GeneratedText, InferenceApi, InferenceRequest } from './inference-api.js';
import { buildUpstreamBody } from './openai-body.js';
import { extractPromptText } from './openai-prompt.js';
import { attachRequest, detachRequest, parseRequest, type DetachedRequest, type ParsedRequest } from './openai-request.js';
import { ResponsesSseScanner } from './openai-responses-sse.js';
import { DEFAULT_MAX_EVENT_BYTES } from './sse-lines.js';
import { usageFromResponsesJson, usageFromResponsesTail } from './openai-responses-usage.js';
import { openAiStreamErrorEvent } from './openai-error.js';

/**
 * OpenAI's Responses API, /v1/responses: parsed and counted as the other OpenAI-style paths
 * (`instructions` and `input` are its input), its body sent as the client wrote it (but a
 * rewritten `model`: no `stream_options` is added, so nothing is stripped), and its usage read in
 * its own shapes (`usage.input_tokens`/`output_tokens`, `output[]`, stream events, whose lines
 * may be as long as the request they echo: `responsesLineBound`).
 */
export const responsesApi: InferenceApi = {
  parse: parseRequest,
  promptText: (req: InferenceRequest) => extractPromptText(req.body, (req as ParsedRequest).api, (req as ParsedRequest).toolsText),
  detach: (req: InferenceRequest) => detachRequest(req as ParsedRequest),
  attach: (detached: object, raw: Buffer) => attachRequest(detached as DetachedRequest, raw),
  upstreamBody: (raw: Buffer, req: InferenceRequest, model: string | null) => buildUpstreamBody(raw, req as ParsedRequest, model, false),
  jsonUsage: usageFromResponsesJson,
  tailUsage: usageFromResponsesTail,
  streamUsage: (_strip: boolean, text: GeneratedText, tokensPerEvent: number | null, requestBytes: number) =>
    new ResponsesSseScanner(text, tokensPerEvent, responsesLineBound(requestBytes)),
  streamErrorEvent: openAiStreamErrorEvent,
  // Its own shapes: kthena's prefill/decode split is for completions and chat.
  disaggregation: null,
};

/**
 * The longest line a Responses stream's reader keeps to read it: the usual bound plus three times
 * the request's size. Its events carry the whole response object, which echoes the request's
 * `instructions`, `tools` and `metadata` (written again by the pod, a non-ASCII character takes
 * up to three times its bytes as a `\u` escape); a last event longer than the usual bound (after
 * a request of 1 MB of instructions) would otherwise be skipped unread, and its usage with it.
 */
export function responsesLineBound(requestBytes: number): number {
  return DEFAULT_MAX_EVENT_BYTES + 3 * requestBytes;
}
