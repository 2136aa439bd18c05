/**
 * Tokens without a `kid` (RFC 7515 makes it optional) from an issuer whose key set holds several
 * keys of the same type, as during a key rotation (built router, remote key set): the router tries
 * each key that fits the token's algorithm, so valid tokens pass and others still get 401.
 */
import { join } from 'node:path';
import { SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postJson, resourcesFor, startMock, startRouter, tempDir, writeFile, type MockBackend, type Router } from '../helpers/processes.js';
import { JwksServer, makeKey, type TestKey } from '../unit/auth/jwks-server.js';

describe('JWT without kid, several keys in the set (built router, 1 worker)', () => {
  let mock: MockBackend;
  let router: Router;
  let jwks: JwksServer;
  let keys: TestKey[];

  beforeAll(async () => {
    [mock, jwks, keys] = await Promise.all([
      startMock('pod-a'), new JwksServer().start(),
      Promise.all([makeKey('old', 'RS256'), makeKey('new', 'RS256'), makeKey('es', 'ES256'), makeKey('rogue', 'RS256')]),
    ]);
    // The issuer publishes its keys without kid (nothing to match a token's kid against either).
    jwks.keys = keys.slice(0, 3).map(({ jwk }) => ({ ...jwk, kid: undefined }));
    const dir = tempDir();
    const authFile = join(dir, 'auth.yaml');
    writeFile(authFile, `jwt:\n  issuer: https://issuer.test\n  audiences: [inference-router]\n  jwksUri: ${jwks.url}\n  tenantClaim: sub\n`);
    router = await startRouter(resourcesFor([{ name: 'pod-a', port: mock.port }]), { dir, workers: 1, env: { ROUTER_AUTH_CONFIG: authFile } });
  });
  afterAll(async () => {
    await router?.kill();
    await mock?.kill();
    await jwks?.stop();
  });

  async function withToken(key: TestKey, issuer = 'https://issuer.test'): Promise<{ status: number; body: string }> {
    const now = Math.floor(Date.now() / 1000);
    const token = await new SignJWT({ sub: `user-of-${key.kid}` })
      .setProtectedHeader({ alg: key.jwk.alg as string }) // no kid
      .setIssuer(issuer).setAudience('inference-router').setIssuedAt(now).setExpirationTime(now + 300)
      .sign(key.privateKey);
    const r = await postJson(`${router.url}/v1/completions`, { model: 'sf-model', prompt: 'hi' }, { authorization: `Bearer ${token}` });
    return { status: r.status, body: await r.text() };
  }

  it('a token of either RSA key passes; one of a key not in the set, or with bad claims, is refused', async () => {
    expect(await withToken(keys[0])).toMatchObject({ status: 200 });
    expect(await withToken(keys[1])).toMatchObject({ status: 200 });
    expect(await withToken(keys[2])).toMatchObject({ status: 200 });
    expect(await withToken(keys[3])).toEqual({ status: 401, body: 'invalid token: bad signature' });
    expect(await withToken(keys[1], 'https://other.test')).toEqual({ status: 401, body: 'invalid token: issuer not accepted' });
    expect(jwks.fetches).toBe(1);
  });
});
