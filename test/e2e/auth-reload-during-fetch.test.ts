/**
 * A hot reload of the auth file that lands while the first fetch of the issuer's key set is still
 * on its way (built router, slow issuer): the reload names the same key set URI, so tokens checked
 * on the new config wait for that fetch and pass, instead of getting 503 with no reason until the
 * fetch cooldown is over.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postJson, resourcesFor, startMock, startRouter, tempDir, waitFor, writeFile, type MockBackend, type Router } from '../helpers/processes.js';
import { JwksServer, makeKey, sha256Hex, signToken, type TestKey } from '../unit/auth/jwks-server.js';

const KEY_NEW = 'sk-reload-fetch-e2e-5555555555';

function authYaml(jwksUrl: string, withKey: boolean): string {
  return `${withKey ? `apiKeys:\n  - name: newcomer\n    sha256: "${sha256Hex(KEY_NEW)}"\n` : ''}jwt:
  issuer: https://issuer.test
  audiences: [inference-router]
  jwksUri: ${jwksUrl}
`;
}

describe('auth file reloaded while the key set is being fetched (built router, 1 worker)', () => {
  let mock: MockBackend;
  let router: Router;
  let jwks: JwksServer;
  let key: TestKey;
  let authFile: string;

  beforeAll(async () => {
    [mock, jwks, key] = await Promise.all([startMock('pod-a'), new JwksServer().start(), makeKey('k1')]);
    jwks.keys = [key.jwk];
    const dir = tempDir();
    authFile = join(dir, 'auth.yaml');
    writeFile(authFile, authYaml(jwks.url, false));
    router = await startRouter(resourcesFor([{ name: 'pod-a', port: mock.port }]), { dir, workers: 1, env: { ROUTER_AUTH_CONFIG: authFile } });
  });
  afterAll(async () => {
    await router?.kill();
    await mock?.kill();
    await jwks?.stop();
  });

  async function answer(authorization: string): Promise<{ status: number; body: string }> {
    const r = await postJson(`${router.url}/v1/completions`, { model: 'sf-model', prompt: 'hi' }, { authorization });
    return { status: r.status, body: await r.text() };
  }

  it('tokens on the new config wait for the fetch under way and pass', async () => {
    jwks.delayMs = 3000; // the issuer answers slowly: the reload lands meanwhile
    const first = answer(`Bearer ${await signToken(key, { subject: 'first' })}`);
    await waitFor('the key set fetch to start', () => jwks.fetches === 1);
    writeFile(authFile, authYaml(jwks.url, true));
    await waitFor('the reloaded file (its new API key) to be in use', async () => (await answer(`Bearer ${KEY_NEW}`)).status === 200);
    const second = await answer(`Bearer ${await signToken(key, { subject: 'second' })}`);
    expect(second).toMatchObject({ status: 200 });
    expect((await first).status).toBe(200);
    expect(jwks.fetches).toBe(1);
  });
});
