import { AggregatorRegistry } from 'prom-client';
import { describe, expect, it, vi } from 'vitest';
import { RequestContext } from '../../../src/http/request-context.js';
import { RouterMetrics, UNKNOWN_MODEL } from '../../../src/observe/metrics.js';
import { MeteredLimiter } from '../../../src/ratelimit/metered.js';
import type { Decision, TokenLimiter } from '../../../src/ratelimit/limiter.js';
import type { RateLimitSpec } from '../../../src/config/resource-types.js';
import { sample } from '../../helpers/metrics-text.js';

/** A finished request: t0 = 1000 ms, upstream 1010..1210, end at 1250 (performance.now() ms). */
function ctx(o: Partial<{ model: string; route: string; status: number; error: 'rate_limit' | 'authentication_failed' | 'model_not_found' | 'upstream_error'; input: number; output: number; upstream: boolean }> = {}): RequestContext {
  const c = new RequestContext('POST', '/v1/completions', 'HTTP/1.1', 'id', Date.now(), 1000);
  c.modelName = o.model ?? 'sf-model';
  c.modelRoute = o.route ?? 'default/sf-route';
  c.statusCode = o.status ?? 200;
  if (o.error) c.fail(o.error, 'x', o.status ?? 500);
  c.inputTokens = o.input ?? 0;
  c.outputTokens = o.output ?? 0;
  if (o.upstream ?? true) {
    c.tUpstreamStart = 1010;
    c.tUpstreamEnd = 1210;
  }
  c.tEnd = 1250;
  return c;
}

/** Value of one exposition line `name{labels} value`, or undefined. */

