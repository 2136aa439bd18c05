/**
 * The router's Prometheus metrics of one worker process (docs/metrics.md). Handles for a label
 * set are created on first use and cached in Maps keyed by route, model and status, so
 * observeRequest() is a few Map lookups and field increments. Values read from other modules
 * (in-flight per pod, access log drops, tokenizer pool) are collected at scrape time.
 */
import { collectDefaultMetrics, Registry } from 'prom-client';
import { ERROR_TYPES, type ErrorType } from '../errors.js';
import { buildInfo } from '../build-info.js';
import type { RequestContext } from '../http/request-context.js';
import type { LimitDirection } from '../ratelimit/limiter.js';
import { withGatedDelaySampler, type SamplingGate } from './event-loop-sampler.js';
import {
  CollectedFamily, CounterFamily, HistogramFamily, type CounterSeries, type HistogramSeries, type MetricValue,
} from './metrics-series.js';
import { sumByBackendPod } from './backend-pod-series.js';
import { DEFAULT_MAX_TENANTS, OVERFLOW_TENANT, TENANT_TOKENS } from './tenant-series-bound.js';
import { performance } from 'node:perf_hooks';

/** Label value of `model` when the requested model is not served (bounds the label's values). */
export const UNKNOWN_MODEL = '(unknown)';

const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];
const DECISION_BUCKETS = [0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25];
const TOKENIZER_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5];

/**
 * How often nodejs_eventloop_lag_* samples the event loop's delay (prom-client's default is 10 ms).
 * Each sample is a timer that wakes an idle worker: at 10 ms that was 100 wake-ups a second per
 * process, which on a virtual machine cost an idle router 8–19 ms of CPU a second per worker and
 * added to the work at moderate load (docs/internals/performance-changes.md, "Idle wake-ups"). At 100 ms a 15 s scrape
 * interval still holds 150 samples per worker.
 */
export const EVENT_LOOP_SAMPLE_MS = 100;
/**
 * ... and only while requests finish: the sampler stops once a check finds no request finished in
 * the last this-many ms (so 2 to 4 s after the last one) and starts again with the next
 * (src/observe/event-loop-sampler.ts), so an idle worker is not woken by it.
 */
export const EVENT_LOOP_IDLE_AFTER_MS = 2_000;

const ERROR_INDEX = new Map<string, number>(Object.keys(ERROR_TYPES).map((t, i) => [t, i + 1]));

export interface RouterMetricsOptions {
  /** Registry to register in; default a new one (never prom-client's global registry). */
  readonly registry?: Registry;
  /**
   * Tenants with their own series in inference_router_tenant_tokens_total (the first seen); the rest
   * are counted under tenant "" (OVERFLOW_TENANT). Default 100; the primary bounds the sum over the
   * workers the same way (tenant-series-bound.ts).
   */
  readonly maxTenants?: number;
  /** Also collect prom-client's process/Node.js metrics (process_*, nodejs_*); default true. */
  readonly defaultMetrics?: boolean;
  /**
   * For requests that failed before routing (401/403, model_not_found): true when the model is
   * served, so it keeps its name as label; otherwise the label is UNKNOWN_MODEL. Default: none known.
   */
  readonly knownModel?: (model: string) => boolean;
}

