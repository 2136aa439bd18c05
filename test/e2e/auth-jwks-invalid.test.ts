/**
 * The issuer serves a key set jose refuses (a member that is no JWK object) on a background
 * refresh (built router, real processes): a failed fetch like any other, logged, the last good
 * keys kept. It must not end the worker (an unhandled rejection), cutting its requests and, at
 * every refresh, restarting it until the crash guard stops the router.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postJson, resourcesFor, startMock, startRouter, tempDir, waitFor, writeFile, type MockBackend, type Router, childPids } from '../helpers/processes.js';
import { JwksServer, makeKey, signToken, type TestKey } from '../unit/auth/jwks-server.js';

describe('an invalid key set from the issuer on a refresh (built router, 1 worker)', () => {
  let mock: MockBackend;
  let router: Router;
  let jwks: JwksServer;
  let key: TestKey;

  beforeAll(async () => {
    [mock, jwks, key] = await Promise.all([startMock('pod-a'), new JwksServer().start(), makeKey('k1')]);
    jwks.keys = [key.jwk];
    const dir = tempDir();
    const authFile = join(dir, 'auth.yaml');
    writeFile(authFile, `jwt:
  issuer: https://issuer.test
  audiences: [inference-router]
  jwksUri: ${jwks.url}
  jwksMaxAgeSeconds: 1
  jwksCooldownSeconds: 0
`);
    router = await startRouter(resourcesFor([{ name: 'pod-a', port: mock.port }]), { dir, workers: 1, env: { ROUTER_AUTH_CONFIG: authFile } });
  });
  afterAll(async () => {
    await router?.kill();
    await mock?.kill();
    await jwks?.stop();
  });

  async function status(subject: string): Promise<number> {
    const r = await postJson(`${router.url}/v1/completions`, { model: 'sf-model', prompt: 'hi' }, { authorization: `Bearer ${await signToken(key, { subject })}` });
    await r.text();
    return r.status;
  }

  it('keeps the worker and the last good keys, and logs the failed fetch', async () => {
    expect(await status('first')).toBe(200);
    const worker = childPids(router.pid);
    expect(worker.length).toBe(1);
    jwks.keys = [key.jwk, null] as unknown as typeof jwks.keys;
    const fetches = jwks.fetches;
    await new Promise((r) => setTimeout(r, 1100)); // the set is older than jwksMaxAgeSeconds
    expect(await status('second')).toBe(200); // starts the background refresh
    await waitFor('the refresh to fail and be logged', () => /keeping the previous keys: the answer is not a valid key set/.test(router.stderr()));
    expect(jwks.fetches).toBeGreaterThan(fetches);
    expect(await status('third')).toBe(200);
    expect(childPids(router.pid)).toEqual(worker);
    expect(router.stderr()).not.toMatch(/exited \(code/);
  });
});
