import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postFresh, postJson, resourcesFor, startMock, startRouter, waitFor, type MockBackend } from '../helpers/processes.js';

describe('ROUTER_DRAIN_DELAY', () => {
  let slow: MockBackend;
  beforeAll(async () => {
    slow = await startMock('pod-slow', ['--latency-ms', '300']);
  });
  afterAll(async () => {
    await slow?.kill();
  });

  it('on SIGTERM /readyz answers 503 while in-flight and new requests are still served, then the router exits 0', async () => {
    // Long enough for the checks below to happen inside it on a busy machine; the test waits
    // for events, not for the delay.
    const router = await startRouter(resourcesFor([{ name: 'pod-slow', port: slow.port }]), { workers: 1, env: { ROUTER_DRAIN_DELAY: '4s' } });
    const inflight = postJson(`${router.url}/v1/completions`, { model: 'sf-model', prompt: 'in flight' });
    await waitFor('the request to reach the backend', async () => (await slow.stats()).requests >= 1, 5000);
    router.child.kill('SIGTERM');
    const ready = await waitFor('/readyz to answer 503', async () => {
      const r = await fetch(`${router.url}/readyz`);
      return r.status === 503 ? r.text() : null;
    }, 5000);
    expect(ready).toBe('draining\n');
    // The listener is still open: a new connection is accepted and answered.
    const fresh = await postFresh(`${router.url}/v1/completions`, { model: 'sf-model', prompt: 'new' });
    expect(fresh.status).toBe(200);
    expect((await inflight).status).toBe(200);
    expect(await router.exited).toBe(0);
    expect(router.stderr()).toMatch(/drain: draining: readiness off, \/readyz answers 503 for 4000 ms/);
    await expect(fetch(`${router.url}/healthz`)).rejects.toThrow();
  });
});
