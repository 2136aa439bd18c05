import { RouterError } from '../errors.js';
import { apiFor } from '../api/api-registry.js';
import type { RateLimitSpec } from '../config/resource-types.js';
import type { RouterSettings } from '../config/settings.js';
import type { Exchange } from '../http/exchange.js';
import { proxyWithRetries, type ProxyListener } from '../pick/proxy-with-retries.js';
import type { Scheduler } from '../pick/scheduler.js';
import type { LimitDirection, TokenLimiter } from '../ratelimit/limiter.js';
import type { LimitKey } from '../ratelimit/limit-key.js';
import { NO_WEIGHTED_TARGET, RouteTable, type CompiledRoute, type CompiledServer } from '../route/route-table.js';
import type { TokenCounter } from '../tokens/token-counter.js';
import { settleUsage } from '../usage/settle-usage.js';
import { rateLimitRejection, rejectedDirection } from '../ratelimit/rejection.js';
import { limiterFailure } from '../ratelimit/errors.js';
import type { RequestSpan, Tracer } from '../observe/tracer.js';
import type { Tenant } from '../auth/tenant.js';
import { admitRequest, type RequestAdmission, type ScopedTerm } from '../ratelimit/request-admission.js';
import type { AnswerUsage, InferenceApi, InferenceRequest } from '../api/inference-api.js';
import type { PromptText } from '../tokens/prompt-text.js';
import { anyInAdmissionWindow, giveBackInput } from '../ratelimit/admit-all.js';
import { performance } from 'node:perf_hooks';
import type { FairGate, FairGates, FairWaiter } from '../pick/fair-gate.js';
import type { ThreadParsed, ThreadParser } from '../api/thread-parse.js';

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
  /** A request was refused (429) by the limit of `key` in `direction`: the one its answer names. Once per request. */
  rateLimitRejected(key: LimitKey, direction: LimitDirection): void;
  /** Fair queueing in front of each ModelServer (pick/fair-gate.ts); null = off. */
  readonly fairGates: FairGates | null;
  /** Large bodies parsed in a tokenizer thread (api/thread-parse.ts); null = every body on the event loop. */
  readonly threadParser: ThreadParser | null;
}

/**
 * The path of one request after its body arrived: parse → route → count → limit → pick →
 * proxy → usage. Every outcome ends in exactly one finish() call.
 */
export function runPipeline(x: Exchange, s: PipelineServices): void {
  new PipelineRun(x, s).start();
}

/**
 * One request on its way, as plain calls. Each step that may have to wait (authentication with a
 * key fetch, a count in the tokenizer pool, a limit store, the pod's answer, a store's settle)
 * continues from the step's callback or Promise; the usual request, whose steps all answer at
 * once but the pod, makes no Promise: one object per request instead of two async frames and
 * their Promises.
 */
class PipelineRun implements ProxyListener, FairWaiter {
  private readonly x: Exchange;
  private readonly s: PipelineServices;
  private readonly span: RequestSpan | null;
  private api: InferenceApi | null = null;
  private req: InferenceRequest | null = null;
  private tenant: Tenant | null = null;
  private route: CompiledRoute | null = null;
  private server: CompiledServer | null = null;
  private prompt: PromptText | null = null;
  /** The limits that apply (route, tenant), once known; null when none does. */
  private terms: readonly ScopedTerm[] | null = null;
  /** Input tokens charged to `terms`, given back when the request reached no pod. */
  private charged = 0;
  private ended = false;
  /** Fair queueing: the gate whose place in flight the request holds (released at its end), else null. */
  private gate: FairGate | null = null;
  /** Fair queueing: the gate the request waits at, else null. */
  private waitingAt: FairGate | null = null;

  constructor(x: Exchange, s: PipelineServices) {
    this.x = x;
    this.s = s;
    this.span = s.tracer === null ? null : s.tracer.start(x);
    // Ended with the request's record (worker.ts finish), which may wait for the answer's last byte.
    x.traceSpan = this.span;
  }

  /** Parse: on the event loop, or a large body in a tokenizer thread. */
  start(): void {
    const x = this.x;
    const api = apiFor(x.url);
    this.api = api;
    const threads = this.s.threadParser;
    if (threads !== null && threads.wants(x.body)) {
      threads.parse(api, x.body, x.url).then((p) => this.parsedInThread(p), (err) => this.fail(err));
      return;
    }
    this.parseHere();
  }

  private parseHere(): void {
    let req: InferenceRequest;
    try {
      req = this.api!.parse(this.x.body, this.x.url);
    } catch (err) {
      this.fail(err);
      return;
    }
    this.parsed(req);
  }

  /** A thread's answer: the request with its prompt, its refusal, or null (the thread failed: parsed here). */
  private parsedInThread(p: ThreadParsed | RouterError | null): void {
    if (p === null) this.parseHere();
    else if (p instanceof RouterError) this.fail(p);
    else {
      this.prompt = p.prompt;
      this.parsed(p.req);
    }
  }

