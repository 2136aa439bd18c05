import { RouterError } from '../errors.js';
import { apiFor } from '../api/api-registry.js';
import type { RateLimitSpec } from '../config/resource-types.js';
import type { RouterSettings } from '../config/settings.js';
import type { Exchange } from '../http/exchange.js';
import { proxyWithRetries } from '../pick/proxy-with-retries.js';
import type { Scheduler } from '../pick/scheduler.js';
import type { TokenLimiter } from '../ratelimit/limiter.js';
import { NO_WEIGHTED_TARGET, RouteTable, type CompiledRoute } from '../route/route-table.js';
import type { TokenCounter } from '../tokens/token-counter.js';
import { settleUsage } from '../usage/settle-usage.js';
import { rateLimitRejection } from '../ratelimit/rejection.js';
import { limiterFailure } from '../ratelimit/errors.js';
import type { RequestSpan, Tracer } from '../observe/tracer.js';

/** What the pipeline needs from its worker process; built once at start-up. */
export interface PipelineServices {
  readonly settings: RouterSettings;
  /** Current compiled table, or null before the first snapshot. */
  table(): RouteTable | null;
  readonly tokens: TokenCounter;
  /** The limiter for a route's rateLimit (local or Redis), resolved once per spec. */
  limiterFor(spec: RateLimitSpec): TokenLimiter;
  /** Authenticates and authorizes; throws RouterError(401/403). null = auth off. */
  readonly authorize: ((x: Exchange, model: string) => void | Promise<void>) | null;
  /** OpenTelemetry tracing; null = off (the hot path then only checks for null). */
  readonly tracer: Tracer | null;
  /** Called once per request when it is over (access log, metrics). */
  finish(x: Exchange): void;
  /** Pod choice and passive health of this worker. */
  readonly scheduler: Scheduler;
}

/**
 * The path of one request after its body arrived: parse → route → count → limit → pick →
 * proxy → usage. Every outcome ends in exactly one finish() call.
 */
export async function runPipeline(x: Exchange, s: PipelineServices): Promise<void> {
  const ctx = x.ctx;
  let route: CompiledRoute | null = null;
  let limiter: TokenLimiter | null = null;
  let charged = 0;
  const span = s.tracer === null ? null : s.tracer.start(x);
  try {
    const api = apiFor(x.url);
    const req = api.parse(x.body, x.url);
    ctx.modelName = req.model;
    if (s.authorize !== null) await s.authorize(x, req.model);

    const table = s.table();
    if (table === null) throw new RouterError('upstream_error', 'the router has not loaded its configuration yet', 503, null, 'not_configured');
    route = table.route(req.model) ?? null;
    if (route === null) throw new RouterError('model_not_found', `model "${req.model}" is not served by any route`);
    ctx.modelRoute = route.key;
    const server = RouteTable.pick(route, x);
    if (server === null) throw new RouterError('model_not_found', `no rule of route ${route.key} matches the request`, 404, null, 'no_matching_rule');
    if (server === NO_WEIGHTED_TARGET) throw new RouterError('upstream_error', `the matching rule of route ${route.key} has no target with a weight above 0`, 503, null, 'no_weighted_target');
    ctx.modelServer = server.key;

    const prompt = api.promptText(req);
    const counted = s.tokens.countPrompt(prompt);
    ctx.inputTokens = typeof counted === 'number' ? counted : await counted;

    if (route.rateLimit !== null) {
      limiter = s.limiterFor(route.rateLimit);
      const decided = limiter.admit(route.limitKey, route.rateLimit, ctx.inputTokens);
      const d = decided instanceof Promise ? await decided : decided; // a lease decides synchronously
      x.decision = d;
      if (!d.allowed) throw rateLimitRejection(d);
      charged = ctx.inputTokens;
    }
    if (!x.writable) return; // client left while we counted/limited: nothing sent upstream

    const usage = await proxyWithRetries(x, api, s.tokens, server, req, prompt, s.scheduler, span);
    await settleUsage(ctx, s.tokens, usage, limiter, route.limitKey, route.rateLimit);
  } catch (err) {
    x.sendError(err instanceof RouterError ? err : limiterFailure(err) ?? internalError(err));
  } finally {
    // Admitted but never reached a pod (no endpoint, connection failures, client gone first):
    // give the input tokens back. A pod that saw the request keeps them charged.
    if (charged > 0 && !x.reachedPod && limiter !== null && route !== null && route.rateLimit !== null) {
      try { await limiter.adjustInput(route.limitKey, route.rateLimit, -charged); } catch { /* store down: nothing to give back */ }
    }
    if (span !== null) s.tracer!.end(span, x);
    s.finish(x);
  }
}

function internalError(err: unknown): RouterError {
  return new RouterError('internal_error', `internal router error: ${(err as Error)?.message ?? String(err)}`);
}
