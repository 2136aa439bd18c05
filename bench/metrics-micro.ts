/**
 * Micro benchmark of per-request metrics cost:
 *  1. RouterMetrics.observeRequest(ctx, ttfb) — one route / 64 routes with mixed statuses;
 *  2. the same five updates through prom-client Counter/Histogram with cached labels() children
 *     (what the light series of metrics-series.ts replace);
 *  3. one scrape (exposition text) of a registry holding 64 routes.
 *
 * Run: npm run build && node dist/bench/metrics-micro.js
 */
import { performance } from 'node:perf_hooks';
import { Counter, Histogram, Registry } from 'prom-client';
import { RequestContext } from 'inference-router/http/request-context';
import { RouterMetrics } from 'inference-router/observe/metrics';
import { takesNoArguments } from './cli-args.js';

takesNoArguments('Usage: node dist/bench/metrics-micro.js   (no options)');

const N = 2_000_000;
const STATUSES = [[200, null], [200, null], [200, null], [429, 'rate_limit'], [502, 'upstream_error']] as const;

function contexts(routes: number): RequestContext[] {
  const out: RequestContext[] = [];
  for (let i = 0; i < 1024; i++) {
    const c = new RequestContext('POST', '/v1/completions', 'HTTP/1.1', 'id', Date.now(), 1000);
    const r = i % routes;
    c.modelName = `model-${r}`;
    c.modelRoute = `default/route-${r}`;
    const [status, type] = routes === 1 ? STATUSES[0] : STATUSES[i % STATUSES.length];
    c.statusCode = status;
    if (type !== null) c.fail(type, 'x', status);
    c.inputTokens = 100 + (i % 50);
    c.outputTokens = 200 + (i % 70);
    c.tUpstreamStart = 1001;
    c.tUpstreamEnd = 1001 + (i % 300);
    c.tEnd = c.tUpstreamEnd + 1;
    out.push(c);
  }
  return out;
}

function time(name: string, fn: (i: number) => void): number {
  for (let i = 0; i < 200_000; i++) fn(i); // warm-up
  const t0 = performance.now();
  for (let i = 0; i < N; i++) fn(i);
  const ns = ((performance.now() - t0) * 1e6) / N;
  console.log(`${name.padEnd(62)} ${ns.toFixed(0).padStart(6)} ns/request`);
  return ns;
}

function promClientBaseline(ctxs: RequestContext[]): (i: number) => void {
  const r = new Registry();
  const buckets = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];
  const req = new Counter({ name: 'req_total', help: 'h', labelNames: ['model', 'route', 'status', 'error_type'], registers: [r] });
  const dur = new Histogram({ name: 'dur_seconds', help: 'h', labelNames: ['route'], buckets, registers: [r] });
  const up = new Histogram({ name: 'up_seconds', help: 'h', labelNames: ['route'], buckets, registers: [r] });
  const inp = new Counter({ name: 'in_total', help: 'h', labelNames: ['route'], registers: [r] });
  const outp = new Counter({ name: 'out_total', help: 'h', labelNames: ['route'], registers: [r] });
  // Children cached per context up front: the best case for prom-client.
  const children = ctxs.map((c) => ({
    req: req.labels(c.modelName, c.modelRoute, String(c.statusCode), c.errorType ?? ''),
    dur: dur.labels(c.modelRoute), up: up.labels(c.modelRoute), inp: inp.labels(c.modelRoute), outp: outp.labels(c.modelRoute),
  }));
  return (i) => {
    const c = ctxs[i & 1023];
    const h = children[i & 1023];
    h.req.inc();
    h.dur.observe((c.tEnd - c.t0) / 1000);
    h.up.observe((c.tUpstreamEnd - c.tUpstreamStart) / 1000);
    h.inp.inc(c.inputTokens);
    h.outp.inc(c.outputTokens);
  };
}

async function main(): Promise<void> {
  console.log(`node ${process.version}, ${N} requests per line`);
  for (const routes of [1, 64]) {
    const ctxs = contexts(routes);
    const m = new RouterMetrics({ defaultMetrics: false });
    time(`RouterMetrics.observeRequest, ${routes} route(s)`, (i) => m.observeRequest(ctxs[i & 1023], (i & 7) === 0 ? 40 : null));
    time(`prom-client cached labels() children, ${routes} route(s)`, promClientBaseline(ctxs));
    if (routes === 64) {
      const t0 = performance.now();
      let bytes = 0;
      for (let i = 0; i < 50; i++) bytes = (await m.metrics()).length;
      console.log(`${'scrape of 64 routes (exposition text)'.padEnd(62)} ${((performance.now() - t0) / 50).toFixed(2).padStart(6)} ms (${bytes} bytes)`);
    }
  }
}

void main();