  /** Authenticate. */
  private parsed(req: InferenceRequest): void {
    let tenant: Tenant | Promise<Tenant> | null = null;
    try {
      this.req = req;
      this.x.ctx.modelName = req.model;
      if (this.s.authorize !== null) tenant = this.s.authorize(this.x, req.model);
    } catch (err) {
      this.fail(err);
      return;
    }
    if (tenant instanceof Promise) tenant.then((t) => this.authorized(t), (err) => this.fail(err));
    else this.authorized(tenant);
  }

  /** Route, pick the rule's server, count the prompt. */
  private authorized(tenant: Tenant | null): void {
    let counted: number | Promise<number>;
    try {
      const x = this.x;
      const ctx = x.ctx;
      const req = this.req!;
      if (tenant !== null) {
        this.tenant = tenant;
        ctx.tenant = tenant.name;
      }
      const table = this.s.table();
      if (table === null) throw new RouterError('upstream_error', 'the router has not loaded its configuration yet', 503, null, 'not_configured');
      const first = table.route(req.model) ?? null;
      if (first === null) throw new RouterError('model_not_found', `model "${req.model}" is not served by any route${table.unknownModelHint(req.model)}`);
      // The route's own copy of the same name: later comparisons of it (the access log's) are then
      // of one string with itself.
      ctx.modelName = first.modelName;
      let route = first;
      let server = RouteTable.pick(route, x);
      // The next route of the same name, when this one's rules match none or send nothing.
      let unweighted: CompiledRoute | null = null;
      while ((server === null || server === NO_WEIGHTED_TARGET) && route.next !== null) {
        if (server === NO_WEIGHTED_TARGET) unweighted ??= route;
        route = route.next;
        server = RouteTable.pick(route, x);
      }
      if (server === null && unweighted !== null) {
        server = NO_WEIGHTED_TARGET;
        route = unweighted;
      } else if (server === null) {
        route = first;
      }
      ctx.modelRoute = route.key;
      this.route = route;
      if (server === null) throw new RouterError('model_not_found', `no rule of ${routesNamed(first)} matches the request`, 404, null, 'no_matching_rule');
      if (server === NO_WEIGHTED_TARGET) throw new RouterError('upstream_error', `the matching rule of route ${route.key} has no target with a weight above 0`, 503, null, 'no_weighted_target');
      ctx.modelServer = server.key;
      this.server = server;
      // A body parsed in a thread came with its prompt.
      const prompt = this.prompt ?? this.api!.promptText(req);
      this.prompt = prompt;
      counted = this.s.tokens.countPrompt(prompt);
    } catch (err) {
      this.fail(err);
      return;
    }
    if (typeof counted === 'number') this.counted(counted);
    else counted.then((n) => this.counted(n), (err) => this.fail(err));
  }

  /** The limits: admit against them. */
  private counted(inputTokens: number): void {
    let admitted: RequestAdmission | Promise<RequestAdmission> | null = null;
    try {
      this.x.ctx.inputTokens = inputTokens;
      const terms = limitTerms(this.s, this.route!, this.tenant);
      this.terms = terms;
      if (terms !== null) {
        // Taken before any store is asked: no charge of the request is older (its give-backs go
        // only to a Redis process that answered since then: redis/store-limiter.ts givenBackTo).
        this.x.ctx.admittedAt = Date.now();
        // One enforced limit decides alone (from a lease: synchronously); several, or a shadow
        // one, are decided together (request-admission.ts).
        admitted = admitRequest(terms, inputTokens);
      }
    } catch (err) {
      this.fail(err);
      return;
    }
    if (admitted instanceof Promise) admitted.then((a) => this.admitted(a), (err) => this.fail(err));
    else this.admitted(admitted);
  }

  /** Admitted (or no limit applies): forward to a pod. */
  private admitted(a: RequestAdmission | null): void {
    try {
      const x = this.x;
      if (a !== null) {
        x.decision = a.shown;
        x.rateScope = a.shownScope;
        if (!a.admitted) {
          this.s.rateLimitRejected(a.shownKey!, rejectedDirection(a.shown!));
          // Answered as a caught error would be, without the throw (a 429 flood's every request).
          this.fail(rateLimitRejection(a.shown!, x.ctx.inputTokens));
          return;
        }
        this.charged = x.ctx.inputTokens;
        x.ctx.admittedByFailureMode = a.byFailureMode;
        x.ctx.admittedLateCharges = a.lateCharges;
        x.ctx.admittedWindows = a.windows;
      }
      if (!x.writable) {
        this.end(); // client left while we counted/limited: nothing sent upstream
        return;
      }
      const gates = this.s.fairGates;
      if (gates !== null) {
        const gate = gates.of(this.server!.key);
        const entry = gate.enter(this, x.ctx.tenant, x.ctx.inputTokens);
        if (entry === 'wait') {
          // Its client leaving takes it out of the queue (abortForClient).
          this.waitingAt = gate;
          x.upstream = this;
          return;
        }
        if (entry === 'full') throw new RouterError('upstream_error', `the fair queue of ModelServer ${gate.server} is full`, 503, RETRY_SOON, 'fair_queue_full');
        this.gate = gate;
      }
      this.proxy();
    } catch (err) {
      this.fail(err);
    }
  }