/** Readers of values other modules own; called at scrape time only. */
export interface MetricSources {
  /** Backend pods of this process: requests in flight, connections open, requests waiting for a connection. */
  upstreamPods?: () => Iterable<{ readonly name: string; readonly inflight: number; readonly connections: number; readonly queued: number }>;
  /** Access-log records dropped so far (AccessLog.dropped). */
  accessLogDropped?: () => number;
  /** Times this worker closed its listener for want of a file descriptor (descriptor-guard.ts). */
  listenerPauses?: () => number;
  /** Trace spans dropped so far by reason (OtlpExporter); unset when tracing is off. */
  traceSpansDropped?: () => { readonly droppedQueueFull: number; readonly droppedExportFailed: number };
  /** Tokenizer pool tasks submitted and not yet answered (running + queued). */
  tokenizerPoolTasks?: () => number;
  /** Token counts so far by method (RouterTokenCounter.stats). */
  tokenCounts?: () => {
    readonly inline: number; readonly pooled: number; readonly fallbacks: number;
    readonly cacheHits: number; readonly cacheMisses: number; readonly cacheJoins: number;
  };
  /** Bodies of ROUTER_TOKENIZER_PARSE_MIN_BYTES or more by where they were parsed (ThreadParser.stats); unset when none goes to a thread. */
  threadParses?: () => { readonly inThread: number; readonly onEventLoop: number };
  /** Long chat bodies of the event loop that went on from a kept conversation, and conversations kept (api/conversation-memo.ts). */
  conversations?: () => { readonly found: number; readonly kept: number };
  /** Chat and Responses bodies of the event loop whose system prompt was read by its bytes, and prompts kept (api/openai-system-prompt.ts). */
  systemPrompts?: () => { readonly found: number; readonly kept: number };
  /** The global limit stores of this process and whether each decides now (LimiterRegistry.storeStates). */
  limitStores?: () => Iterable<{ readonly store: string; readonly up: boolean }>;
  /** Fair queueing on: the requests of this process waiting, by ModelServer (FairGates.queued). */
  fairQueued?: () => ReadonlyMap<string, number>;
  /** Memory for request bodies kept free for the next ones, ordinary and shared (body-memory.ts bodyMemoryStats). */
  bodyMemory?: () => { readonly freeBytes: number; readonly freeSharedBytes: number };
}

/** Cached handles of one route ("" = requests that failed before a route was chosen). */
interface RouteHandles {
  readonly route: string;
  readonly duration: HistogramSeries;
  readonly upstream: HistogramSeries;
  readonly ttfb: HistogramSeries;
  readonly input: CounterSeries;
  readonly output: CounterSeries;
  readonly outputEstimated: CounterSeries;
  readonly usageUnread: CounterSeries;
  /** Made with the route's other series (a route's 429s count from 0), but not for the requests of no route (route ""): none of theirs is a route limit's. */
  rejectedInput: CounterSeries | null;
  rejectedOutput: CounterSeries | null;
  /** model label -> (status * 16 + error index) -> requests counter. */
  readonly models: Map<string, Map<number, CounterSeries>>;
}

/** prom-client's default gauges whose names end in _total (see the constructor). */
const LINT_REFUSED_DEFAULTS = ['nodejs_active_handles_total', 'nodejs_active_requests_total', 'nodejs_active_resources_total'];

export class RouterMetrics {
  readonly registry: Registry;
  private readonly knownModel: ((model: string) => boolean) | null;
  private readonly routes = new Map<string, RouteHandles>();
  private sources: MetricSources = {};
  /** prom-client's event-loop delay sampler, sampling while requests finish (null without default metrics). */
  private readonly delaySampler: SamplingGate | null = null;

