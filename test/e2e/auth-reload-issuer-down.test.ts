/**
 * A hot reload of the auth file while the JWT issuer is down (built router): the reload names the
 * same key set URI, so the keys fetched before keep verifying tokens instead of every token
 * getting 503 until the issuer is back.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postJson, resourcesFor, startMock, startRouter, tempDir, waitFor, writeFile, type MockBackend, type Router } from '../helpers/processes.js';
import { JwksServer, makeKey, sha256Hex, signToken, type TestKey } from '../unit/auth/jwks-server.js';

const KEY_NEW = 'sk-reload-e2e-4444444444';

function authYaml(jwksUrl: string, withKey: boolean): string {
  return `${withKey ? `apiKeys:\n  - name: newcomer\n    sha256: "${sha256Hex(KEY_NEW)}"\n` : ''}jwt:
  issuer: https://issuer.test
  audiences: [inference-router]
  jwksUri: ${jwksUrl}
  jwksCooldownSeconds: 0
`;
}

describe('auth file reloaded while the issuer is down (built router, 1 worker)', () => {
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

  async function status(authorization: string): Promise<number> {
    const r = await postJson(`${router.url}/v1/completions`, { model: 'sf-model', prompt: 'hi' }, { authorization });
    await r.text();
    return r.status;
  }

  it('keeps verifying tokens with the keys fetched before the reload', async () => {
    expect(await status(`Bearer ${await signToken(key, { subject: 'before' })}`)).toBe(200);
    expect(jwks.fetches).toBe(1);
    jwks.status = 503;
    writeFile(authFile, authYaml(jwks.url, true));
    await waitFor('the reloaded file (its new API key) to be in use', async () => (await status(`Bearer ${KEY_NEW}`)) === 200);
    // A token the router has not verified before: checked with the keys kept over the reload.
    expect(await status(`Bearer ${await signToken(key, { subject: 'after' })}`)).toBe(200);
    expect(router.stderr()).not.toMatch(/fetching the key set/);
  });
});
