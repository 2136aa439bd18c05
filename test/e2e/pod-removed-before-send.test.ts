import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readFileSync, writeFileSync } from 'node:fs';
import { postJson, startLoggedRouter, startMock, waitFor, type LoggedRouter, type MockBackend } from '../helpers/processes.js';
import { sample } from '../helpers/metrics-text.js';

/**
 * A pod picked for a retry leaves the configuration while the request waits out the
 * ModelServer's retryInterval: the router closed its pool, so nothing is sent to it. That is no
 * failure of the pod (no connect failure counted), and with no other pod left the client is told
 * the pod was removed.
 */
function resources(pods: { name: string; port: number }[]): string {
  return `apiVersion: networking.serving.volcano.sh/v1alpha1
kind: ModelServer
metadata: { name: removal-server, namespace: default }
spec:
  trafficPolicy: { timeout: 300ms, retry: { attempts: 1, retryInterval: 8s } }
  endpoints:
${pods.map((p) => `    - { name: ${p.name}, address: "127.0.0.1:${p.port}" }`).join('\n')}
---
apiVersion: networking.serving.volcano.sh/v1alpha1
kind: ModelRoute
metadata: { name: removal-route, namespace: default }
spec:
  modelName: m
  rules:
    - name: default
      targetModels: [{ modelServerName: removal-server }]
`;
}

describe('a pod removed by a reload after a retry picked it, real processes', () => {
  let x: MockBackend;
  let y: MockBackend;
  let z: MockBackend;
  let router: LoggedRouter | undefined;
  beforeAll(async () => {
    // x and y answer after the ModelServer's timeout: the first attempt times out, the retry picks the other.
    [x, y, z] = await Promise.all([startMock('pod-x', ['--latency-ms', '20000']), startMock('pod-y', ['--latency-ms', '20000']), startMock('pod-z')]);
  });
  afterAll(async () => {
    await Promise.all([router?.kill(), x?.kill(), y?.kill(), z?.kill()]);
  });

  it('answers 503 upstream_pod_removed, counts no connect failure, and the access log says why', async () => {
    router = await startLoggedRouter(resources([{ name: 'pod-x', port: x.port }, { name: 'pod-y', port: y.port }]));
    const r = router;
    const pending = postJson(`${r.url}/v1/completions`, { model: 'm', prompt: 'x' }, { 'x-request-id': 'removed-1', accept: 'application/json' })
      .then(async (res) => ({ status: res.status, body: await res.json() as { error: { message: string; type: string; code: string } } }));
    // The first pod timed out and the retry picked the other one: the request now waits out the interval.
    await waitFor('the retry', async () => sample(await (await fetch(`${r.url}/metrics`)).text(), 'inference_router_upstream_retries_total{server="default/removal-server"}') === 1, 10_000);
    const reloads = r.stderr().split('resources reloaded').length;
    writeFileSync(r.resourcesFile, resources([{ name: 'pod-z', port: z.port }]));
    await waitFor('the reload', () => r.stderr().split('resources reloaded').length > reloads, 5_000);
    const { status, body } = await pending;
    expect(status).toBe(503);
    expect(body.error.type).toBe('upstream_error');
    expect(body.error.code).toBe('upstream_pod_removed');
    expect(body.error.message).toMatch(/^pod pod-[xy] left the configuration before the request was sent to it \(pool for 127\.0\.0\.1:\d+ is closed: the pod left the configuration\); no other pod took the request$/);
    const text = await (await fetch(`${r.url}/metrics`)).text();
    for (const pod of ['pod-x', 'pod-y']) expect(sample(text, `inference_router_upstream_connect_failures_total{backend_pod="${pod}",pod="${pod}"}`) ?? 0).toBe(0);
    expect(sample(text, 'inference_router_pod_ejections_total{backend_pod="pod-x",pod="pod-x"}') ?? 0).toBe(0);
    expect(sample(text, 'inference_router_pod_ejections_total{backend_pod="pod-y",pod="pod-y"}') ?? 0).toBe(0);
    expect(sample(text, 'inference_router_requests_total{model="m",route="default/removal-route",status="503",error_type="upstream_error"}')).toBe(1);
    await waitFor('the access-log record', () => readFileSync(r.logFile, 'utf8').includes('"removed-1"'), 5_000);
    const rec = readFileSync(r.logFile, 'utf8').trim().split('\n').map((l) => JSON.parse(l)).find((l) => l.request_id === 'removed-1');
    expect(rec.status_code).toBe(503);
    expect(rec.error.type).toBe('upstream_error');
    expect(rec.error.message).toBe(body.error.message);
    expect(rec.selected_pod).toMatch(/^pod-[xy]$/);
    // The next request goes to the configuration in force.
    const next = await postJson(`${r.url}/v1/completions`, { model: 'm', prompt: 'x' });
    expect(JSON.parse(await next.text()).pod).toBe('pod-z');
    await r.kill();
    router = undefined;
  }, 60_000);
});
