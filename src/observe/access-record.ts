import type { RequestContext } from '../http/request-context.js';
import { redactPath } from './redact-query.js';
import { performance } from 'node:perf_hooks';

/**
 * One access-log record, as the formatters see it. Built from a finished RequestContext.
 * Field order here is the order of the JSON and text formats (docs/access-log.md).
 */
export interface AccessRecord {
  /** Epoch ms when the request was received. */
  timestamp: number;
  method: string;
  /** As received, with the values of credential-like query parameters redacted. */
  path: string;
  protocol: string;
  status_code: number;
  /** null on success. */
  error: { type: string; message: string } | null;
  model_name: string;
  model_route: string;
  model_server: string;
  selected_pod: string;
  /** With prefill/decode disaggregation: the prefill pod; written only when not empty. */
  prefill_pod?: string;
  request_id: string;
  /**
   * Not a field of the line: true when the router made `request_id` (RequestContext.requestIdMade),
   * which is then written as it is without checking it character by character.
   */
  request_id_made?: boolean;
  input_tokens: number;
  output_tokens: number;
  duration_total: number;
  duration_request_processing: number;
  duration_upstream_processing: number;
  duration_response_processing: number;
}

const ms = (a: number, b: number): number => (a > 0 && b >= a ? Math.round(b - a) : 0);

export function recordFromContext(ctx: RequestContext): AccessRecord {
  const end = ctx.tEnd > 0 ? ctx.tEnd : performance.now();
  const upStart = ctx.tUpstreamStart;
  const upEnd = ctx.tUpstreamEnd > 0 ? ctx.tUpstreamEnd : upStart > 0 ? end : 0;
  return {
    timestamp: ctx.receivedAt,
    method: ctx.method,
    path: redactPath(ctx.path),
    protocol: ctx.protocol,
    status_code: ctx.statusCode,
    error: ctx.errorType === null ? null : { type: ctx.errorType, message: ctx.errorMessage },
    model_name: ctx.modelName,
    model_route: ctx.modelRoute,
    model_server: ctx.modelServer,
    selected_pod: ctx.selectedPod,
    prefill_pod: ctx.prefillPod,
    request_id: ctx.requestId,
    request_id_made: ctx.requestIdMade,
    input_tokens: ctx.inputTokens,
    output_tokens: ctx.outputTokens,
    duration_total: Math.round(end - ctx.t0),
    duration_request_processing: Math.round((upStart > 0 ? upStart : end) - ctx.t0),
    duration_upstream_processing: ms(upStart, upEnd),
    duration_response_processing: upEnd > 0 ? ms(upEnd, end) : 0,
  };
}