  private readonly requests = new CounterFamily('inference_router_requests_total',
    'Requests answered, by requested model, route (namespace/name), HTTP status and error type ("" on success).',
    ['model', 'route', 'status', 'error_type']);
  private readonly requestDuration = new HistogramFamily('inference_router_request_duration_seconds',
    'Time from request received to response end (duration_total), by route.', ['route'], LATENCY_BUCKETS);
  private readonly upstreamDuration = new HistogramFamily('inference_router_upstream_duration_seconds',
    'Time spent on the backend pod (duration_upstream_processing), by route.', ['route'], LATENCY_BUCKETS);
  private readonly ttfb = new HistogramFamily('inference_router_stream_time_to_first_byte_seconds',
    'Streaming requests: time from request received to the first byte sent to the client, by route.', ['route'], LATENCY_BUCKETS);
  private readonly inputTokens = new CounterFamily('inference_router_input_tokens_total',
    'Input (prompt) tokens of requests, by route.', ['route']);
  private readonly outputTokens = new CounterFamily('inference_router_output_tokens_total',
    'Output (generated) tokens of answers, by route.', ['route']);
  private readonly outputTokensEstimated = new CounterFamily('inference_router_output_tokens_estimated_total',
    'Of the output tokens, those estimated rather than reported by the backend or counted (a long stream cut before its count), by route.', ['route']);
  private readonly usageUnread = new CounterFamily('inference_router_usage_unread_total',
    'Successful answers whose output tokens are not known, so not counted or charged to limits: a JSON answer over 8 MiB whose last 64 KiB hold no usage, by route.', ['route']);
  private readonly rejections = new CounterFamily('inference_router_ratelimit_rejections_total',
    'Requests rejected by a token rate limit (429), by route ("" for tenant limits), the direction whose limit was exhausted and the scope of the limit (route, tenant).',
    ['route', 'direction', 'scope']);
  private readonly shadowRejections = new CounterFamily('inference_router_rate_limit_shadow_rejections_total',
    'Requests a limit in shadow mode would have rejected (they were not), by scope (route, tenant) and direction.', ['scope', 'direction']);
  private readonly tenantTokens = new CounterFamily(TENANT_TOKENS,
    'Tokens of requests by tenant (API key name or JWT tenant claim; past the bounded set of tenants, "") and direction.',
    ['tenant', 'direction']);
  private readonly tenants = new Map<string, [CounterSeries, CounterSeries]>();
  private readonly maxTenants: number;
  private readonly tenantRejections = new Map<string, CounterSeries>();
  private readonly shadowSeries = new Map<string, CounterSeries>();
  private readonly decisionDuration = new HistogramFamily('inference_router_ratelimit_decision_duration_seconds',
    'Time to an admission decision of the token limiter, by mode (local, global).', ['mode'], DECISION_BUCKETS);
  private readonly redisErrors = new CounterFamily('inference_router_ratelimit_store_errors_total',
    'Errors and timeouts talking to the global limit store (Redis): failed or timed-out calls and failed connection attempts, by store address.', ['store']);
  private readonly failureModeDecisions = new CounterFamily('inference_router_ratelimit_failure_mode_decisions_total',
    'Admission decisions made without the global store, by failure mode applied (local, open, closed).', ['mode']);
  private readonly leaseEvents = new CounterFamily('inference_router_ratelimit_leases_total',
    'Leases of global limits by event: lent, given_back, recalled, forfeited.', ['event']);
  private readonly recallWaits = new CounterFamily('inference_router_ratelimit_recall_waits_total',
    'Admissions of global limits that waited for leases to come back (a refusal recalled them), by outcome: admitted, refused.', ['outcome']);
  private readonly recallAdmitted: CounterSeries = this.recallWaits.child('admitted');
  private readonly recallRefused: CounterSeries = this.recallWaits.child('refused');
  private readonly fairQueueWait = new HistogramFamily('inference_router_fair_queue_wait_seconds',
    'Fair queueing: time a request waited for its turn to go to a ModelServer, by server (requests that waited only; those that timed out included).', ['server'], LATENCY_BUCKETS);
  private readonly tokenizerDuration = new HistogramFamily('inference_router_tokenizer_pool_duration_seconds',
    'Time from submitting a count to the tokenizer pool to its answer (queue wait included).', [], TOKENIZER_BUCKETS);
  private readonly tokenizerTask: HistogramSeries = this.tokenizerDuration.child();

