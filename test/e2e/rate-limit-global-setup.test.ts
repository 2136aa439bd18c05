import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeFileSync } from 'node:fs';
import { postFresh, resourcesFor, startMock, startRouter, waitWhileRunning, type MockBackend } from '../helpers/processes.js';

// Global-limit set-ups an operator can get wrong, and what the router says of each.

function globalLimit(address: string): string {
  return `    inputTokensPerUnit: 1000\n    unit: minute\n    global:\n      redis:\n        address: "${address}"`;
}

describe('a Redis address the limiter cannot use is refused with the resources, not by crashing workers', () => {
  let mock: MockBackend;
  beforeAll(async () => {
    mock = await startMock('pod-a');
  });
  afterAll(async () => {
    await mock?.kill();
  });

  // Before, these passed validation, and every worker threw creating the limiter, exited, was
  // restarted and threw again: a router that never became ready (or, on a reload, lost its workers).
  it('several nodes without REDIS_CLUSTER=true, and a database above 99: exit 2 at start naming the field and the fix', async () => {
    for (const [address, problem] of [
      ['127.0.0.1:6390,127.0.0.1:6391', "names several nodes (Redis Cluster seed nodes); that needs REDIS_CLUSTER=true in the router's environment"],
      ['redis://127.0.0.1:6390/150', 'database number must be 0-99, got 150'],
    ]) {
      const res = resourcesFor([{ name: 'pod-a', port: mock.port }], { rateLimit: globalLimit(address) });
      const err = await startRouter(res, { workers: 1 }).then(() => null, (e: Error) => e);
      expect(err?.message, address).toMatch(/^router exited 2: /);
      expect(err!.message).toContain(`(ModelRoute default/sf-route): spec.rateLimit.global.redis.address: ${problem}`);
      expect(err!.message).not.toContain('crash');
    }
  });

  it('a database other than 0 with REDIS_CLUSTER=true: exit 2 at start', async () => {
    const res = resourcesFor([{ name: 'pod-a', port: mock.port }], { rateLimit: globalLimit('redis://127.0.0.1:6390/1') });
    const err = await startRouter(res, { workers: 1, env: { REDIS_CLUSTER: 'true' } }).then(() => null, (e: Error) => e);
    expect(err?.message).toContain('spec.rateLimit.global.redis.address: Redis Cluster has only database 0 (REDIS_CLUSTER=true), got database 1');
  });

  it('a reload naming several nodes without REDIS_CLUSTER=true is refused; the router keeps serving with its workers', async () => {
    const router = await startRouter(resourcesFor([{ name: 'pod-a', port: mock.port }]), { workers: 1 });
    try {
      writeFileSync(router.resourcesFile, resourcesFor([{ name: 'pod-a', port: mock.port }], { rateLimit: globalLimit('127.0.0.1:6390,127.0.0.1:6391') }));
      await waitWhileRunning('the reload refused', router, () => router.stderr().includes('names several nodes'));
      const r = await postFresh(`${router.url}/v1/completions`, { model: 'sf-model', prompt: 'San Francisco is a' });
      expect(r.status).toBe(200);
      expect(router.stderr()).not.toMatch(/crash|worker restarted/);
    } finally {
      await router.kill();
    }
  });
});
