import type { AnswerUsage, InferenceApi, UpstreamBody } from '../api/inference-api.js';
import type { Exchange } from '../http/exchange.js';
import { dropNamed } from '../http/upstream-headers.js';
import type { TokenCounter } from '../tokens/token-counter.js';
import type { EndpointState } from './endpoint-registry.js';
import { CallOutcome, UpstreamCall, type CallListener } from './upstream-call.js';
import { errorTypeOfUpstreamStatus, upstreamFailure } from './upstream-errors.js';
import { performance } from 'node:perf_hooks';

/**
 * Sends the request to one pod; the answer streams back to the client through the call, and
 * `listener` hears its outcome, which it hands to upstreamResult().
 */
export function startUpstreamCall(
  x: Exchange, api: InferenceApi, tokens: TokenCounter, endpoint: EndpointState, up: UpstreamBody, stream: boolean, timeoutMs: number,
  listener: CallListener,
): UpstreamCall {
  const ctx = x.ctx;
  const call = new UpstreamCall(x, api, tokens, endpoint, up.stripUsage, timeoutMs, listener);
  x.upstream = call;
  const headers = withRouterHeaders(x.forwardHeaders, ctx.requestId, x.traceparent);
  // A body the router rewrote is plain JSON: the client's content-encoding does not describe it.
  if (up.body !== x.body) dropNamed(headers, REWRITTEN_BODY);
  // Timed per attempt: after a connection failure, the pod that answered is measured.
  ctx.tUpstreamStart = performance.now();
  ctx.tUpstreamEnd = 0;
  call.send({
    path: x.upstreamPath,
    method: 'POST',
    headers,
    body: up.body,
    // A non-streaming exchange is bounded as a whole (by the pool's coarse timer: no timer per
    // request); a stream by the time to its head (from dispatch: a wait for a connection counts)
    // and between its chunks.
    headersTimeoutMs: stream ? timeoutMs : 0,
    bodyTimeoutMs: stream ? timeoutMs : 0,
    totalTimeoutMs: stream ? 0 : timeoutMs,
  });
  return call;
}

/**
 * What a finished call means: 'retry' when the pod was never reached (the caller may try
 * another), else the usage seen (null when none). Throws RouterError when it failed before
 * anything was sent to the client.
 */
export function upstreamResult(
  x: Exchange, call: UpstreamCall, outcome: CallOutcome, endpoint: EndpointState, timeoutMs: number,
): AnswerUsage | null | 'retry' {
  const ctx = x.ctx;
  x.upstream = null;
  x.upstreamEnded();
  if (outcome !== CallOutcome.RetryableConnectFailure) x.reachedPod = true;
  switch (outcome) {
    case CallOutcome.RetryableConnectFailure:
      return 'retry';
    case CallOutcome.FailedBeforeResponse:
      throw upstreamFailure(call.error, timeoutMs, endpoint.name);
    case CallOutcome.FailedMidResponse: {
      const e = upstreamFailure(call.error, timeoutMs, endpoint.name);
      x.recordError(e.type, `${e.message} (after the response started)`);
      return call.usage;
    }
    case CallOutcome.Done: {
      if (ctx.aborted) return call.usage;
      if (call.upstreamStatus >= 400) {
        x.recordError(errorTypeOfUpstreamStatus(call.upstreamStatus), `upstream pod ${endpoint.name} answered ${call.upstreamStatus}`, call.upstreamStatus);
        return call.usage;
      }
      // The pod's stream said the generation failed (its own error event): a failure with the
      // status it was sent with. The answer went through unchanged.
      const podError = call.podError;
      if (podError !== null) x.recordError('upstream_error', `upstream pod ${endpoint.name} sent an error event in its stream: ${podError}`);
      return call.usage;
    }
  }
}

const REWRITTEN_BODY = ['content-encoding'];

/**
 * The client's forwarded headers and the router's (request id, content type, trace context), as
 * one flat array made at its final length: no copy grown by pushes, and no Array.prototype.concat,
 * which takes V8's generic runtime path when given strings. The HTTP/1.1 client adds host and
 * content-length.
 */
export function withRouterHeaders(forward: readonly string[], requestId: string, traceparent: string | null): string[] {
  const n = forward.length;
  const headers = new Array<string>(traceparent === null ? n + 4 : n + 6);
  for (let i = 0; i < n; i++) headers[i] = forward[i];
  headers[n] = 'x-request-id';
  headers[n + 1] = requestId;
  headers[n + 2] = 'content-type';
  headers[n + 3] = 'application/json';
  if (traceparent !== null) {
    headers[n + 4] = 'traceparent';
    headers[n + 5] = traceparent;
  }
  return headers;
}