  constructor(opts: RouterMetricsOptions = {}) {
    this.registry = opts.registry ?? new Registry();
    this.knownModel = opts.knownModel ?? null;
    this.maxTenants = opts.maxTenants ?? DEFAULT_MAX_TENANTS;
    const r = this.registry;
    for (const m of [
      this.requests, this.requestDuration, this.upstreamDuration, this.ttfb, this.inputTokens, this.outputTokens, this.outputTokensEstimated, this.usageUnread,
      this.rejections, this.shadowRejections, this.tenantTokens, this.decisionDuration, this.redisErrors, this.failureModeDecisions, this.leaseEvents, this.recallWaits, this.tokenizerDuration,
      this.fairQueueWait,
    ]) r.registerMetric(m as never);
    r.registerMetric(new CollectedFamily('inference_router_fair_queue_requests',
      'Fair queueing: requests waiting for their turn to go to a ModelServer, by server.', 'gauge', () => this.collectFairQueued()) as never);
    r.registerMetric(new CollectedFamily('inference_router_upstream_inflight_requests',
      'Requests in flight to each backend pod (backend_pod; pod is the same, deprecated).', 'gauge', () => this.collectByPod('inflight')) as never);
    r.registerMetric(new CollectedFamily('inference_router_upstream_connections',
      'Connections open to each backend pod (backend_pod; pod is the same, deprecated; at most ROUTER_UPSTREAM_CONNECTIONS per worker).', 'gauge', () => this.collectByPod('connections')) as never);
    r.registerMetric(new CollectedFamily('inference_router_upstream_queued_requests',
      'Requests waiting in the router for a connection to each backend pod (backend_pod; pod is the same, deprecated), its workers at ROUTER_UPSTREAM_CONNECTIONS or a connection opening.', 'gauge',
      () => this.collectByPod('queued')) as never);
    r.registerMetric(new CollectedFamily('inference_router_access_log_dropped_total',
      'Access-log records dropped because the sink did not keep up, its write failed (e.g. disk full), or they came after close.', 'counter',
      () => single(this.sources.accessLogDropped)) as never);
    r.registerMetric(new CollectedFamily('inference_router_listener_pauses_total',
      'Times a worker stopped accepting connections because it had no file descriptor free (it accepts again once connections close; the other workers take them meanwhile).', 'counter',
      () => single(this.sources.listenerPauses)) as never);
    r.registerMetric(new CollectedFamily('inference_router_trace_spans_dropped_total',
      'Trace spans not delivered: the export queue was full (queue_full) or the collector did not accept the batch (export_failed).', 'counter',
      () => fieldSeries(this.sources.traceSpansDropped, 'reason', TRACE_DROP_FIELDS)) as never);
    r.registerMetric(new CollectedFamily('inference_router_tokenizer_pool_tasks',
      'Tasks submitted to the tokenizer pool and not answered yet (running and queued): token counts and parses of large request bodies.', 'gauge',
      () => single(this.sources.tokenizerPoolTasks)) as never);
    r.registerMetric(new CollectedFamily('inference_router_token_counts_total',
      'Prompt token counts by how they were made: inline (event loop), pooled (tokenizer threads), fallback (chars estimate).',
      'counter', () => fieldSeries(this.sources.tokenCounts, 'method', TOKEN_COUNT_FIELDS)) as never);
    r.registerMetric(new CollectedFamily('inference_router_token_count_cache_texts_total',
      'Prompt texts long enough for the cache of repeated texts, by result: hit (count reused), miss (counted, then kept), joined (being counted in the tokenizer pool for another request: that count waited for).',
      'counter', () => fieldSeries(this.sources.tokenCounts, 'result', TOKEN_CACHE_FIELDS)) as never);
    r.registerMetric(new CollectedFamily('inference_router_large_body_parses_total',
      'Request bodies of ROUTER_TOKENIZER_PARSE_MIN_BYTES or more, by where they were parsed: thread (a tokenizer thread), event_loop (no place in the tokenizer pool, or its thread failed).',
      'counter', () => fieldSeries(this.sources.threadParses, 'where', THREAD_PARSE_FIELDS)) as never);
    r.registerMetric(new CollectedFamily('inference_router_body_memory_free_bytes',
      'Memory for request bodies kept free for the next ones (not yet returned to the system), by memory: ordinary (4-256 KiB bodies, at most 4 MiB per worker), shared (bodies a tokenizer thread parses or over 256 KiB, at most 16 MiB per worker, or one buffer of the largest body a higher ROUTER_MAX_BODY_BYTES allows).',
      'gauge', () => fieldSeries(this.sources.bodyMemory, 'memory', BODY_MEMORY_FIELDS)) as never);
    r.registerMetric(new CollectedFamily('inference_router_conversations_total',
      'Long chat conversations (bodies of 8 KiB or more) parsed on the event loop, by what the memo of conversations did: found (the body went on from a kept conversation: only its new messages parsed), kept (its conversation kept for the next turn).',
      'counter', () => fieldSeries(this.sources.conversations, 'result', FOUND_KEPT_FIELDS)) as never);
    r.registerMetric(new CollectedFamily('inference_router_system_prompts_total',
      'System prompts (a chat body\'s first message\'s text or a Responses body\'s instructions, 1 KiB or more) parsed on the event loop, by what the memo of system prompts did: found (read by its bytes: the kept text taken, the prompt not parsed), kept (its bytes kept for the next request).',
      'counter', () => fieldSeries(this.sources.systemPrompts, 'result', FOUND_KEPT_FIELDS)) as never);
    // The lowest over the workers: 0 while any of them decides without the store.
    r.registerMetric(new CollectedFamily('inference_router_ratelimit_store_up',
      'Whether the global limit store (Redis) decides the admissions of its limits: 1 while every worker reaches it, 0 while any decides by the failure mode (unreachable, refusing, or not answered yet), by store address.',
      'gauge', () => this.collectStores(), 'min') as never);
    r.registerMetric(new CollectedFamily('inference_router_build_info',
      'Always 1; labels: router version, Node.js version, uWebSockets.js build that loaded.', 'gauge',
      () => [{ labels: { ...buildInfo }, value: 1 }], 'max') as never);
    if (opts.defaultMetrics ?? true) {
      this.delaySampler = withGatedDelaySampler(EVENT_LOOP_IDLE_AFTER_MS,
        () => collectDefaultMetrics({ register: r, eventLoopMonitoringPrecision: EVENT_LOOP_SAMPLE_MS }));
      // Gauges named like counters, which `promtool check metrics` refuses (a CI linting the scrape
      // fails): their sums are the per-type gauges prom-client keeps beside them (nodejs_active_handles …).
      for (const name of LINT_REFUSED_DEFAULTS) r.removeSingleMetric(name);
    }
  }

