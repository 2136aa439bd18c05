import type { UpstreamBody } from './inference-api.js';
import type { ParsedRequest } from './openai-request.js';
import { Buffer } from 'node:buffer';

/**
 * The body sent upstream: the client's bytes unchanged unless the ModelServer rewrites `model`
 * (`model` non-null) or a stream needs `stream_options.include_usage` turned on.
 */
export function buildUpstreamBody(raw: Buffer, req: ParsedRequest, model: string | null): UpstreamBody {
  const rewriteModel = model !== null && model !== req.model;
  const injectUsage = req.stream && !req.clientAskedUsage;
  if (!rewriteModel && !injectUsage) return { body: raw, stripUsage: false };
  const body = { ...req.body };
  if (rewriteModel) body.model = model;
  if (injectUsage) {
    const prev = body.stream_options;
    body.stream_options = { ...(prev !== null && typeof prev === 'object' ? prev : {}), include_usage: true };
  }
  return { body: Buffer.from(JSON.stringify(body)), stripUsage: injectUsage };
}
