import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readFileSync, writeFileSync } from 'node:fs';
import { postJson, startLoggedRouter, startMock, waitFor, type LoggedRouter, type MockBackend } from '../helpers/processes.js';
import { sample } from '../helpers/metrics-text.js';

/**
 * A pod leaves the configuration while it still has requests (one at the pod, one waiting for its
 * only connection), then the router stops and ROUTER_DRAIN_TIMEOUT passes: the pod's pool is
 * closed as every other's, so both requests are answered (503 router_stopping: the one at the pod
 * cut, the one waiting not sent) and recorded, not dropped unanswered when the router exits.
 */
function resources(pod: { name: string; port: number }): string {
  return `apiVersion: networking.serving.volcano.sh/v1alpha1
kind: ModelServer
metadata: { name: stop-server, namespace: default }
spec:
  endpoints:
    - { name: ${pod.name}, address: "127.0.0.1:${pod.port}" }
---
apiVersion: networking.serving.volcano.sh/v1alpha1
kind: ModelRoute
metadata: { name: stop-route, namespace: default }
spec:
  modelName: m
  rules:
    - name: default
      targetModels: [{ modelServerName: stop-server }]
`;
}

describe('a pod removed while it has requests, then the router stops, real processes', () => {
  let slow: MockBackend;
  let other: MockBackend;
  let router: LoggedRouter | undefined;
  beforeAll(async () => {
    [slow, other] = await Promise.all([startMock('pod-slow', ['--latency-ms', '30000']), startMock('pod-other')]);
  });
  afterAll(async () => {
    await Promise.all([router?.kill('SIGKILL'), slow?.kill(), other?.kill()]);
  });

  it('its requests are answered at the drain timeout (both 503 router_stopping) and recorded', async () => {
    router = await startLoggedRouter(resources({ name: 'pod-slow', port: slow.port }), { env: { ROUTER_UPSTREAM_CONNECTIONS: '1', ROUTER_DRAIN_TIMEOUT: '1s' } });
    const r = router;
    const ask = (id: string) => postJson(`${r.url}/v1/completions`, { model: 'm', prompt: 'x' }, { 'x-request-id': id, accept: 'application/json' })
      .then(async (res) => [res.status, (JSON.parse(await res.text()) as { error: { code: string } }).error.code], (err: Error) => [0, String(err)]);
    const atPod = ask('at-pod');
    await waitFor('the first request at the pod', async () => (await slow.stats()).requests === 1);
    const waiting = ask('waiting');
    await waitFor('the second request waiting for the connection', async () =>
      sample(await (await fetch(`${r.url}/metrics`)).text(), 'inference_router_upstream_queued_requests{backend_pod="pod-slow",pod="pod-slow"}') === 1, 5_000);
    const reloads = r.stderr().split('resources reloaded').length;
    writeFileSync(r.resourcesFile, resources({ name: 'pod-other', port: other.port }));
    await waitFor('the reload', () => r.stderr().split('resources reloaded').length > reloads, 5_000);
    r.child.kill('SIGTERM');
    const [a, b] = await Promise.all([atPod, waiting]);
    expect(await r.exited).toBe(0);
    router = undefined;
    // Cut at the pod by the router, as a live pod's request is then; not sent, as a live pod's waiting request.
    expect(a).toEqual([503, 'router_stopping']);
    expect(b).toEqual([503, 'router_stopping']);
    const recs = readFileSync(r.logFile, 'utf8').trim().split('\n').filter((l) => l !== '').map((l) => JSON.parse(l));
    expect(recs.map((rec) => [rec.request_id, rec.status_code]).sort()).toEqual([['at-pod', 503], ['waiting', 503]]);
  }, 60_000);
});