  /** Connects the scrape-time readers (may be called again to replace them). */
  bindSources(sources: MetricSources): void {
    this.sources = { ...this.sources, ...sources };
  }

  /**
   * Records one finished request (call once, after ctx.tEnd is set). `ttfbMs`: for streamed
   * answers, ms from ctx.t0 to the first byte written to the client; null otherwise.
   */
  observeRequest(ctx: RequestContext, ttfbMs: number | null): void {
    this.delaySampler?.touch();
    const r = this.routes.get(ctx.modelRoute) ?? this.addRoute(ctx.modelRoute);
    let model = ctx.modelName;
    if (r.route === '' && model !== '' && (this.knownModel === null || !this.knownModel(model))) model = UNKNOWN_MODEL;
    const byStatus = r.models.get(model) ?? this.addModel(r, model);
    const type = ctx.errorType;
    const key = ctx.statusCode * 16 + (type === null ? 0 : ERROR_INDEX.get(type)!);
    const counter = byStatus.get(key) ?? this.addRequestSeries(r, model, byStatus, key, ctx.statusCode, type);
    counter.value++;

    const end = ctx.tEnd > 0 ? ctx.tEnd : performance.now();
    r.duration.observe((end - ctx.t0) / 1000);
    if (ctx.tUpstreamStart > 0) r.upstream.observe(((ctx.tUpstreamEnd > 0 ? ctx.tUpstreamEnd : end) - ctx.tUpstreamStart) / 1000);
    if (ttfbMs !== null) r.ttfb.observe(ttfbMs / 1000);
    if (ctx.inputTokens > 0) r.input.value += ctx.inputTokens;
    if (ctx.outputTokens > 0) r.output.value += ctx.outputTokens;
    if (ctx.outputTokensEstimated > 0) r.outputEstimated.value += ctx.outputTokensEstimated;
    if (ctx.usageUnread) r.usageUnread.value++;
    if (ctx.tenant !== '' && (ctx.inputTokens > 0 || ctx.outputTokens > 0)) {
      const t = this.tenants.get(ctx.tenant) ?? this.addTenant(ctx.tenant);
      t[0].value += ctx.inputTokens;
      t[1].value += ctx.outputTokens;
    }
  }

