import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { postFresh, startMock, startRouter, type MockBackend, type Router, unusedPort, waitFor } from '../helpers/processes.js';

function resources(pods: { name: string; port: number }[]): string {
  return `apiVersion: networking.serving.volcano.sh/v1alpha1
kind: ModelServer
metadata: { name: shared-server, namespace: default }
spec:
  endpoints:
${pods.map((p) => `    - { name: ${p.name}, address: "127.0.0.1:${p.port}" }`).join('\n')}
---
apiVersion: networking.serving.volcano.sh/v1alpha1
kind: ModelRoute
metadata: { name: shared-route, namespace: default }
spec:
  modelName: m
  rules:
    - name: default
      targetModels: [{ modelServerName: shared-server }]
`;
}

async function metric(router: Router, name: string, labels: string): Promise<number> {
  const text = await (await fetch(`${router.url}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(labels === '' ? `${name} ` : `${name}{${labels}}`));
  return line === undefined ? 0 : Number(line.split(' ').at(-1));
}

/** Between the requests of the ejection tests (above a loaded machine's IPC hop, well below the ejection). */
const PACE_MS = 25;

describe('passive health shared by the workers of an instance, real processes', () => {
  let router: Router | undefined;
  const mocks: MockBackend[] = [];
  afterEach(async () => {
    await router?.kill();
    await Promise.all(mocks.splice(0).map((m) => m.kill()));
  });

  it('2 workers: a dead pod costs about the threshold of attempts, not one threshold per worker; both avoid it; it comes back', async () => {
    const threshold = 3;
    const ok = await startMock('pod-ok');
    mocks.push(ok);
    const deadPort = await unusedPort();
    router = await startRouter(resources([{ name: 'pod-ok', port: ok.port }, { name: 'pod-dead', port: deadPort }]), {
      workers: 2,
      env: { ROUTER_OUTLIER_CONSECUTIVE_FAILURES: String(threshold), ROUTER_OUTLIER_BASE_EJECTION: '10s' },
    });
    // Fresh connections: the kernel spreads them over both workers. Paced (PACE_MS) so that the
    // news of a failure, worker to primary to worker, has arrived before the next request even on
    // a loaded machine; without the sharing each worker would pay the whole threshold.
    for (let i = 0; i < 60; i++) {
      expect((await postFresh(`${router.url}/v1/completions`, { model: 'm', prompt: 'x' })).status).toBe(200);
      await sleep(PACE_MS);
    }
    expect((await ok.stats()).requests).toBe(60);
    const failures = await metric(router, 'inference_router_upstream_connect_failures_total', 'backend_pod="pod-dead",pod="pod-dead"');
    expect(failures).toBeGreaterThanOrEqual(threshold);
    // One threshold for the instance, plus at most one attempt per worker while the news travels.
    expect(failures).toBeLessThanOrEqual(threshold + 2);
    // Ejected once for the instance, held by both workers, logged once.
    expect(await metric(router, 'inference_router_pod_ejections_total', 'backend_pod="pod-dead",pod="pod-dead"')).toBe(1);
    expect(await metric(router, 'inference_router_pod_ejected', 'backend_pod="pod-dead",pod="pod-dead"')).toBe(2);
    expect(router.stderr().match(/pod pod-dead ejected for \d+ms after 3 connect failure\(s\)\/timeout\(s\)\/reset\(s\) in a row/g)).toHaveLength(1);

    const back = await startMock('pod-dead', ['--port', String(deadPort)]);
    mocks.push(back);
    await waitFor('pod-dead back in rotation', async () => {
      await postFresh(`${router!.url}/v1/completions`, { model: 'm', prompt: 'x' });
      return (await back.stats()).requests > 0;
    }, 30_000, 50);
    await waitFor('return logged', () => router!.stderr().includes('pod pod-dead answered again: back in rotation'), 10_000);
    expect(await metric(router, 'inference_router_pod_ejected', 'backend_pod="pod-dead",pod="pod-dead"')).toBe(0);
    expect(router.stderr().match(/pod pod-dead answered again/g)).toHaveLength(1);
  });

  it('2 workers: a pod that answers 500 to everything costs about the threshold of answers for the instance; both avoid it', async () => {
    const threshold = 3;
    const ok = await startMock('pod-ok');
    const failing = await startMock('pod-failing', ['--fail-rate', '1']);
    mocks.push(ok, failing);
    router = await startRouter(resources([{ name: 'pod-ok', port: ok.port }, { name: 'pod-failing', port: failing.port }]), {
      workers: 2,
      env: { ROUTER_OUTLIER_CONSECUTIVE_5XX: String(threshold), ROUTER_OUTLIER_BASE_EJECTION: '10s' },
    });
    let errors = 0;
    for (let i = 0; i < 60; i++) {
      const status = (await postFresh(`${router.url}/v1/completions`, { model: 'm', prompt: 'x' })).status;
      if (status !== 200) errors++;
      await sleep(PACE_MS);
    }
    const failed = (await failing.stats()).requests;
    expect(errors).toBe(failed);
    expect((await ok.stats()).requests).toBe(60 - failed);
    expect(failed).toBeGreaterThanOrEqual(threshold);
    // One threshold for the instance, plus at most one answer per worker while the news travels.
    expect(failed).toBeLessThanOrEqual(threshold + 2);
    expect(await metric(router, 'inference_router_upstream_5xx_failures_total', 'backend_pod="pod-failing",pod="pod-failing"')).toBe(failed);
    expect(await metric(router, 'inference_router_pod_ejections_total', 'backend_pod="pod-failing",pod="pod-failing"')).toBe(1);
    expect(await metric(router, 'inference_router_pod_ejected', 'backend_pod="pod-failing",pod="pod-failing"')).toBe(2);
    expect(router.stderr().match(/pod pod-failing ejected for \d+ms after \d 5xx answer\(s\) in a row/g)).toHaveLength(1);
  });

  it('2 workers: requests sharing a long prefix on fresh connections all go to one pod (affinity learned by one worker reaches the other)', async () => {
    const pods = await Promise.all(['pod-1', 'pod-2', 'pod-3'].map((n) => startMock(n)));
    mocks.push(...pods);
    router = await startRouter(resources(pods.map((m, i) => ({ name: `pod-${i + 1}`, port: m.port }))), {
      workers: 2, env: { ROUTER_POD_METRICS_INTERVAL: '100ms' },
    });
    // Exactly 10 blocks of 256 characters: every request below shares these 10 block hashes.
    const system = 'You are a careful assistant who answers in French. '.repeat(60).slice(0, 2560);
    const post = (prompt: string) => postFresh(`${router!.url}/v1/completions`, { model: 'm', prompt });
    expect((await post(system)).status).toBe(200);
    // Both workers remember the 10 hashes once the worker that served it shared them.
    await waitFor('prefix shared with both workers', async () => (await metric(router!, 'inference_router_scheduler_prefix_hashes', '')) === 20);
    for (let i = 0; i < 15; i++) {
      expect((await post(`${system}Question ${i}?`)).status).toBe(200);
      // The other worker's count of requests in flight reaches this one once per interval: without
      // the wait, a request that ended a moment ago can still count as load on the pod it went to
      // (least-request outweighs the prefix by 1.5 to 1), which is not what this test is about.
      await new Promise((r) => setTimeout(r, 250));
    }
    const counts = await Promise.all(pods.map(async (p) => (await p.stats()).requests));
    expect(counts.sort((a, b) => b - a)).toEqual([16, 0, 0]);
  });
});
