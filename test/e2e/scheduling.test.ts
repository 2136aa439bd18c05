import { afterEach, describe, expect, it } from 'vitest';
import { freePort, postJson, startMock, startRouter, waitFor, type MockBackend, type Router } from '../helpers/processes.js';

function resources(pods: { name: string; port: number }[], policy = ''): string {
  return `apiVersion: networking.serving.volcano.sh/v1alpha1
kind: ModelServer
metadata: { name: sched-server, namespace: default }
spec:
${policy}  endpoints:
${pods.map((p) => `    - { name: ${p.name}, address: "127.0.0.1:${p.port}" }`).join('\n')}
---
apiVersion: networking.serving.volcano.sh/v1alpha1
kind: ModelRoute
metadata: { name: sched-route, namespace: default }
spec:
  modelName: m
  rules:
    - name: default
      targetModels: [{ modelServerName: sched-server }]
`;
}

async function metric(router: Router, name: string, labels: string): Promise<number> {
  const text = await (await fetch(`${router.url}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name}{${labels}}`));
  return line === undefined ? 0 : Number(line.split(' ').at(-1));
}

const complete = async (router: Router): Promise<number> => {
  const r = await postJson(`${router.url}/v1/completions`, { model: 'm', prompt: 'x' });
  await r.text();
  return r.status;
};

describe('passive health and retries, real processes', () => {
  let router: Router | undefined;
  const mocks: MockBackend[] = [];
  afterEach(async () => {
    await router?.kill();
    await Promise.all(mocks.splice(0).map((m) => m.kill()));
  });

  it('an unreachable pod is ejected, traffic goes to the healthy one, and it comes back once it answers', async () => {
    const ok = await startMock('pod-ok');
    mocks.push(ok);
    const deadPort = await freePort();
    router = await startRouter(resources([{ name: 'pod-ok', port: ok.port }, { name: 'pod-dead', port: deadPort }]), {
      workers: 1,
      env: { ROUTER_OUTLIER_CONSECUTIVE_FAILURES: '2', ROUTER_OUTLIER_BASE_EJECTION: '1s' },
    });
    for (let i = 0; i < 30; i++) expect(await complete(router)).toBe(200);
    expect((await ok.stats()).requests).toBe(30);
    // Two connect failures eject it; within the first ejection no request tries it again.
    expect(await metric(router, 'inference_router_pod_ejections_total', 'pod="pod-dead"')).toBeGreaterThanOrEqual(1);
    const failures = await metric(router, 'inference_router_upstream_connect_failures_total', 'pod="pod-dead"');
    expect(failures).toBeGreaterThanOrEqual(2);
    expect(failures).toBeLessThan(6);
    expect(await metric(router, 'inference_router_upstream_retries_total', 'server="default/sched-server"')).toBe(failures);
    expect(router.stderr()).toMatch(/pod pod-dead ejected for \d+ms after 2 connect failure\(s\)\/timeout\(s\) in a row/);

    const back = await startMock('pod-dead', ['--port', String(deadPort)]);
    mocks.push(back);
    await waitFor('pod-dead back in rotation', async () => {
      await complete(router!);
      return (await back.stats()).requests > 0;
    }, 20_000, 50);
    expect(router.stderr()).toContain('pod pod-dead answered again: back in rotation');
    expect(await metric(router, 'inference_router_pod_ejected', 'pod="pod-dead"')).toBe(0);
  });

  it('all pods ejected: they are still tried, and the answer is a clear 502', async () => {
    const [p1, p2] = [await freePort(), await freePort()];
    router = await startRouter(resources([{ name: 'dead-1', port: p1 }, { name: 'dead-2', port: p2 }]), {
      workers: 1,
      env: { ROUTER_OUTLIER_CONSECUTIVE_FAILURES: '1', ROUTER_OUTLIER_BASE_EJECTION: '1m' },
    });
    for (let i = 0; i < 3; i++) {
      const r = await postJson(`${router.url}/v1/completions`, { model: 'm', prompt: 'x' });
      expect(r.status).toBe(502);
      expect(await r.text()).toMatch(/cannot connect to any pod of ModelServer default\/sched-server \(tried dead-\d, dead-\d\)/);
    }
    expect(await metric(router, 'inference_router_pod_ejected', 'pod="dead-1"')).toBe(1);
    expect(await metric(router, 'inference_router_pod_ejected', 'pod="dead-2"')).toBe(1);
  });

  it('trafficPolicy.retry: a pod that times out before answering is left for another pod', async () => {
    const slow = await startMock('pod-slow', ['--latency-ms', '3000']);
    const fast = await startMock('pod-fast');
    mocks.push(slow, fast);
    const pods = [{ name: 'pod-slow', port: slow.port }, { name: 'pod-fast', port: fast.port }];
    router = await startRouter(resources(pods, '  trafficPolicy: { timeout: 300ms, retry: { attempts: 1 } }\n'), {
      workers: 1,
      env: { ROUTER_OUTLIER_CONSECUTIVE_FAILURES: '1000' },
    });
    for (let i = 0; i < 6; i++) expect(await complete(router)).toBe(200);
    expect((await fast.stats()).requests).toBe(6);
    expect(await metric(router, 'inference_router_upstream_timeouts_total', 'pod="pod-slow"')).toBe((await slow.stats()).requests);
  });

  it('without a retry policy a timeout is answered (504), not retried', async () => {
    const slow = await startMock('pod-slow', ['--latency-ms', '3000']);
    mocks.push(slow);
    router = await startRouter(resources([{ name: 'pod-slow', port: slow.port }], '  trafficPolicy: { timeout: 300ms }\n'), { workers: 1 });
    expect(await complete(router)).toBe(504);
    expect(await metric(router, 'inference_router_upstream_retries_total', 'server="default/sched-server"')).toBe(0);
  });
});