  /** The series of a tenant: its own among the first maxTenants seen, else those of OVERFLOW_TENANT. */
  private addTenant(tenant: string): [CounterSeries, CounterSeries] {
    const own = this.tenants.size - (this.tenants.has(OVERFLOW_TENANT) ? 1 : 0);
    const name = own < this.maxTenants ? tenant : OVERFLOW_TENANT;
    let t = this.tenants.get(name);
    if (t === undefined) {
      t = [this.tenantTokens.child(name, 'input'), this.tenantTokens.child(name, 'output')];
      this.tenants.set(name, t);
    }
    // Past the bound, other names share OVERFLOW_TENANT (not kept by name: the map stays bounded).
    return t;
  }

  /** A shadow-mode limit would have rejected a request (limit key: `tenant:` ones are tenant scope). */
  shadowRejected(key: string, direction: LimitDirection): void {
    const scope = scopeOf(key);
    const id = `${scope}\0${direction}`;
    let c = this.shadowSeries.get(id);
    if (c === undefined) {
      c = this.shadowRejections.child(scope, direction);
      this.shadowSeries.set(id, c);
    }
    c.value++;
  }

  /** A token rate limit rejected a request of `route` (namespace/name). */
  rateLimitRejected(route: string, direction: LimitDirection): void {
    if (scopeOf(route) === 'tenant') {
      let c = this.tenantRejections.get(direction);
      if (c === undefined) {
        c = this.rejections.child('', direction, 'tenant');
        this.tenantRejections.set(direction, c);
      }
      c.value++;
      return;
    }
    const r = this.routes.get(route) ?? this.addRoute(route);
    if (direction === 'input') (r.rejectedInput ??= this.rejections.child(route, 'input', 'route')).value++;
    else (r.rejectedOutput ??= this.rejections.child(route, 'output', 'route')).value++;
  }

  /** Latency of one limiter admission decision, ms. */
  limiterDecision(mode: 'local' | 'global', ms: number): void {
    this.decisionDuration.childOf(mode).observe(ms / 1000);
  }

  /** A command to the global limit store failed or timed out (`store`: address without credentials). */
  redisError(store: string): void {
    this.redisErrors.childOf(store).value++;
  }

  /** A decision was made without the global store, by the failure mode `mode` (local, open, closed). */
  failureModeDecision(mode: string): void {
    this.failureModeDecisions.childOf(mode).value++;
  }

  /** A lease of a global limit was lent, given back, recalled or forfeited. */
  leaseEvent(event: string): void {
    this.leaseEvents.childOf(event).value++;
  }

  /** An admission that waited for leases to come back got its answer. */
  recallWait(admitted: boolean): void {
    (admitted ? this.recallAdmitted : this.recallRefused).value++;
  }

  /** A request's wait in the fair queue of `server` ended after `ms` (its turn came, or it timed out). */
  fairQueueWaited(server: string, ms: number): void {
    this.fairQueueWait.childOf(server).observe(ms / 1000);
  }

