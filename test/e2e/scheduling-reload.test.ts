import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeFileSync } from 'node:fs';
import { postJson, startMock, startRouter, waitFor, type MockBackend, type Router } from '../helpers/processes.js';
import { RedisServer } from '../helpers/redis-server.js';
import { sample } from '../helpers/metrics-text.js';

/**
 * A reload that changes a ModelServer's pods while requests wait between routing and the pick
 * (here: for a global limit's Redis, paused): they go to pods of the configuration in force, not
 * to the closed pools of pods that left it.
 */
function resources(pods: { name: string; port: number }[], redis: string, policy = ''): string {
  return `apiVersion: networking.serving.volcano.sh/v1alpha1
kind: ModelServer
metadata: { name: reload-server, namespace: default }
spec:
${policy}  endpoints:
${pods.map((p) => `    - { name: ${p.name}, address: "127.0.0.1:${p.port}" }`).join('\n')}
---
apiVersion: networking.serving.volcano.sh/v1alpha1
kind: ModelRoute
metadata: { name: reload-route, namespace: default }
spec:
  modelName: m
  rules:
    - name: default
      targetModels: [{ modelServerName: reload-server }]
  rateLimit:
    inputTokensPerUnit: 1000000
    unit: minute
    global:
      redis:
        address: "${redis}"
`;
}

// Every admission waits for Redis, long enough to reload meanwhile.
const ENV = { RATE_LIMIT_REDIS_TIMEOUT: '20s', RATE_LIMIT_REDIS_FAILURE_MODE: 'closed', RATE_LIMIT_REDIS_LEASES: 'false' };

describe('pods changed by a reload while requests wait to be sent, real processes', () => {
  let a: MockBackend;
  let b: MockBackend;
  let c: MockBackend;
  let redis: RedisServer;
  let router: Router | undefined;
  beforeAll(async () => {
    [a, b, c, redis] = await Promise.all([startMock('pod-a'), startMock('pod-b'), startMock('pod-c'), RedisServer.start()]);
  });
  afterAll(async () => {
    await Promise.all([router?.kill(), a?.kill(), b?.kill(), c?.kill(), redis?.stop()]);
  });

  /** Sends `n` requests while Redis is paused, applies `next`, then lets them through; their statuses and texts. */
  async function acrossReload(r: Router, n: number, next: string): Promise<{ status: number; text: string }[]> {
    redis.pause();
    let pending: Promise<{ status: number; text: string }>[];
    try {
      pending = Array.from({ length: n }, () => postJson(`${r.url}/v1/completions`, { model: 'm', prompt: 'x' })
        .then(async (res) => ({ status: res.status, text: await res.text() })));
      await new Promise((resolve) => setTimeout(resolve, 300));
      const reloads = r.stderr().split('resources reloaded').length;
      writeFileSync(r.resourcesFile, next);
      await waitFor('the reload', () => r.stderr().split('resources reloaded').length > reloads, 10_000);
      // The worker applies the snapshot the primary sent it.
      await new Promise((resolve) => setTimeout(resolve, 300));
    } finally {
      redis.resume();
    }
    return Promise.all(pending);
  }

  it('every pod replaced: the waiting requests go to the new pods, and the removed one counts no connect failure', async () => {
    router = await startRouter(resources([{ name: 'pod-a', port: a.port }], redis.address), { workers: 1, env: ENV });
    expect((await postJson(`${router.url}/v1/completions`, { model: 'm', prompt: 'x' })).status).toBe(200);
    const results = await acrossReload(router, 4, resources([{ name: 'pod-c', port: c.port }], redis.address));
    expect(results.map((r) => r.status)).toEqual([200, 200, 200, 200]);
    expect(results.every((r) => JSON.parse(r.text).pod === 'pod-c')).toBe(true);
    const text = await (await fetch(`${router.url}/metrics`)).text();
    expect(sample(text, 'inference_router_upstream_connect_failures_total{backend_pod="pod-a",pod="pod-a"}')).toBeUndefined();
    await router.kill();
    router = undefined;
  }, 60_000);

  it('one pod removed, retry attempts 0: no waiting request is sent to it, none fails', async () => {
    const policy = '  trafficPolicy: { retry: { attempts: 0 } }\n';
    router = await startRouter(resources([{ name: 'pod-a', port: a.port }, { name: 'pod-b', port: b.port }], redis.address, policy), { workers: 1, env: ENV });
    const before = (await b.stats()).requests;
    const results = await acrossReload(router, 12, resources([{ name: 'pod-a', port: a.port }], redis.address, policy));
    expect(results.map((r) => r.status)).toEqual(Array(12).fill(200));
    expect(results.every((r) => JSON.parse(r.text).pod === 'pod-a')).toBe(true);
    expect((await b.stats()).requests).toBe(before);
    await router.kill();
    router = undefined;
  }, 60_000);
});
