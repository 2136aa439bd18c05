import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postJson, resourcesFor, startMock, startRouter, tempDir, writeFile, type MockBackend, type Router } from '../helpers/processes.js';
import { JwksServer, makeKey, signToken } from '../unit/auth/jwks-server.js';

const WORKERS = 2;

describe('JWKS endpoint down from the start (built router, 2 workers)', () => {
  let mock: MockBackend;
  let router: Router;
  let jwks: JwksServer;

  beforeAll(async () => {
    [mock, jwks] = await Promise.all([startMock('pod-a'), new JwksServer().start()]);
    jwks.status = 500; // never serves a key set
    const dir = tempDir();
    const authFile = join(dir, 'auth.yaml');
    writeFile(authFile, `jwt:
  issuer: https://issuer.test
  audiences: [inference-router]
  jwksUri: ${jwks.url}
  jwksCooldownSeconds: 600
`);
    router = await startRouter(resourcesFor([{ name: 'pod-a', port: mock.port }]), { dir, workers: WORKERS, env: { ROUTER_AUTH_CONFIG: authFile } });
  });
  afterAll(async () => {
    await router?.kill();
    await mock?.kill();
    await jwks?.stop();
  });

  it('fetches at most once per worker within the cooldown, answers 503 with the cached error, logs each failure once', async () => {
    const key = await makeKey('k1');
    const token = await signToken(key);
    const statuses: number[] = [];
    const bodies = new Set<string>();
    for (let i = 0; i < 10; i++) {
      const batch = await Promise.all(Array.from({ length: 10 }, () => postJson(`${router.url}/v1/completions`, { model: 'sf-model', prompt: 'hi' }, { authorization: `Bearer ${token}` })));
      for (const r of batch) {
        statuses.push(r.status);
        bodies.add(await r.text());
        expect(r.headers.get('retry-after')).toBe('1');
      }
    }
    expect(statuses).toEqual(Array(100).fill(503));
    expect([...bodies].every((b) => b.includes(jwks.url) && b.includes('HTTP 500'))).toBe(true);
    expect(jwks.fetches).toBeGreaterThanOrEqual(1);
    expect(jwks.fetches).toBeLessThanOrEqual(WORKERS);
    const failureLines = router.stderr().split('\n').filter((l) => l.includes('fetching the key set'));
    expect(failureLines.length).toBe(jwks.fetches);
    expect((await mock.stats()).requests).toBe(0);
  });
});
