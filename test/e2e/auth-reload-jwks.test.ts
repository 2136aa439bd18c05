/**
 * A hot reload of the auth file that names the same key set URI (built router, 1 worker):
 * - while the JWT issuer is down: the keys fetched before keep verifying tokens, instead of every
 *   token getting 503 until the issuer is back;
 * - while the first fetch of the key set is still on its way (a slow issuer): tokens checked on
 *   the new config wait for that fetch and pass, instead of getting 503 with no reason until the
 *   fetch cooldown is over.
 */
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { postJson, resourcesFor, startMock, startRouter, tempDir, waitFor, writeFile, type MockBackend, type Router } from '../helpers/processes.js';
import { JwksServer, makeKey, sha256Hex, signToken, type TestKey } from '../unit/auth/jwks-server.js';

const KEY_NEW = 'sk-reload-e2e-4444444444';

function authYaml(jwksUrl: string, withKey: boolean, cooldown: string): string {
  return `${withKey ? `apiKeys:\n  - name: newcomer\n    sha256: "${sha256Hex(KEY_NEW)}"\n` : ''}jwt:
  issuer: https://issuer.test
  audiences: [inference-router]
  jwksUri: ${jwksUrl}
${cooldown}`;
}

describe('auth file reloaded with the same key set URI (built router, 1 worker)', () => {
  let mock: MockBackend | undefined;
  let router: Router;
  let jwks: JwksServer | undefined;
  let key: TestKey;
  let authFile: string;

  /** The router with the auth file (no API key yet); `cooldown`: a jwksCooldownSeconds line, or ''. */
  async function start(cooldown: string): Promise<void> {
    [mock, jwks, key] = await Promise.all([startMock('pod-a'), new JwksServer().start(), makeKey('k1')]);
    jwks.keys = [key.jwk];
    const dir = tempDir();
    authFile = join(dir, 'auth.yaml');
    writeFile(authFile, authYaml(jwks.url, false, cooldown));
    router = await startRouter(resourcesFor([{ name: 'pod-a', port: mock.port }]), { dir, workers: 1, env: { ROUTER_AUTH_CONFIG: authFile } });
  }
  afterEach(async () => {
    await router?.kill();
    await mock?.kill();
    await jwks?.stop();
  });

  async function answer(authorization: string): Promise<{ status: number; body: string }> {
    const r = await postJson(`${router.url}/v1/completions`, { model: 'sf-model', prompt: 'hi' }, { authorization });
    return { status: r.status, body: await r.text() };
  }

  it('while the issuer is down: keeps verifying tokens with the keys fetched before the reload', async () => {
    const cooldown = '  jwksCooldownSeconds: 0\n';
    await start(cooldown);
    expect((await answer(`Bearer ${await signToken(key, { subject: 'before' })}`)).status).toBe(200);
    expect(jwks!.fetches).toBe(1);
    jwks!.status = 503;
    writeFile(authFile, authYaml(jwks!.url, true, cooldown));
    await waitFor('the reloaded file (its new API key) to be in use', async () => (await answer(`Bearer ${KEY_NEW}`)).status === 200);
    // A token the router has not verified before: checked with the keys kept over the reload.
    expect((await answer(`Bearer ${await signToken(key, { subject: 'after' })}`)).status).toBe(200);
    expect(router.stderr()).not.toMatch(/fetching the key set/);
  });

  it('while the first fetch is under way: tokens on the new config wait for it and pass', async () => {
    await start('');
    jwks!.delayMs = 3000; // the issuer answers slowly: the reload lands meanwhile
    const first = answer(`Bearer ${await signToken(key, { subject: 'first' })}`);
    await waitFor('the key set fetch to start', () => jwks!.fetches === 1);
    writeFile(authFile, authYaml(jwks!.url, true, ''));
    await waitFor('the reloaded file (its new API key) to be in use', async () => (await answer(`Bearer ${KEY_NEW}`)).status === 200);
    const second = await answer(`Bearer ${await signToken(key, { subject: 'second' })}`);
    expect(second).toMatchObject({ status: 200 });
    expect((await first).status).toBe(200);
    expect(jwks!.fetches).toBe(1);
  });
});
