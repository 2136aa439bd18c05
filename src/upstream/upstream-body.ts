import type { ParsedRequest } from '../http/parse-request.js';
import type { CompiledServer } from '../route/route-table.js';

export interface UpstreamBody {
  body: Buffer;
  /** The router added stream_options.include_usage; remove the usage chunk from the client's stream. */
  stripUsage: boolean;
}

/**
 * The body sent upstream: the client's bytes unchanged unless the ModelServer rewrites `model`
 * or a stream needs usage reporting turned on.
 */
export function buildUpstreamBody(raw: Buffer, req: ParsedRequest, server: CompiledServer): UpstreamBody {
  const rewriteModel = server.model !== null && server.model !== req.model;
  const injectUsage = req.stream && !req.clientAskedUsage;
  if (!rewriteModel && !injectUsage) return { body: raw, stripUsage: false };
  const body = { ...req.body };
  if (rewriteModel) body.model = server.model;
  if (injectUsage) {
    const prev = body.stream_options;
    body.stream_options = { ...(prev !== null && typeof prev === 'object' ? prev : {}), include_usage: true };
  }
  return { body: Buffer.from(JSON.stringify(body)), stripUsage: injectUsage };
}
