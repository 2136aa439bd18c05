/**
 * A client that leaves while its request waits out the ModelServer's retryInterval: the wait ends
 * at once, no further pod is tried, and the request is recorded then (499 client_closed), not when
 * the interval would have ended.
 */
import { request } from 'node:http';
import { afterAll, describe, expect, it } from 'vitest';
import { accessLogRecords, startLoggedRouter, startMock, unusedPort, waitFor, type LoggedRouter, type MockBackend } from '../helpers/processes.js';
import { sample } from '../helpers/metrics-text.js';

function resources(pods: { name: string; port: number }[]): string {
  return `apiVersion: networking.serving.volcano.sh/v1alpha1
kind: ModelServer
metadata: { name: interval-server, namespace: default }
spec:
  trafficPolicy: { retry: { attempts: 1, retryInterval: 40s } }
  endpoints:
${pods.map((p) => `    - { name: ${p.name}, address: "127.0.0.1:${p.port}" }`).join('\n')}
---
apiVersion: networking.serving.volcano.sh/v1alpha1
kind: ModelRoute
metadata: { name: interval-route, namespace: default }
spec:
  modelName: m
  rules:
    - name: default
      targetModels: [{ modelServerName: interval-server }]
`;
}

describe('a client that leaves during the retry interval, real processes', () => {
  let router: LoggedRouter | undefined;
  let mock: MockBackend | undefined;
  afterAll(async () => {
    await Promise.all([router?.kill(), mock?.kill()]);
  });

  it('is recorded 499 at once, and no pod is tried after it left', async () => {
    mock = await startMock('pod-up');
    const dead = await unusedPort();
    // A request the pod-up pod gets first is answered; one the dead pod gets first waits out the interval.
    router = await startLoggedRouter(resources([{ name: 'pod-dead', port: dead }, { name: 'pod-up', port: mock.port }]));
    const r = router;
    const body = JSON.stringify({ model: 'm', prompt: 'x' });
    for (let i = 0; i < 20; i++) {
      const req = request(`${r.url}/v1/completions`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-request-id': `gone-${i}` } });
      let answered = false;
      req.on('response', (res) => {
        answered = true;
        res.resume();
      });
      req.on('error', () => {});
      req.end(body);
      // Either answered by pod-up, or refused by pod-dead and now waiting out the 40 s interval.
      const retried = await waitFor('an answer or a retry', async () => {
        if (answered) return 'answered';
        return sample(await (await fetch(`${r.url}/metrics`)).text(), 'inference_router_upstream_retries_total{server="default/interval-server"}') === 1 ? 'waiting' : null;
      }, 10_000);
      if (retried === 'answered') continue;
      req.destroy();
      // Recorded at once, long before the interval ends.
      const rec = await waitFor('the record of the request that left', () => accessLogRecords(r.logFile).find((l) => l.request_id === `gone-${i}`), 10_000);
      expect(rec.status_code).toBe(499);
      expect(rec.error.type).toBe('client_closed');
      // The pod the retry picked never got the request.
      const served = (await mock.stats()).requests;
      expect(served).toBe(i);
      return;
    }
    throw new Error('the dead pod was never picked first');
  }, 120_000);
});