  private proxy(): void {
    proxyWithRetries(this.x, this.api!, this.s.tokens, this.server!, this.req!, this.prompt, this.s.scheduler, this.span, this);
  }

  /** FairWaiter: its turn came. */
  granted(): void {
    this.gate = this.waitingAt;
    this.waitingAt = null;
    this.x.upstream = null;
    if (!this.x.writable) {
      this.end();
      return;
    }
    try {
      this.proxy();
    } catch (err) {
      this.fail(err);
    }
  }

  /** FairWaiter: it waited too long. */
  timedOut(): void {
    const gate = this.waitingAt!;
    this.waitingAt = null;
    this.x.upstream = null;
    this.fail(new RouterError('upstream_error', `waited ${gate.timeoutMs / 1000}s in the fair queue of ModelServer ${gate.server} without its turn`, 503, RETRY_SOON, 'fair_queue_timeout'));
  }

  /** FairWaiter: the router stops before its turn came. */
  stopped(): void {
    const gate = this.waitingAt!;
    this.waitingAt = null;
    this.x.upstream = null;
    this.fail(new RouterError('upstream_error', `the router is stopping: the request was still waiting in the fair queue of ModelServer ${gate.server}`, 503, null, 'router_stopping'));
  }

  /** The client left while the request waited in a fair queue (the exchange's `upstream` then). */
  abortForClient(): void {
    const gate = this.waitingAt;
    if (gate === null) return;
    this.waitingAt = null;
    this.x.upstream = null;
    gate.leave(this);
    this.end();
  }

  /** StreamSource of a waiting request: nothing flows yet. */
  pause(): void {}

  resume(): void {}

  /** The answer went through (ProxyListener): settle the usage on the limits. */
  proxied(usage: AnswerUsage | null): void {
    let settled: Promise<void> | void;
    try {
      const ctx = this.x.ctx;
      settled = settleUsage(ctx, this.s.tokens, usage, this.terms);
      // The answer is over: counting its text off the event loop (the only wait left here) is
      // not part of its duration.
      if (settled !== undefined) ctx.tEnd = performance.now();
    } catch (err) {
      this.fail(err);
      return;
    }
    if (settled === undefined) this.end();
    else settled.then(() => this.end(), (err) => this.fail(err));
  }

  /** No pod gave an answer (ProxyListener). */
  proxyFailed(err: unknown): void {
    this.fail(err);
  }

  /**
   * Any step's failure: the error answer (written at the end of the turn), then the end. An error
   * after the end (thrown by finish() or the tracer: a bug) is not the request's to answer: it goes
   * on up, as it did from the async pipeline (an unhandled rejection), instead of vanishing.
   */
  private fail(err: unknown): void {
    if (this.ended) throw err;
    try {
      this.x.sendErrorAtTurnEnd(err instanceof RouterError ? err : limiterFailure(err) ?? internalError(err));
    } finally {
      this.end();
    }
  }

  /**
   * Once per request, whatever happened: input tokens admitted but never taken to a pod (no
   * endpoint, connection failures, client gone first) are given back (a pod that saw the request
   * keeps them charged); then finish(), which ends the span with the record.
   */
  private end(): void {
    if (this.ended) return;
    this.ended = true;
    const x = this.x;
    if (this.gate !== null) {
      const gate = this.gate;
      this.gate = null;
      // Its output counts as the tenant's use; the next waiting request goes now (fair-gate.ts next).
      gate.release(x.ctx.tenant, x.ctx.outputTokens);
    }
    if (this.charged > 0 && !x.reachedPod && this.terms !== null) {
      // Only to limits whose window that admitted the request is still on (admit-all.ts
      // owedInWindow), each where it was charged (a failure mode's decision: its fallback).
      const ctx = x.ctx;
      if (anyInAdmissionWindow(this.terms, ctx.admittedAt, Date.now(), ctx.admittedWindows)) {
        if (ctx.tEnd === 0) ctx.tEnd = performance.now();
        // giveBackInput never rejects (a store that fails is skipped).
        void giveBackInput(this.terms, this.charged, ctx.admittedByFailureMode, ctx.admittedAt, ctx.admittedLateCharges, ctx.admittedWindows).then(() => this.close());
        return;
      }
    }
    this.close();
  }

  private close(): void {
    this.s.finish(this.x);
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

/** A fair queue that is full or waited too long: a retry a second later may find room. */
const RETRY_SOON: Record<string, string> = Object.freeze({ 'retry-after': '1' }) as Record<string, string>;

function internalError(err: unknown): RouterError {
  return new RouterError('internal_error', `internal router error: ${(err as Error)?.message ?? String(err)}`);
}

/** "route a/b", or "routes a/b, a/c" when several serve the model name (error path only). */
function routesNamed(first: CompiledRoute): string {
  if (first.next === null) return `route ${first.key}`;
  const keys: string[] = [];
  for (let r: CompiledRoute | null = first; r !== null; r = r.next) keys.push(r.key);
  return `routes ${keys.join(', ')}`;
}