describe('RouterMetrics', () => {
  it('exposes requests, durations, ttfb and tokens after observations', async () => {
    const m = new RouterMetrics({ defaultMetrics: false });
    m.observeRequest(ctx({ input: 10, output: 20 }), 42);
    m.observeRequest(ctx({ input: 5, output: 7 }), null);
    m.observeRequest(ctx({ status: 429, error: 'rate_limit', input: 3, upstream: false }), null);
    const t = await m.metrics();
    const R = 'route="default/sf-route"';
    expect(sample(t, `inference_router_requests_total{model="sf-model",${R},status="200",error_type=""}`)).toBe(2);
    expect(sample(t, `inference_router_requests_total{model="sf-model",${R},status="429",error_type="rate_limit"}`)).toBe(1);
    expect(sample(t, `inference_router_input_tokens_total{${R}}`)).toBe(18);
    expect(sample(t, `inference_router_output_tokens_total{${R}}`)).toBe(27);
    expect(sample(t, `inference_router_output_tokens_estimated_total{${R}}`)).toBe(0);
    // 250 ms total: le 0.25 holds all three, le 0.1 none.
    expect(sample(t, `inference_router_request_duration_seconds_bucket{${R},le="0.1"}`)).toBe(0);
    expect(sample(t, `inference_router_request_duration_seconds_bucket{${R},le="0.25"}`)).toBe(3);
    expect(sample(t, `inference_router_request_duration_seconds_bucket{${R},le="+Inf"}`)).toBe(3);
    expect(sample(t, `inference_router_request_duration_seconds_count{${R}}`)).toBe(3);
    expect(sample(t, `inference_router_request_duration_seconds_sum{${R}}`)).toBeCloseTo(0.75, 9);
    // Upstream: 200 ms, only the two forwarded requests.
    expect(sample(t, `inference_router_upstream_duration_seconds_count{${R}}`)).toBe(2);
    expect(sample(t, `inference_router_upstream_duration_seconds_sum{${R}}`)).toBeCloseTo(0.4, 9);
    expect(sample(t, `inference_router_upstream_duration_seconds_bucket{${R},le="0.1"}`)).toBe(0);
    expect(sample(t, `inference_router_upstream_duration_seconds_bucket{${R},le="0.25"}`)).toBe(2);
    // TTFB only for the streamed one: 42 ms.
    expect(sample(t, `inference_router_stream_time_to_first_byte_seconds_count{${R}}`)).toBe(1);
    expect(sample(t, `inference_router_stream_time_to_first_byte_seconds_bucket{${R},le="0.025"}`)).toBe(0);
    expect(sample(t, `inference_router_stream_time_to_first_byte_seconds_bucket{${R},le="0.05"}`)).toBe(1);
    expect(t).toMatch(/# TYPE inference_router_requests_total counter/);
    expect(t).toMatch(/# TYPE inference_router_request_duration_seconds histogram/);
  });

  it('a route\'s 429 series start at 0 with its first request; requests of no route (route "") make none', async () => {
    const m = new RouterMetrics({ defaultMetrics: false });
    m.observeRequest(ctx({ route: '', status: 404, error: 'model_not_found', upstream: false }), null);
    m.observeRequest(ctx(), null);
    const t = await m.metrics();
    expect(t).toMatch(/^inference_router_requests_total{model="[^"]*",route="",status="404",error_type="model_not_found"} 1$/m);
    for (const d of ['input', 'output']) {
      expect(sample(t, `inference_router_ratelimit_rejections_total{route="",direction="${d}",scope="route"}`)).toBeUndefined();
      expect(sample(t, `inference_router_ratelimit_rejections_total{route="default/sf-route",direction="${d}",scope="route"}`)).toBe(0);
    }
    m.rateLimitRejected('default/sf-route', 'output');
    expect(sample(await m.metrics(), 'inference_router_ratelimit_rejections_total{route="default/sf-route",direction="output",scope="route"}')).toBe(1);
  });

  it('counts the estimated part of output tokens beside all of them', async () => {
    const m = new RouterMetrics({ defaultMetrics: false });
    const cut = ctx({ output: 90 });
    cut.outputTokensEstimated = 60;
    m.observeRequest(cut, null);
    m.observeRequest(ctx({ output: 10 }), null);
    const t = await m.metrics();
    const R = 'route="default/sf-route"';
    expect(sample(t, `inference_router_output_tokens_total{${R}}`)).toBe(100);
    expect(sample(t, `inference_router_output_tokens_estimated_total{${R}}`)).toBe(60);
  });

  it('bounds the model label: unserved models are "(unknown)" unless knownModel says otherwise', async () => {
    const plain = new RouterMetrics({ defaultMetrics: false });
    const known = new RouterMetrics({ defaultMetrics: false, knownModel: (x) => x === 'sf-model' });
    for (const m of [plain, known]) {
      for (let i = 0; i < 50; i++) m.observeRequest(ctx({ model: `random-${i}`, route: '', status: 404, error: 'model_not_found', upstream: false }), null);
      m.observeRequest(ctx({ model: 'sf-model', route: '', status: 401, error: 'authentication_failed', upstream: false }), null);
    }
    const a = await plain.metrics();
    expect(sample(a, `inference_router_requests_total{model="${UNKNOWN_MODEL}",route="",status="404",error_type="model_not_found"}`)).toBe(50);
    expect(sample(a, `inference_router_requests_total{model="${UNKNOWN_MODEL}",route="",status="401",error_type="authentication_failed"}`)).toBe(1);
    expect(a).not.toMatch(/random-/);
    const b = await known.metrics();
    expect(sample(b, 'inference_router_requests_total{model="sf-model",route="",status="401",error_type="authentication_failed"}')).toBe(1);
    expect(sample(b, `inference_router_requests_total{model="${UNKNOWN_MODEL}",route="",status="404",error_type="model_not_found"}`)).toBe(50);
  });

  it('counts limiter, store, tokenizer events and reads sources at scrape time', async () => {
    const m = new RouterMetrics({ defaultMetrics: false });
    m.rateLimitRejected('default/r', 'input');
    m.rateLimitRejected('default/r', 'input');
    m.rateLimitRejected('default/r', 'output');
    m.limiterDecision('local', 0.08);
    m.limiterDecision('global', 0.7);
    m.redisError('127.0.0.1:6390');
    m.failureModeDecision('open');
    m.failureModeDecision('open');
    m.leaseEvent('lent');
    m.leaseEvent('given_back');
    m.leaseEvent('lent');
    m.recallWait(true);
    m.recallWait(true);
    m.recallWait(false);
    m.tokenizerPoolTask(3);
    let dropped = 4;
    const pods = [{ name: 'pod-a', inflight: 2, connections: 2, queued: 0 }, { name: 'pod-b', inflight: 0, connections: 1, queued: 0 }, { name: 'pod-a', inflight: 3, connections: 1, queued: 2 }];
    m.bindSources({
      accessLogDropped: () => dropped,
      upstreamPods: () => pods,
      tokenizerPoolTasks: () => 3,
      tokenCounts: () => ({ inline: 10, pooled: 2, fallbacks: 1, cacheHits: 7, cacheMisses: 3, cacheJoins: 4 }),
      bodyMemory: () => ({ freeBytes: 65_536, freeSharedBytes: 8_388_608 }),
    });
    let t = await m.metrics();
    expect(sample(t, 'inference_router_ratelimit_rejections_total{route="default/r",direction="input",scope="route"}')).toBe(2);
    expect(sample(t, 'inference_router_ratelimit_rejections_total{route="default/r",direction="output",scope="route"}')).toBe(1);
    expect(sample(t, 'inference_router_ratelimit_decision_duration_seconds_bucket{mode="local",le="0.0001"}')).toBe(1);
    expect(sample(t, 'inference_router_ratelimit_decision_duration_seconds_bucket{mode="global",le="0.0005"}')).toBe(0);
    expect(sample(t, 'inference_router_ratelimit_decision_duration_seconds_bucket{mode="global",le="0.001"}')).toBe(1);
    expect(sample(t, 'inference_router_ratelimit_store_errors_total{store="127.0.0.1:6390"}')).toBe(1);
    expect(sample(t, 'inference_router_ratelimit_failure_mode_decisions_total{mode="open"}')).toBe(2);
    expect(sample(t, 'inference_router_ratelimit_leases_total{event="lent"}')).toBe(2);
    expect(sample(t, 'inference_router_ratelimit_leases_total{event="given_back"}')).toBe(1);
    expect(sample(t, 'inference_router_ratelimit_recall_waits_total{outcome="admitted"}')).toBe(2);
    expect(sample(t, 'inference_router_ratelimit_recall_waits_total{outcome="refused"}')).toBe(1);
    expect(sample(t, 'inference_router_tokenizer_pool_duration_seconds_count')).toBe(1);
    expect(sample(t, 'inference_router_tokenizer_pool_tasks')).toBe(3);
    expect(sample(t, 'inference_router_body_memory_free_bytes{memory="ordinary"}')).toBe(65_536);
    expect(sample(t, 'inference_router_body_memory_free_bytes{memory="shared"}')).toBe(8_388_608);
    expect(sample(t, 'inference_router_token_counts_total{method="fallback"}')).toBe(1);
    expect(sample(t, 'inference_router_token_count_cache_texts_total{result="hit"}')).toBe(7);
    expect(sample(t, 'inference_router_token_count_cache_texts_total{result="miss"}')).toBe(3);
    expect(sample(t, 'inference_router_token_count_cache_texts_total{result="joined"}')).toBe(4);
    // Two endpoints of one pod name (e.g. two ports) are summed under that name.
    expect(sample(t, 'inference_router_upstream_inflight_requests{backend_pod="pod-a",pod="pod-a"}')).toBe(5);
    expect(sample(t, 'inference_router_upstream_inflight_requests{backend_pod="pod-b",pod="pod-b"}')).toBe(0);
    expect(sample(t, 'inference_router_upstream_connections{backend_pod="pod-a",pod="pod-a"}')).toBe(3);
    expect(sample(t, 'inference_router_upstream_connections{backend_pod="pod-b",pod="pod-b"}')).toBe(1);
    expect(sample(t, 'inference_router_upstream_queued_requests{backend_pod="pod-a",pod="pod-a"}')).toBe(2);
    expect(sample(t, 'inference_router_upstream_queued_requests{backend_pod="pod-b",pod="pod-b"}')).toBe(0);
    expect(sample(t, 'inference_router_access_log_dropped_total')).toBe(4);
    dropped = 9;
    pods[0].inflight = 0;
    pods[2].inflight = 0;
    pods[2].queued = 0;
    t = await m.metrics();
    expect(sample(t, 'inference_router_access_log_dropped_total')).toBe(9);
    expect(sample(t, 'inference_router_upstream_inflight_requests{backend_pod="pod-a",pod="pod-a"}')).toBe(0);
    expect(sample(t, 'inference_router_upstream_queued_requests{backend_pod="pod-a",pod="pod-a"}')).toBe(0);
  });

  it('tenants past maxTenants share one overflow series, which no tenant (one named "other" included) can have', async () => {
    const m = new RouterMetrics({ defaultMetrics: false, maxTenants: 2 });
    const seen = (tenant: string, input: number): void => {
      const c = ctx({ input, output: 1 });
      c.tenant = tenant;
      m.observeRequest(c, null);
    };
    seen('other', 7);
    seen('a', 1);
    seen('b', 10);
    seen('c', 100);
    seen('other', 7);
    const t = await m.metrics();
    expect(sample(t, 'inference_router_tenant_tokens_total{tenant="other",direction="input"}')).toBe(14);
    expect(sample(t, 'inference_router_tenant_tokens_total{tenant="a",direction="input"}')).toBe(1);
    expect(sample(t, 'inference_router_tenant_tokens_total{tenant="",direction="input"}')).toBe(110);
    expect(sample(t, 'inference_router_tenant_tokens_total{tenant="",direction="output"}')).toBe(2);
    expect(sample(t, 'inference_router_tenant_tokens_total{tenant="b",direction="input"}')).toBeUndefined();
  });

  it('includes process metrics by default', async () => {
    const m = new RouterMetrics();
    expect(await m.metrics()).toMatch(/^process_cpu_user_seconds_total \d/m);
  });

  it('sums two registries with AggregatorRegistry.aggregate', async () => {
    const a = new RouterMetrics({ defaultMetrics: false });
    const b = new RouterMetrics({ defaultMetrics: false });
    a.observeRequest(ctx({ input: 1 }), null);
    b.observeRequest(ctx({ input: 2 }), null);
    b.observeRequest(ctx({ input: 4 }), null);
    const text = await AggregatorRegistry.aggregate([await a.registry.getMetricsAsJSON(), await b.registry.getMetricsAsJSON()]).metrics();
    expect(sample(text, 'inference_router_requests_total{model="sf-model",route="default/sf-route",status="200",error_type=""}')).toBe(3);
    expect(sample(text, 'inference_router_input_tokens_total{route="default/sf-route"}')).toBe(7);
    expect(sample(text, 'inference_router_request_duration_seconds_bucket{route="default/sf-route",le="+Inf"}')).toBe(3);
  });
});

describe('MeteredLimiter', () => {
  const spec: RateLimitSpec = { inputTokensPerUnit: 10, outputTokensPerUnit: null, unit: 'minute', global: null, mode: 'enforce' };
  const decision = (allowed: boolean): Decision => ({ allowed, rejectedBy: allowed ? null : 'input', retryAfterSeconds: 1, input: null, output: null });

  it('times decisions by mode (sync and async); rejections are counted per request, not by the limiter', async () => {
    const m = new RouterMetrics({ defaultMetrics: false });
    let next = true;
    const inner: TokenLimiter = {
      admit: () => decision(next),
      chargeOutput: () => {},
      adjustInput: () => {},
      close: async () => {},
    };
    const asyncInner: TokenLimiter = { ...inner, admit: async () => decision(next) };
    const local = new MeteredLimiter(inner, 'local', m);
    const global = new MeteredLimiter(asyncInner, 'global', m);
    expect((local.admit('ns/a', spec, 1) as Decision).allowed).toBe(true);
    next = false;
    expect((local.admit('ns/a', spec, 1) as Decision).allowed).toBe(false);
    expect((await global.admit('ns/b', spec, 1)).allowed).toBe(false);
    const t = await m.metrics();
    expect(sample(t, 'inference_router_ratelimit_decision_duration_seconds_count{mode="local"}')).toBe(2);
    expect(sample(t, 'inference_router_ratelimit_decision_duration_seconds_count{mode="global"}')).toBe(1);
    // A request refused by several limits is one rejection: the pipeline counts it, under the limit its 429 names.
    expect(sample(t, 'inference_router_ratelimit_rejections_total{route="ns/a",direction="input",scope="route"}')).toBeUndefined();
    expect(sample(t, 'inference_router_ratelimit_rejections_total{route="ns/b",direction="input",scope="route"}')).toBeUndefined();
  });
});

describe('MeteredLimiter timing', () => {
  const spec: RateLimitSpec = { inputTokensPerUnit: 10, outputTokensPerUnit: null, unit: 'minute', global: null, mode: 'enforce' };
  const allowed: Decision = { allowed: true, rejectedBy: null, retryAfterSeconds: 1, input: null, output: null };

  it('a synchronous decision (a lease) is recorded as 0 s without reading the clock; one that waits is timed to its answer', async () => {
    const seen: number[] = [];
    const sink = { limiterDecision: (_mode: 'local' | 'global', ms: number) => { seen.push(ms); } };
    let release: (d: Decision) => void = () => {};
    const inner: TokenLimiter = {
      admit: (_k, _l, tokens) => (tokens === 1 ? allowed : new Promise<Decision>((r) => { release = r; })),
      admitAll: (terms, tokens) => (tokens === 1 ? terms.map(() => allowed) : new Promise<Decision[]>((r) => { release = (d) => r(terms.map(() => d)); })),
      chargeOutput: () => {},
      adjustInput: () => {},
      close: async () => {},
    };
    const metered = new MeteredLimiter(inner, 'local', sink);
    const now = vi.spyOn(performance, 'now');
    try {
      expect(metered.admit('ns/a', spec, 1)).toBe(allowed);
      expect(metered.admitAll([{ key: 'ns/a', limit: spec }], 1)).toEqual([allowed]);
      expect(now).not.toHaveBeenCalled();
      expect(seen).toEqual([0, 0]);
      const waiting = metered.admit('ns/a', spec, 2);
      await new Promise((r) => setTimeout(r, 30));
      release(allowed);
      expect(await waiting).toBe(allowed);
      expect(now).toHaveBeenCalledTimes(2);
      expect(seen[2]).toBeGreaterThanOrEqual(20);
    } finally {
      now.mockRestore();
    }
  });
});

describe('RouterMetrics event-loop delay summaries', () => {
  it('read 0 before any request (the sampler sleeps) and real delays once requests finish', async () => {
    const m = new RouterMetrics();
    await new Promise((r) => setTimeout(r, 250));
    let t = await m.registry.metrics();
    // No samples while idle: 0, not the empty histogram's sentinel (about 9.2e9 s).
    expect(sample(t, 'nodejs_eventloop_lag_min_seconds')).toBe(0);
    expect(sample(t, 'nodejs_eventloop_lag_max_seconds')).toBe(0);
    m.observeRequest(ctx(), null);
    await new Promise((r) => setTimeout(r, 350));
    t = await m.registry.metrics();
    const min = sample(t, 'nodejs_eventloop_lag_min_seconds')!;
    const max = sample(t, 'nodejs_eventloop_lag_max_seconds')!;
    expect(min).toBeGreaterThan(0);
    expect(max).toBeGreaterThanOrEqual(min);
    expect(max).toBeLessThan(5);
  });
});