  /** A pooled token count took `ms` from submission to answer. */
  tokenizerPoolTask(ms: number): void {
    this.tokenizerTask.observe(ms / 1000);
  }

  /** Prometheus text of this process alone (the cluster view is metrics-cluster.ts). */
  metrics(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  private addRoute(route: string): RouteHandles {
    const r: RouteHandles = {
      route,
      duration: this.requestDuration.child(route),
      upstream: this.upstreamDuration.child(route),
      ttfb: this.ttfb.child(route),
      input: this.inputTokens.child(route),
      output: this.outputTokens.child(route),
      outputEstimated: this.outputTokensEstimated.child(route),
      usageUnread: this.usageUnread.child(route),
      rejectedInput: route === '' ? null : this.rejections.child(route, 'input', 'route'),
      rejectedOutput: route === '' ? null : this.rejections.child(route, 'output', 'route'),
      models: new Map(),
    };
    this.routes.set(route, r);
    return r;
  }

  private addModel(r: RouteHandles, model: string): Map<number, CounterSeries> {
    const m = new Map<number, CounterSeries>();
    r.models.set(model, m);
    return m;
  }

  private addRequestSeries(r: RouteHandles, model: string, byStatus: Map<number, CounterSeries>, key: number, status: number, type: ErrorType | null): CounterSeries {
    const s = this.requests.child(model, r.route, String(status), type ?? '');
    byStatus.set(key, s);
    return s;
  }

  /** One of the pods' figures, summed by pod name (two endpoints of one name are one pod to a reader). */
  private collectByPod(field: 'inflight' | 'connections' | 'queued'): MetricValue[] {
    const src = this.sources.upstreamPods;
    return src === undefined ? [] : sumByBackendPod(src(), (e) => e.name, (e) => e[field]);
  }

  private collectFairQueued(): MetricValue[] {
    const src = this.sources.fairQueued;
    if (src === undefined) return [];
    const out: MetricValue[] = [];
    for (const [server, n] of src()) out.push({ labels: { server }, value: n });
    return out;
  }

  private collectStores(): MetricValue[] {
    const src = this.sources.limitStores;
    if (src === undefined) return [];
    const out: MetricValue[] = [];
    for (const s of src()) out.push({ labels: { store: s.store }, value: s.up ? 1 : 0 });
    return out;
  }
}

/** Tenant limit keys start with `tenant:` (ratelimit/limit-key.ts); route keys have no `:`. */
function scopeOf(key: string): 'route' | 'tenant' {
  return key.startsWith('tenant:') ? 'tenant' : 'route';
}

/** One series per label value, each a field of what `src` reads; none while it is unset. */
function fieldSeries<S>(src: (() => S) | undefined, label: string, fields: readonly (readonly [value: string, field: keyof S])[]): MetricValue[] {
  if (src === undefined) return [];
  const s = src();
  return fields.map(([value, field]) => ({ labels: { [label]: value }, value: s[field] as number }));
}

const TOKEN_COUNT_FIELDS = [['inline', 'inline'], ['pooled', 'pooled'], ['fallback', 'fallbacks']] as const;
const TOKEN_CACHE_FIELDS = [['hit', 'cacheHits'], ['miss', 'cacheMisses'], ['joined', 'cacheJoins']] as const;
const THREAD_PARSE_FIELDS = [['thread', 'inThread'], ['event_loop', 'onEventLoop']] as const;
const BODY_MEMORY_FIELDS = [['ordinary', 'freeBytes'], ['shared', 'freeSharedBytes']] as const;
const FOUND_KEPT_FIELDS = [['found', 'found'], ['kept', 'kept']] as const;
const TRACE_DROP_FIELDS = [['queue_full', 'droppedQueueFull'], ['export_failed', 'droppedExportFailed']] as const;

function single(src: (() => number) | undefined): MetricValue[] {
  return src === undefined ? [] : [{ labels: {}, value: src() }];
}
