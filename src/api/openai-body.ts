import type { UpstreamBody } from './inference-api.js';
import type { ParsedRequest } from './openai-request.js';
import { Buffer } from 'node:buffer';

/** The member put first in a stream's body that did not name `stream_options` (the object always has `model` after it). */
const USAGE_MEMBER = Buffer.from('"stream_options":{"include_usage":true},', 'latin1');

/**
 * The body sent upstream: the client's bytes unchanged unless the ModelServer rewrites `model`
 * (`model` non-null) or a stream needs `stream_options.include_usage` turned on.
 *
 * A stream whose body has no `stream_options` gets the member spliced in after the opening brace:
 * the client's bytes otherwise unchanged, one copy, whatever the prompt's size. Otherwise (the
 * client's own `stream_options` is merged, or `model` rewritten) the parsed body is serialized again.
 */
export function buildUpstreamBody(raw: Buffer, req: ParsedRequest, model: string | null): UpstreamBody {
  const rewriteModel = model !== null && model !== req.model;
  const injectUsage = req.stream && !req.clientAskedUsage;
  if (!rewriteModel && !injectUsage) return { body: raw, stripUsage: false };
  if (!rewriteModel && req.body.stream_options === undefined) return { body: spliceUsageMember(raw), stripUsage: true };
  const body = { ...req.body };
  if (rewriteModel) body.model = model;
  if (injectUsage) {
    const prev = body.stream_options;
    body.stream_options = { ...(prev !== null && typeof prev === 'object' ? prev : {}), include_usage: true };
  }
  return { body: Buffer.from(JSON.stringify(body)), stripUsage: injectUsage };
}

/** `raw` (a parsed JSON object with members) with USAGE_MEMBER after its opening brace. */
function spliceUsageMember(raw: Buffer): Buffer {
  let i = 0;
  while (raw[i] !== 0x7b) i++; // only JSON whitespace comes before the brace of a parsed object
  const out = Buffer.allocUnsafe(raw.length + USAGE_MEMBER.length);
  raw.copy(out, 0, 0, i + 1);
  USAGE_MEMBER.copy(out, i + 1);
  raw.copy(out, i + 1 + USAGE_MEMBER.length, i + 1);
  return out;
}
