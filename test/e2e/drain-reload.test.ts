import { writeFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postFresh, resourcesFor, startMock, startRouter, waitFor, type MockBackend } from '../helpers/processes.js';

/**
 * A rolling update of the model servers that overlaps the router's own: a pod leaves the
 * ModelServer while the router drains. The router serves new requests during ROUTER_DRAIN_DELAY
 * (and requests on kept-alive connections until it exits), so it goes on following the resources
 * until then, and does not send those requests to the pod that left.
 */
describe('resources changed while the router drains, real processes', () => {
  let leaving: MockBackend;
  let staying: MockBackend;
  beforeAll(async () => {
    [leaving, staying] = await Promise.all([startMock('pod-leaving'), startMock('pod-staying')]);
  });
  afterAll(async () => {
    await Promise.all([leaving?.kill(), staying?.kill()]);
  });

  it('a pod removed during the drain delay gets no more requests; the new pod gets them', async () => {
    const router = await startRouter(resourcesFor([{ name: 'pod-leaving', port: leaving.port }]), { workers: 1, env: { ROUTER_DRAIN_DELAY: '4s' } });
    try {
      router.child.kill('SIGTERM');
      await waitFor('/readyz to answer 503', async () => (await fetch(`${router.url}/readyz`)).status === 503, 5000);
      // The pod is deleted: it leaves the ModelServer and stops.
      await leaving.kill();
      const reloads = router.stderr().split('resources reloaded').length;
      writeFileSync(router.resourcesFile, resourcesFor([{ name: 'pod-staying', port: staying.port }]));
      await waitFor('the reload', () => router.stderr().split('resources reloaded').length > reloads, 3000);
      const during = await postFresh(`${router.url}/v1/completions`, { model: 'sf-model', prompt: 'during the drain' });
      expect([during.status, during.headers['x-mock-pod']]).toEqual([200, 'pod-staying']);
      expect(await router.exited).toBe(0);
    } finally {
      await router.kill();
    }
  });
});
