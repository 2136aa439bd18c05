import { RouterError } from '../errors.js';
import type { AnswerUsage, InferenceApi, InferenceRequest } from '../api/inference-api.js';
import type { Exchange } from '../http/exchange.js';
import type { CompiledServer } from '../route/route-table.js';
import type { EndpointState } from '../upstream/endpoint-registry.js';
import { startUpstreamCall, upstreamResult } from '../upstream/forward.js';
import type { PromptText } from '../tokens/prompt-text.js';
import type { TokenCounter } from '../tokens/token-counter.js';
import type { Scheduler } from './scheduler.js';
import type { RequestSpan } from '../observe/tracer.js';

/**
 * Picks a pod and forwards. A pod that was not reached is always left for another one; with the
 * ModelServer's retry policy, a failure before any byte reached the client (timeout, reset) too.
 * At most `server.retry.attempts` more pods (2 without a policy), each pod at most once.
 */
export async function proxyWithRetries(
  x: Exchange, api: InferenceApi, tokens: TokenCounter, server: CompiledServer, req: InferenceRequest, prompt: PromptText | null, scheduler: Scheduler, span: RequestSpan | null,
): Promise<AnswerUsage | null> {
  const up = api.upstreamBody(x.body, req, server.model);
  const retry = server.retry;
  // The pods tried: the first alone until a retry (no array for the usual single attempt).
  let first: EndpointState | null = null;
  let tried: EndpointState[] | null = null;
  let lastError: RouterError | null = null;
  for (let attempt = 0; ; attempt++) {
    const endpoint = scheduler.pick(server, first === null ? null : (tried ??= [first]), prompt);
    if (endpoint === null) {
      if (first === null) throw new RouterError('upstream_error', `no ready endpoint for ModelServer ${server.key}`, 503, null, 'no_ready_endpoint');
      break;
    }
    if (attempt > 0) {
      scheduler.retried(server.key);
      if (retry.intervalMs > 0) await new Promise((r) => setTimeout(r, retry.intervalMs));
      if (!x.writable) return null; // client left while we waited
    }
    if (first === null) first = endpoint;
    else tried!.push(endpoint);
    x.ctx.selectedPod = endpoint.name;
    if (span !== null) span.pod = endpoint.origin;
    let r: AnswerUsage | null | 'retry';
    try {
      const call = startUpstreamCall(x, api, tokens, endpoint, up, req.stream, server.timeoutMs);
      r = upstreamResult(x, call, await call.done, endpoint, server.timeoutMs);
    } catch (err) {
      if (err instanceof RouterError && err.type === 'timeout') scheduler.timedOut(endpoint);
      if (!retry.anyFailure || attempt >= retry.attempts || !(err instanceof RouterError) || x.headersSent || !x.writable) throw err;
      lastError = err;
      continue;
    }
    if (r !== 'retry') {
      // The attempt's own marks (startUpstreamCall, upstreamResult): the pod's time to the first
      // byte of a stream, else to the end of the answer. No clock read of its own.
      const ctx = x.ctx;
      if (!ctx.aborted) scheduler.answered(endpoint, (ctx.tFirstByte > ctx.tUpstreamStart ? ctx.tFirstByte : ctx.tUpstreamEnd) - ctx.tUpstreamStart);
      return r;
    }
    scheduler.connectFailed(endpoint);
    if (attempt >= retry.attempts || !x.writable) break;
  }
  if (lastError !== null) throw lastError;
  throw new RouterError('upstream_error', `cannot connect to any pod of ModelServer ${server.key} (tried ${(tried ?? [first!]).map((e) => e.name).join(', ')})`, 502, null, 'upstream_unreachable');
}
