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
import type { Tenant } from '../auth/tenant.js';
import { admitRequest, type ScopedTerm } from '../ratelimit/request-admission.js';
import { giveBackInput } from '../ratelimit/admit-all.js';
import { performance } from 'node:perf_hooks';

/** What the pipeline needs from its worker process; built once at start-up. */
export interface PipelineServices {
  readonly settings: RouterSettings;
  /** Current compiled table, or null before the first snapshot. */
  table(): RouteTable | null;
  readonly tokens: TokenCounter;
  /** The limiter for a route's rateLimit (local or Redis), resolved once per spec. */
  limiterFor(spec: RateLimitSpec): TokenLimiter;
  /** Authenticates and authorizes, gives the caller's tenant; throws RouterError(401/403). null = auth off. */
  readonly authorize: ((x: Exchange, model: string) => Tenant | Promise<Tenant>) | null;
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
  let charged = 0;
  const span = s.tracer === null ? null : s.tracer.start(x);
  let tenant: Tenant | null = null;
  /** The limits that apply (route, tenant), once known; null when none does. */
  let terms: readonly ScopedTerm[] | null = null;
  try {
    const api = apiFor(x.url);
    const req = api.parse(x.body, x.url);
    ctx.modelName = req.model;
    if (s.authorize !== null) {
      const t = s.authorize(x, req.model);
      tenant = t instanceof Promise ? await t : t;
      ctx.tenant = tenant.name;
    }

    const table = s.table();
    if (table === null) throw new RouterError('upstream_error', 'the router has not loaded its configuration yet', 503, null, 'not_configured');
    const route = table.route(req.model) ?? null;
    if (route === null) throw new RouterError('model_not_found', `model "${req.model}" is not served by any route`);
    // The route's own copy of the same name: later comparisons of it (the access log's) are then
    // of one string with itself.
    ctx.modelName = route.modelName;
    ctx.modelRoute = route.key;
    const server = RouteTable.pick(route, x);
    if (server === null) throw new RouterError('model_not_found', `no rule of route ${route.key} matches the request`, 404, null, 'no_matching_rule');
    if (server === NO_WEIGHTED_TARGET) throw new RouterError('upstream_error', `the matching rule of route ${route.key} has no target with a weight above 0`, 503, null, 'no_weighted_target');
    ctx.modelServer = server.key;

    const prompt = api.promptText(req);
    const counted = s.tokens.countPrompt(prompt);
    ctx.inputTokens = typeof counted === 'number' ? counted : await counted;

    terms = limitTerms(s, route, tenant);
    if (terms !== null) {
      // One enforced limit decides alone (from a lease: synchronously); several, or a shadow
      // one, are decided together (request-admission.ts).
      const admitted = admitRequest(terms, ctx.inputTokens);
      const a = admitted instanceof Promise ? await admitted : admitted;
      x.decision = a.shown;
      x.rateScope = a.shownScope;
      if (!a.admitted) throw rateLimitRejection(a.shown!);
      charged = ctx.inputTokens;
    }
    if (!x.writable) return; // client left while we counted/limited: nothing sent upstream

    const usage = await proxyWithRetries(x, api, s.tokens, server, req, prompt, s.scheduler, span);
    const settled = settleUsage(ctx, s.tokens, usage, terms);
    if (settled !== undefined) {
      // The request is over: the limit store's bookkeeping of it (a Redis settle may wait for a
      // call to ride along with) is not part of its duration.
      ctx.tEnd = performance.now();
      await settled;
    }
  } catch (err) {
    x.sendErrorAtTurnEnd(err instanceof RouterError ? err : limiterFailure(err) ?? internalError(err));
  } finally {
    // Admitted but never reached a pod (no endpoint, connection failures, client gone first):
    // give the input tokens back. A pod that saw the request keeps them charged.
    if (charged > 0 && !x.reachedPod && terms !== null) {
      if (ctx.tEnd === 0) ctx.tEnd = performance.now();
      await giveBackInput(terms, charged);
    }
    if (span !== null) s.tracer!.end(span, x);
    s.finish(x);
  }
}

/**
 * The route's own limit as the terms of a request without a tenant limit, made once per compiled
 * route (a config change compiles new routes; the old entries go with them).
 */
const routeTerms = new WeakMap<CompiledRoute, { readonly services: PipelineServices; readonly terms: readonly ScopedTerm[] }>();

/** The limits of a request: the route's (if any), then the tenant's (if any); null when none applies. */
function limitTerms(s: PipelineServices, route: CompiledRoute, tenant: Tenant | null): readonly ScopedTerm[] | null {
  const tenantLimit = tenant !== null ? tenant.limit : null;
  if (tenantLimit === null) {
    if (route.rateLimit === null) return null;
    const made = routeTerms.get(route);
    // Keyed by route, checked by services: the terms hold those services' limiters (a worker
    // builds one set; the check keeps the cache right should a process build more).
    if (made !== undefined && made.services === s) return made.terms;
    const terms = [routeTerm(s, route, route.rateLimit)];
    routeTerms.set(route, { services: s, terms });
    return terms;
  }
  const terms: ScopedTerm[] = [];
  if (route.rateLimit !== null) terms.push(routeTerm(s, route, route.rateLimit));
  terms.push({ key: tenant!.limitKey, limit: tenantLimit, limiter: s.limiterFor(tenantLimit), scope: 'tenant' });
  return terms;
}

function routeTerm(s: PipelineServices, route: CompiledRoute, limit: RateLimitSpec): ScopedTerm {
  return { key: route.limitKey, limit, limiter: s.limiterFor(limit), scope: 'route' };
}

function internalError(err: unknown): RouterError {
  return new RouterError('internal_error', `internal router error: ${(err as Error)?.message ?? String(err)}`);
}
