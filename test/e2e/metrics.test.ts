import { existsSync, readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postJson, resourcesFor, startLoggedRouter, startMock, startRouter, waitFor, type LoggedRouter, type MockBackend, type Router } from '../helpers/processes.js';
import { sample, total } from '../helpers/metrics-text.js';



describe('/metrics of a 2-worker router after known traffic', () => {
  let mock: MockBackend;
  let router: LoggedRouter;

  beforeAll(async () => {
    mock = await startMock('pod-a');
    const limited = `---
apiVersion: networking.serving.volcano.sh/v1alpha1
kind: ModelRoute
metadata: { name: tight-route, namespace: default }
spec:
  modelName: tight-model
  rules: [{ name: r, targetModels: [{ modelServerName: sf-server }] }]
  rateLimit:
    inputTokensPerUnit: 40
    unit: day
`;
    router = await startLoggedRouter(resourcesFor([{ name: 'pod-a', port: mock.port }], { extraRoutes: limited }), { workers: 2 });
  });
  afterAll(async () => {
    await router?.kill();
    await mock?.kill();
  });

  it('serves Prometheus text whose counters add up across workers', async () => {
    const ok = 30;
    const streamed = 6;
    const unknown = 7;
    const tight = 12;
    // New connections, so the kernel spreads them over both workers.
    const plain = Array.from({ length: ok }, () => postJson(`${router.url}/v1/completions`, { model: 'sf-model', prompt: 'hello metrics' }, { connection: 'close' }));
    const streams = Array.from({ length: streamed }, () => postJson(`${router.url}/v1/completions`, { model: 'sf-model', prompt: 'stream me', stream: true }, { connection: 'close' }));
    const missing = Array.from({ length: unknown }, (_, i) => postJson(`${router.url}/v1/completions`, { model: `no-such-${i}`, prompt: 'x' }, { connection: 'close' }));
    const statuses = await Promise.all([...plain, ...streams, ...missing].map(async (p) => {
      const r = await p;
      await r.text();
      return r.status;
    }));
    expect(statuses.filter((s) => s === 200).length).toBe(ok + streamed);
    expect(statuses.filter((s) => s === 404).length).toBe(unknown);
    const tightStatuses: number[] = [];
    for (let i = 0; i < tight; i++) {
      const r = await postJson(`${router.url}/v1/completions`, { model: 'tight-model', prompt: 'one two three four five six seven eight' }, { connection: 'close' });
      await r.text();
      tightStatuses.push(r.status);
    }
    const rejected = tightStatuses.filter((s) => s === 429).length;
    expect(rejected).toBeGreaterThan(0);
    expect(rejected).toBeLessThan(tight);

    // Every record is written once the access log has them all; tokens come from the same requests.
    const records = await waitFor('access log records', () => {
      const recs = existsSync(router.logFile) ? readFileSync(router.logFile, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l)) : [];
      return recs.length >= ok + streamed + unknown + tight ? recs : null;
    });
    const inputFor = (route: string) => records.filter((r: any) => r.model_route === route).reduce((a: number, r: any) => a + r.input_tokens, 0);
    const outputFor = (route: string) => records.filter((r: any) => r.model_route === route).reduce((a: number, r: any) => a + r.output_tokens, 0);

    for (let i = 0; i < 6; i++) {
      const r = await fetch(`${router.url}/metrics`, { headers: { connection: 'close' } });
      expect(r.status).toBe(200);
      expect(r.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
      const t = await r.text();
      const SF = 'route="default/sf-route"';
      expect(sample(t, `inference_router_requests_total{model="sf-model",${SF},status="200",error_type=""}`)).toBe(ok + streamed);
      expect(sample(t, 'inference_router_requests_total{model="(unknown)",route="",status="404",error_type="model_not_found"}')).toBe(unknown);
      expect(sample(t, 'inference_router_requests_total{model="tight-model",route="default/tight-route",status="429",error_type="rate_limit"}')).toBe(rejected);
      expect(sample(t, 'inference_router_requests_total{model="tight-model",route="default/tight-route",status="200",error_type=""}')).toBe(tight - rejected);
      expect(sample(t, 'inference_router_ratelimit_rejections_total{route="default/tight-route",direction="input",scope="route"}')).toBe(rejected);
      expect(total(t, 'inference_router_ratelimit_decision_duration_seconds_count', 'mode="local"')).toBe(tight);
      expect(sample(t, `inference_router_request_duration_seconds_count{${SF}}`)).toBe(ok + streamed);
      expect(sample(t, `inference_router_upstream_duration_seconds_count{${SF}}`)).toBe(ok + streamed);
      expect(sample(t, `inference_router_stream_time_to_first_byte_seconds_count{${SF}}`)).toBe(streamed);
      expect(sample(t, `inference_router_input_tokens_total{${SF}}`)).toBe(inputFor('default/sf-route'));
      expect(sample(t, `inference_router_output_tokens_total{${SF}}`)).toBe(outputFor('default/sf-route'));
      expect(sample(t, `inference_router_output_tokens_total{${SF}}`)).toBeGreaterThan(0);
      expect(sample(t, 'inference_router_upstream_inflight_requests{backend_pod="pod-a",pod="pod-a"}')).toBe(0);
      expect(sample(t, 'inference_router_access_log_dropped_total')).toBe(0);
      expect(sample(t, 'inference_router_metrics_scrape_workers{state="answered"}')).toBe(2);
      expect(sample(t, 'inference_router_metrics_scrape_workers{state="missing"}')).toBe(0);
      expect(t).toMatch(/^# TYPE process_cpu_user_seconds_total counter$/m);
    }
  });
});

describe('a pod at the connection cap (ROUTER_UPSTREAM_CONNECTIONS)', () => {
  let mock: MockBackend;
  let router: Router;

  beforeAll(async () => {
    // Each answer takes 1.5 s, so requests beyond the cap wait for a connection long enough to be seen.
    mock = await startMock('pod-a', ['--latency-ms', '1500']);
    router = await startRouter(resourcesFor([{ name: 'pod-a', port: mock.port }]), { workers: 1, env: { ROUTER_UPSTREAM_CONNECTIONS: '2' } });
  });
  afterAll(async () => {
    await router?.kill();
    await mock?.kill();
  });

  it('keeps at most that many connections open, shows the requests that wait for one, and answers them all', async () => {
    const answers = Array.from({ length: 5 }, () => postJson(`${router.url}/v1/completions`, { model: 'sf-model', prompt: 'wait for a connection' }));
    const seen = await waitFor('the waiting requests in /metrics', async () => {
      const t = await (await fetch(`${router.url}/metrics`)).text();
      // All five arrived and two are on the pod: three wait. (Three waiting alone can be the first
      // three, two of them for connections still opening, before the last two have arrived.)
      const queued = sample(t, 'inference_router_upstream_queued_requests{backend_pod="pod-a",pod="pod-a"}');
      const inflight = sample(t, 'inference_router_upstream_inflight_requests{backend_pod="pod-a",pod="pod-a"}');
      return queued === 3 && inflight === 5 ? t : null;
    });
    expect(sample(seen, 'inference_router_upstream_connections{backend_pod="pod-a",pod="pod-a"}')).toBe(2);
    const statuses = await Promise.all(answers.map(async (p) => {
      const r = await p;
      await r.text();
      return r.status;
    }));
    expect(statuses).toEqual([200, 200, 200, 200, 200]);
    const after = await (await fetch(`${router.url}/metrics`)).text();
    expect(sample(after, 'inference_router_upstream_queued_requests{backend_pod="pod-a",pod="pod-a"}')).toBe(0);
    expect(sample(after, 'inference_router_upstream_connections{backend_pod="pod-a",pod="pod-a"}')).toBe(2);
  });
});
