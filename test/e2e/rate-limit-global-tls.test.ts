/**
 * Global limits over TLS with the built router: a redis-server listening with TLS only, its
 * certificate signed by a throwaway CA. The router trusts the CA through REDIS_TLS_CA_FILE or
 * through Node's NODE_EXTRA_CA_CERTS; a CA file it cannot use stops it at start.
 */
import { spawnSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { awayFromMinuteBoundary, CLI, postFresh, resourcesFor, startMock, startRouter, tempDir, type MockBackend } from '../helpers/processes.js';
import { RedisServer } from '../helpers/redis-server.js';
import { createTestCa, type TestCa } from '../helpers/test-ca.js';

function globalLimit(address: string): string {
  return `    inputTokensPerUnit: 10\n    outputTokensPerUnit: 5000\n    unit: minute\n    global:\n      redis:\n        address: "${address}"`;
}

describe('global token limits on a TLS-only Redis', () => {
  let ca: TestCa;
  let mock: MockBackend;
  let redis: RedisServer;
  beforeAll(async () => {
    ca = await createTestCa();
    [mock, redis] = await Promise.all([startMock('pod-a'), RedisServer.start({ tls: ca })]);
  });
  afterAll(async () => {
    await Promise.all([mock?.kill(), redis?.stop()]);
    ca?.remove();
  });

  // `closed` mode: a connection that fails answers 503, so the documented 200, 200, 429 can only
  // come from the TLS Redis.
  const cases: { name: string; address: () => string; env: () => NodeJS.ProcessEnv }[] = [
    { name: 'rediss:// address, REDIS_TLS_CA_FILE', address: () => `rediss://${redis.address}`, env: () => ({ REDIS_TLS_CA_FILE: ca.caFile }) },
    { name: 'REDIS_TLS=true, host:port address, NODE_EXTRA_CA_CERTS', address: () => redis.address, env: () => ({ REDIS_TLS: 'true', NODE_EXTRA_CA_CERTS: ca.caFile }) },
  ];
  for (const c of cases) {
    it(`${c.name}: the documented example, decided by Redis`, async () => {
      await redis.cli('FLUSHALL');
      const res = resourcesFor([{ name: 'pod-a', port: mock.port }], { rateLimit: globalLimit(c.address()) });
      const env = { RATE_LIMIT_REDIS_FAILURE_MODE: 'closed', RATE_LIMIT_REDIS_TIMEOUT: '5s', ...c.env() };
      const router = await startRouter(res, { workers: 2, env, dir: tempDir() });
      try {
        await awayFromMinuteBoundary();
        const statuses: number[] = [];
        let last = '';
        for (let i = 0; i < 3; i++) {
          const r = await postFresh(`${router.url}/v1/completions`, { model: 'sf-model', prompt: 'San Francisco is a' });
          statuses.push(r.status);
          last = r.text;
        }
        expect(statuses, router.stderr()).toEqual([200, 200, 429]);
        expect(last).toBe('input token rate limit exceeded');
        const keys = (await redis.cli('--scan', '--pattern', 'ir:*')).split('\n').filter(Boolean);
        expect(keys.some((k) => k.startsWith('ir:{default/sf-route}:in:minute:')), keys.join(' ')).toBe(true);
      } finally {
        await router.kill();
      }
    });
  }

  it('a REDIS_TLS_CA_FILE that cannot be read stops the router at start with exit 2, naming the variable', () => {
    const r = spawnSync(process.execPath, [CLI, '--resources', 'x.yaml', '--workers', '1'], {
      encoding: 'utf8', timeout: 20_000, env: { ...process.env, REDIS_TLS_CA_FILE: `${ca.dir}/missing.pem` },
    });
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('REDIS_TLS_CA_FILE');
    expect(r.stderr).toContain('missing.pem');
  });
});
