import { readFileSync, existsSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postJson, resourcesFor, startLoggedRouter, startMock, tempDir, waitFor, writeFile, type LoggedRouter, type MockBackend } from '../helpers/processes.js';
import { JwksServer, makeKey, sha256Hex, signToken, type TestKey } from '../unit/auth/jwks-server.js';
import { modelRouteYaml } from '../helpers/resource-yaml.js';

const KEY_A = 'sk-team-a-e2e-0123456789';
const KEY_OPS = 'sk-ops-e2e-9876543210';
const KEY_NEW = 'sk-new-e2e-5555555555';
const CT = 'text/plain; charset=utf-8';

function authYaml(jwksUrl: string, extraKeys = ''): string {
  return `apiKeys:
  - name: team-a
    sha256: "${sha256Hex(KEY_A)}"
    models: ["sf-model", "llama-*"]
  - name: ops
    sha256: "${sha256Hex(KEY_OPS)}"
${extraKeys}jwt:
  issuer: https://issuer.test
  audiences: [inference-router]
  jwksUri: ${jwksUrl}
  modelsClaim: models
  jwksCooldownSeconds: 0
`;
}

describe('authentication and authorization over the built router (2 workers)', () => {
  let mock: MockBackend;
  let router: LoggedRouter;
  let jwks: JwksServer;
  let k1: TestKey;
  let k2: TestKey;
  let rogue: TestKey;
  let authFile: string;
  const credentials: string[] = [KEY_A, KEY_OPS, KEY_NEW];
  /** Answers seen by status, to match against the access log. */
  const seen = new Map<number, number>();

  beforeAll(async () => {
    [mock, jwks, [k1, k2, rogue]] = await Promise.all([
      startMock('pod-a'),
      new JwksServer().start(),
      Promise.all([makeKey('k1'), makeKey('k2', 'RS256'), makeKey('k1')]),
    ]);
    jwks.keys = [k1.jwk];
    const dir = tempDir();
    authFile = join(dir, 'auth.yaml');
    writeFile(authFile, authYaml(jwks.url));
    router = await startLoggedRouter(
      resourcesFor([{ name: 'pod-a', port: mock.port }], { extraRoutes: modelRouteYaml('llama-route', 'llama-3-8b', 'sf-server') + modelRouteYaml('gpt-route', 'gpt-x', 'sf-server') }),
      { dir, workers: 2, env: { ROUTER_AUTH_CONFIG: authFile } },
    );
  });
  afterAll(async () => {
    await router?.kill();
    await mock?.kill();
    await jwks?.stop();
  });

  async function call(model: string, authorization: string | null): Promise<Response> {
    if (authorization !== null) {
      const token = authorization.replace(/^\S+\s*/, '');
      if (token.length > 0) credentials.push(token);
    }
    const r = await postJson(`${router.url}/v1/completions`, { model, prompt: 'hello there' }, authorization === null ? {} : { authorization });
    seen.set(r.status, (seen.get(r.status) ?? 0) + 1);
    return r;
  }

  async function expectDenied(r: Response, status: 401 | 403, message: RegExp): Promise<void> {
    expect(r.status).toBe(status);
    expect(r.headers.get('content-type')).toBe(CT);
    if (status === 401) expect(r.headers.get('www-authenticate')).toMatch(/^Bearer/);
    else expect(r.headers.get('www-authenticate')).toBeNull();
    expect(await r.text()).toMatch(message);
  }

  it('401 for missing, malformed and unknown credentials; nothing reaches the backend', async () => {
    const before = (await mock.stats()).requests;
    await expectDenied(await call('sf-model', null), 401, /^missing credentials/);
    await expectDenied(await call('sf-model', `Basic ${Buffer.from('u:p').toString('base64')}`), 401, /^malformed Authorization header/);
    await expectDenied(await call('sf-model', 'Bearer'), 401, /^malformed Authorization header/);
    await expectDenied(await call('sf-model', 'Bearer sk-not-a-key-000'), 401, /^invalid credentials: unknown API key$/);
    expect((await mock.stats()).requests).toBe(before);
  });

  it('an Authorization header sent twice is 401 whichever comes first, never the valid one picked', async () => {
    const before = (await mock.stats()).requests;
    const body = JSON.stringify({ model: 'sf-model', prompt: 'hello there' });
    for (const [first, second] of [[`Bearer ${KEY_A}`, 'Bearer sk-bogus-000'], ['Bearer sk-bogus-000', `Bearer ${KEY_A}`], [`Bearer ${KEY_A}`, `Bearer ${KEY_A}`]]) {
      const answer = await rawExchange(router.port,
        `POST /v1/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\nauthorization: ${first}\r\n` +
        `authorization: ${second}\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`);
      expect(answer).toMatch(/^HTTP\/1\.1 401 /);
      expect(answer).toContain('more than one Authorization header');
      seen.set(401, (seen.get(401) ?? 0) + 1);
    }
    // An empty first one (or blank) does not let the second stand alone: a proxy in front reads the first.
    for (const first of ['', '   ']) {
      const answer = await rawExchange(router.port,
        `POST /v1/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\nauthorization:${first}\r\n` +
        `authorization: Bearer ${KEY_A}\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`);
      expect(answer, JSON.stringify(first)).toMatch(/^HTTP\/1\.1 401 /);
      seen.set(401, (seen.get(401) ?? 0) + 1);
    }
    expect((await mock.stats()).requests).toBe(before);
  });

  it('API keys: allowed models and globs pass, the Authorization header does not reach the backend; others get 403', async () => {
    for (const model of ['sf-model', 'llama-3-8b']) {
      const r = await call(model, `Bearer ${KEY_A}`);
      expect(r.status).toBe(200);
      await r.text();
      const headers = (await mock.stats()).lastHeaders;
      expect(headers.authorization).toBeUndefined();
      expect(JSON.stringify(headers)).not.toContain(KEY_A);
    }
    await expectDenied(await call('gpt-x', `Bearer ${KEY_A}`), 403, /^API key "team-a" may not use model "gpt-x"$/);
    const ops = await call('gpt-x', `Bearer ${KEY_OPS}`);
    expect(ops.status).toBe(200);
    await ops.text();
  });

  it('JWT: valid tokens pass within their models claim; invalid ones get 401, other models 403', async () => {
    const good = await signToken(k1, { claims: { models: ['sf-*'] } });
    const r = await call('sf-model', `Bearer ${good}`);
    expect(r.status).toBe(200);
    await r.text();
    expect((await mock.stats()).lastHeaders.authorization).toBeUndefined();
    await expectDenied(await call('gpt-x', `Bearer ${good}`), 403, /^token subject "alice" may not use model "gpt-x"$/);

    const claims = { models: ['*'] };
    await expectDenied(await call('sf-model', `Bearer ${await signToken(rogue, { claims })}`), 401, /^invalid token: bad signature$/);
    await expectDenied(await call('sf-model', `Bearer ${await signToken(k1, { claims, issuer: 'https://evil.test' })}`), 401, /^invalid token: issuer not accepted$/);
    await expectDenied(await call('sf-model', `Bearer ${await signToken(k1, { claims, audience: 'other' })}`), 401, /^invalid token: audience not accepted$/);
    await expectDenied(await call('sf-model', `Bearer ${await signToken(k1, { claims, expiresIn: -60 })}`), 401, /^invalid token: expired$/);
    await expectDenied(await call('sf-model', `Bearer ${await signToken(k1, { claims, notBefore: 600 })}`), 401, /^invalid token: not valid yet \(nbf\)$/);
  });

  it('key rotation: a token signed by a newly published key passes after one refetch', async () => {
    const fetchesBefore = jwks.fetches;
    jwks.keys = [k1.jwk, k2.jwk];
    const t2 = await signToken(k2, { claims: { models: ['*'] } });
    for (let i = 0; i < 4; i++) {
      const r = await call('gpt-x', `Bearer ${t2}`);
      expect(r.status).toBe(200);
      await r.text();
    }
    // At most one refetch per worker (2 workers, each with its own cache).
    expect(jwks.fetches - fetchesBefore).toBeGreaterThanOrEqual(1);
    expect(jwks.fetches - fetchesBefore).toBeLessThanOrEqual(2);
  });

  it('key rotation under load: tokens of a new key arriving while its refetch is under way all pass', async () => {
    const k3 = await makeKey('k3');
    jwks.keys = [k1.jwk, k2.jwk, k3.jwk];
    jwks.delayMs = 300;
    try {
      const tokens = await Promise.all(Array.from({ length: 12 }, (_, i) => signToken(k3, { subject: `rotated-${i}`, claims: { models: ['*'] } })));
      const statuses = await Promise.all(tokens.map(async (t) => {
        const r = await call('sf-model', `Bearer ${t}`);
        await r.text();
        return r.status;
      }));
      expect(statuses).toEqual(Array(12).fill(200));
    } finally {
      jwks.delayMs = 0;
    }
  });

  it('hot reload: a new key works once the file changes; an invalid file keeps the last good config', async () => {
    writeFile(authFile, authYaml(jwks.url, `  - name: newcomer\n    sha256: "${sha256Hex(KEY_NEW)}"\n`));
    await waitFor('the new key to be accepted', async () => {
      const statuses = await Promise.all([0, 1, 2, 3].map(async () => {
        const r = await call('sf-model', `Bearer ${KEY_NEW}`);
        await r.text();
        return r.status;
      }));
      return statuses.every((s) => s === 200);
    });
    writeFile(authFile, 'apiKeys: [{ name: broken }]\n');
    await waitFor('the rejected reload to be logged', () => /auth reload rejected/.test(router.stderr()));
    expect(router.stderr()).toMatch(/auth\.yaml: apiKeys\[0\]\.sha256/);
    const r = await call('sf-model', `Bearer ${KEY_NEW}`);
    expect(r.status).toBe(200);
    await r.text();
  });

  it('access log: each denial recorded with its error type, no credential anywhere in the log or stderr', async () => {
    const records = await waitFor('access log records', () => {
      const recs = existsSync(router.logFile) ? readFileSync(router.logFile, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l)) : [];
      const n = (status: number) => recs.filter((r: any) => r.status_code === status).length;
      return n(401) >= seen.get(401)! && n(403) >= seen.get(403)! && n(200) >= seen.get(200)! ? recs : null;
    });
    const byType = (t: string) => records.filter((r: any) => r.error?.type === t);
    // 9 denials made on purpose, plus those of the hot-reload test before the new key was loaded.
    expect(seen.get(401)).toBeGreaterThanOrEqual(9);
    expect(byType('authentication_failed').length).toBe(seen.get(401));
    for (const r of byType('authentication_failed')) expect(r.status_code).toBe(401);
    expect(byType('authorization_failed').length).toBe(2);
    for (const r of byType('authorization_failed')) {
      expect(r.status_code).toBe(403);
      expect(r.model_name).toBe('gpt-x');
    }
    expect(records.filter((r: any) => r.status_code === 200).length).toBe(seen.get(200));
    expect(seen.get(200)).toBeGreaterThanOrEqual(13);
    const log = readFileSync(router.logFile, 'utf8') + router.stderr() + router.stdout();
    for (const c of credentials) expect(log).not.toContain(c);
  });
});

/** Sends `text` on a new connection and returns all that comes back until the router closes it. */
function rawExchange(port: number, text: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const sock = connect(port, '127.0.0.1', () => sock.write(text));
    let got = '';
    sock.setEncoding('latin1');
    sock.on('data', (d: string) => { got += d; });
    sock.on('end', () => resolve(got));
    sock.on('error', reject);
  });
}
