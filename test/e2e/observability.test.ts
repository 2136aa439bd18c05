/**
 * deploy/observability: every metric the Grafana dashboard and the alert rules query exists in the
 * /metrics of the built router (2 workers), and build_info is 1 (not summed over workers). The
 * Kubernetes watch's metrics exist in Kubernetes mode only: kubernetes-ops.test.ts checks those.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { postJson, resourcesFor, ROOT, startMock, startRouter, type MockBackend, type Router } from '../helpers/processes.js';

const DASHBOARD = JSON.parse(readFileSync(join(ROOT, 'deploy/observability/grafana-dashboard.json'), 'utf8'));
const ALERTS = parse(readFileSync(join(ROOT, 'deploy/observability/alerts.yaml'), 'utf8'));

function dashboardExprs(): string[] {
  const out: string[] = [];
  for (const p of DASHBOARD.panels) for (const t of p.targets ?? []) out.push(t.expr);
  for (const v of DASHBOARD.templating.list) if (typeof v.query === 'string' && v.type === 'query') out.push(v.query);
  return out;
}
const ruleExprs = (): string[] => ALERTS.groups.flatMap((g: any) => g.rules.map((r: any) => r.expr));

/** Metric names in PromQL: the router's own (inference_router_*) ones. */
function metricNames(expr: string): string[] {
  return [...expr.matchAll(/\b(inference_router_[a-z0-9_]+)/g)].map((m) => m[1]);
}

/** Series about one backend pod: their pod is in backend_pod; `pod` is the router's own target label once scraped. */
const BACKEND_POD_METRICS = /inference_router_(upstream_(inflight_requests|connections|queued_requests|connect_failures_total|timeouts_total|resets_total|5xx_failures_total)|pod_(ejections_total|ejected|metrics_fresh))\b/;

/** Families in the exposition, plus histogram sample names (_bucket, _sum, _count). */
function exposed(text: string): Set<string> {
  const names = new Set<string>();
  for (const m of text.matchAll(/^# TYPE (\S+) (\w+)$/gm)) {
    names.add(m[1]);
    if (m[2] === 'histogram') for (const s of ['_bucket', '_sum', '_count']) names.add(m[1] + s);
  }
  return names;
}

describe('dashboard and alert rules against the built router', () => {
  let mock: MockBackend;
  let router: Router;
  beforeAll(async () => {
    mock = await startMock('pod-a');
    router = await startRouter(resourcesFor([{ name: 'pod-a', port: mock.port }]), { workers: 2 });
    await postJson(`${router.url}/v1/completions`, { model: 'sf-model', prompt: 'hello' });
  });
  afterAll(async () => {
    await router?.kill();
    await mock?.kill();
  });

  it('the dashboard and the rules query metrics', () => {
    expect(dashboardExprs().flatMap(metricNames).length).toBeGreaterThan(10);
    expect(ruleExprs().flatMap(metricNames).length).toBeGreaterThanOrEqual(5);
    expect(ALERTS.groups[0].rules.map((r: any) => r.alert)).toEqual([
      'InferenceRouterHighErrorRatio', 'InferenceRouterRedisFailureModeActive', 'InferenceRouterRedisUnreachable', 'InferenceRouterKubernetesWatchFailing', 'InferenceRouterCertificateExpiring',
      'InferenceRouterAccessLogDrops', 'InferenceRouterOutputTokensUnread',
      'InferenceRouterRequestsWaitingForConnections', 'InferenceRouterPodMetricsStale', 'InferenceRouterNoReadyWorkers',
    ]);
  });

  it('queries of series about a backend pod group them by backend_pod (pod is the router\'s pod once Prometheus scrapes it)', () => {
    const exprs = [...dashboardExprs(), ...ruleExprs()].filter((e) => BACKEND_POD_METRICS.test(e));
    expect(exprs.length).toBeGreaterThanOrEqual(3);
    for (const e of exprs) expect(e, e).toMatch(/\bby \([^)]*\bbackend_pod\b[^)]*\)/);
    const legends: string[] = DASHBOARD.panels.flatMap((p: any) => (p.targets ?? []).filter((t: any) => BACKEND_POD_METRICS.test(t.expr)).map((t: any) => t.legendFormat));
    for (const l of legends) expect(l).toContain('{{backend_pod}}');
  });

  it('series about a backend pod carry backend_pod, and pod (deprecated) with the same value', async () => {
    const text = await (await fetch(`${router.url}/metrics`)).text();
    const lines = text.split('\n').filter((l) => /^inference_router_upstream_(inflight_requests|connections|queued_requests)\{/.test(l));
    expect(lines.length).toBe(3);
    for (const l of lines) expect(l).toMatch(/\{backend_pod="pod-a",pod="pod-a"\} \d+$/);
  });

  it('every metric they name is in /metrics (those of Kubernetes mode only there: kubernetes-ops.test.ts; of HTTPS only there: tls-rotation.test.ts)', async () => {
    const text = await (await fetch(`${router.url}/metrics`)).text();
    const have = exposed(text);
    const names = [...new Set([...dashboardExprs(), ...ruleExprs()].flatMap(metricNames))];
    const kubernetesOnly = names.filter((n) => n.startsWith('inference_router_kubernetes_'));
    expect(kubernetesOnly.length).toBeGreaterThanOrEqual(2);
    const httpsOnly = names.filter((n) => n.startsWith('inference_router_tls_'));
    expect(httpsOnly).toEqual(['inference_router_tls_certificate_expiry_seconds']);
    const missing = names.filter((n) => !kubernetesOnly.includes(n) && !httpsOnly.includes(n) && !have.has(n));
    expect(missing).toEqual([]);
    // This router reads a file: it watches no API server; it serves plain HTTP.
    expect(text).not.toContain('inference_router_kubernetes_');
    expect(text).not.toContain('inference_router_tls_');
  });

  it('build_info is 1 across 2 workers and names the version, Node and uWS build', async () => {
    const text = await (await fetch(`${router.url}/metrics`)).text();
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));
    const line = text.split('\n').filter((l) => l.startsWith('inference_router_build_info{'));
    expect(line).toHaveLength(1);
    expect(line[0]).toMatch(new RegExp(`^inference_router_build_info\\{version="${pkg.version}",node="${process.version}",uws="uws-20\\.(57|30)"\\} 1$`));
  });
});
