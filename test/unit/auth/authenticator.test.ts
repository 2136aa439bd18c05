import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAuthConfig } from '../../../src/auth/auth-config.js';
import { Authenticator } from '../../../src/auth/authenticator.js';
import { RouterError } from '../../../src/errors.js';
import { JwksServer, makeKey, sha256Hex, signToken, type TestKey } from './jwks-server.js';

const KEY_A = 'sk-team-a-0123456789abcdef';
const KEY_OPS = 'sk-ops-fedcba9876543210';

/** Runs authorize and returns the subject, or the RouterError it threw (sync or async). */
async function outcome(auth: Authenticator, header: string, model: string): Promise<string | RouterError> {
  try {
    return await auth.authorize(header, model);
  } catch (err) {
    if (!(err instanceof RouterError)) throw err;
    return err;
  }
}

/** authorize's answer for token `t` on model `m`: whether it came at once (thrown, no verification), and its message or the subject admitted. */
async function answerOf(auth: Authenticator, t: string): Promise<[boolean, string]> {
  let r: Promise<string> | string;
  try {
    r = auth.authorize(`Bearer ${t}`, 'm');
  } catch (err) {
    return [true, (err as RouterError).message];
  }
  try {
    return [false, `admitted as ${await r}`];
  } catch (err) {
    return [false, (err as RouterError).message];
  }
}

async function expectFail(auth: Authenticator, header: string, model: string, status: number, message: RegExp): Promise<RouterError> {
  const r = await outcome(auth, header, model);
  expect(r).toBeInstanceOf(RouterError);
  const e = r as RouterError;
  expect(e.status).toBe(status);
  expect(e.type).toBe(status === 401 ? 'authentication_failed' : status === 403 ? 'authorization_failed' : 'upstream_error');
  expect(e.message).toMatch(message);
  if (status === 401) expect(e.headers?.['www-authenticate']).toMatch(/^Bearer/);
  // The presented credential never appears in the message.
  const token = /^\S+\s+(.+)$/.exec(header)?.[1] ?? '';
  if (token.length > 0) expect(e.message).not.toContain(token);
  return e;
}

describe('API keys', () => {
  const auth = new Authenticator(parseAuthConfig(`
apiKeys:
  - name: team-a
    sha256: "${sha256Hex(KEY_A)}"
    models: ["sf-model", "llama-*"]
  - name: ops
    sha256: "${sha256Hex(KEY_OPS).toUpperCase()}"
`, 'auth.yaml'));

  it('accepts a known key and returns its subject synchronously', () => {
    expect(auth.authorize(`Bearer ${KEY_A}`, 'sf-model')).toBe('team-a');
    expect(auth.authorize(`bearer  ${KEY_A}`, 'llama-3-70b')).toBe('team-a');
    expect(auth.authorize(`Bearer ${KEY_OPS}`, 'anything-at-all')).toBe('ops');
  });

  it('rejects a model outside the key\'s globs with 403', async () => {
    const e = await expectFail(auth, `Bearer ${KEY_A}`, 'gpt-4', 403, /^API key "team-a" may not use model "gpt-4"$/);
    expect(e.headers).toBeNull();
    await expectFail(auth, `Bearer ${KEY_A}`, 'xllama-3', 403, /may not use model/);
  });

  it('rejects missing, malformed and unknown credentials with 401', async () => {
    await expectFail(auth, '', 'sf-model', 401, /^missing credentials/);
    await expectFail(auth, `Basic ${Buffer.from(`u:${KEY_A}`).toString('base64')}`, 'sf-model', 401, /^malformed Authorization header/);
    await expectFail(auth, 'Bearer', 'sf-model', 401, /^malformed Authorization header/);
    await expectFail(auth, `Bearer ${KEY_A} extra`, 'sf-model', 401, /^malformed Authorization header/);
    await expectFail(auth, `Bearer ${KEY_A}x`, 'sf-model', 401, /^invalid credentials: unknown API key$/);
    // A JWT-shaped token with no jwt section configured is just an unknown key.
    await expectFail(auth, 'Bearer aaa.bbb.ccc', 'sf-model', 401, /^invalid credentials: unknown API key$/);
  });
});

describe('JWT with a remote key set', () => {
  let server: JwksServer;
  let k1: TestKey;
  let k2: TestKey;
  let k3: TestKey;
  let rogue: TestKey;
  let now: number;

  const config = (extra = '') => parseAuthConfig(`
apiKeys:
  - { name: ops, sha256: "${sha256Hex(KEY_OPS)}" }
jwt:
  issuer: https://issuer.test
  audiences: [inference-router, other-aud]
  jwksUri: ${server.url}
  modelsClaim: models
${extra}`, 'auth.yaml');
  const make = (extra = '') => new Authenticator(config(extra), { now: () => now });

  beforeAll(async () => {
    server = await new JwksServer().start();
    [k1, k2, k3, rogue] = await Promise.all([makeKey('k1'), makeKey('k2', 'RS256'), makeKey('k3'), makeKey('k1')]);
  });
  afterAll(async () => {
    await server.stop();
  });

  it('accepts a valid token, checks the models claim (list or space-separated string)', async () => {
    server.keys = [k1.jwk];
    now = 1_000_000;
    const auth = make();
    const list = await signToken(k1, { claims: { models: ['sf-*', 'exact-model'] } });
    expect(await auth.authorize(`Bearer ${list}`, 'sf-model')).toBe('alice');
    expect(await auth.authorize(`Bearer ${list}`, 'exact-model')).toBe('alice');
    await expectFail(auth, `Bearer ${list}`, 'llama-3', 403, /^token subject "alice" may not use model "llama-3"$/);
    const spaced = await signToken(k1, { subject: 'bob', audience: 'other-aud', claims: { models: 'llama-* mistral' } });
    expect(await auth.authorize(`Bearer ${spaced}`, 'llama-3')).toBe('bob');
    await expectFail(auth, `Bearer ${spaced}`, 'sf-model', 403, /token subject "bob" may not use/);
    const none = await signToken(k1, {});
    await expectFail(auth, `Bearer ${none}`, 'sf-model', 403, /may not use model "sf-model"/);
    expect(server.fetches).toBe(1); // one fetch served every verification
    // API keys still work next to JWTs.
    expect(auth.authorize(`Bearer ${KEY_OPS}`, 'sf-model')).toBe('ops');
  });

  it('without modelsClaim every valid token may use every model', async () => {
    server.keys = [k1.jwk];
    const auth = new Authenticator(parseAuthConfig(`
jwt: { issuer: "https://issuer.test", audiences: [inference-router], jwksUri: "${server.url}" }
`, 'auth.yaml'));
    expect(await auth.authorize(`Bearer ${await signToken(k1)}`, 'whatever')).toBe('alice');
  });

  it('rejects bad signature, wrong issuer or audience, expired and not-yet-valid tokens with 401', async () => {
    server.keys = [k1.jwk];
    const auth = make();
    const claims = { models: ['*'] };
    await expectFail(auth, `Bearer ${await signToken(rogue, { claims })}`, 'm', 401, /^invalid token: bad signature$/);
    await expectFail(auth, `Bearer ${await signToken(k1, { claims, issuer: 'https://evil.test' })}`, 'm', 401, /^invalid token: issuer not accepted$/);
    await expectFail(auth, `Bearer ${await signToken(k1, { claims, audience: 'someone-else' })}`, 'm', 401, /^invalid token: audience not accepted$/);
    await expectFail(auth, `Bearer ${await signToken(k1, { claims, expiresIn: -120 })}`, 'm', 401, /^invalid token: expired$/);
    await expectFail(auth, `Bearer ${await signToken(k1, { claims, notBefore: 120 })}`, 'm', 401, /^invalid token: not valid yet \(nbf\)$/);
    const valid = await signToken(k1, { claims });
    const [h, p] = valid.split('.');
    await expectFail(auth, `Bearer ${h}.${p}.AAAA`, 'm', 401, /^invalid token: (bad signature|malformed)$/);
    await expectFail(auth, `Bearer ${h}.e30.${valid.split('.')[2]}`, 'm', 401, /^invalid token/);
  });

  it('a token refused for good (expired, wrong issuer, malformed) is refused again from memory, at once; nbf is checked again', async () => {
    server.keys = [k1.jwk];
    let offset = 0;
    const auth = new Authenticator(config(), { now: () => now, tokenNow: () => Date.now() + offset });
    const claims = { models: ['*'] };
    const ask = (t: string): Promise<[boolean, string]> => answerOf(auth, t);
    const expired = await signToken(k1, { claims, expiresIn: -120 });
    expect(await ask(expired)).toEqual([false, 'invalid token: expired']);
    expect(await ask(expired)).toEqual([true, 'invalid token: expired']);
    const issuer = await signToken(k1, { claims, issuer: 'https://evil.test' });
    expect(await ask(issuer)).toEqual([false, 'invalid token: issuer not accepted']);
    expect(await ask(issuer)).toEqual([true, 'invalid token: issuer not accepted']);
    const [, p, sig] = (await signToken(k1, { claims })).split('.');
    const malformed = `${Buffer.from('not json').toString('base64url')}.${p}.${sig}`;
    expect(await ask(malformed)).toEqual([false, 'invalid token: malformed']);
    expect(await ask(malformed)).toEqual([true, 'invalid token: malformed']);
    // Not for good: a token not valid yet.
    const early = await signToken(k1, { claims, notBefore: 120 });
    expect(await ask(early)).toEqual([false, 'invalid token: not valid yet (nbf)']);
    offset = 180_000;
    expect(await ask(early)).toEqual([false, 'admitted as alice']);
    // A token over 8 KiB is not remembered (1,024 of them would hold megabytes): checked each time.
    const long = await signToken(k1, { claims: { models: ['*'], pad: 'x'.repeat(9000) }, expiresIn: -120 });
    expect(long.length).toBeGreaterThan(8192);
    expect(await ask(long)).toEqual([false, 'invalid token: expired']);
    expect(await ask(long)).toEqual([false, 'invalid token: expired']);
    // At most 1024 kept, the oldest first out: the expired token is verified again after 1024 others.
    for (let i = 0; i < 1024; i++) await ask(await signToken(k1, { claims, expiresIn: -120 - i }));
    expect(await ask(expired)).toEqual([false, 'invalid token: expired']);
  });

  it('a bad signature is refused from memory while its key set is current; checked again once a fetch replaces the set or it is older than jwksMaxAgeSeconds; an unknown kid is checked again', async () => {
    server.keys = [k1.jwk];
    now = 50_000_000;
    const auth = make();
    const claims = { models: ['*'] };
    const ask = (t: string): Promise<[boolean, string]> => answerOf(auth, t);
    // `rogue` has k1's kid and a key of its own: a bad signature under the published k1. The first
    // use fetches the set: a refusal found while it arrived is not remembered (no set was current).
    const rogueToken = await signToken(rogue, { claims });
    expect(await ask(rogueToken)).toEqual([false, 'invalid token: bad signature']);
    expect(await ask(rogueToken)).toEqual([false, 'invalid token: bad signature']);
    expect(await ask(rogueToken)).toEqual([true, 'invalid token: bad signature']);
    expect(await ask(rogueToken)).toEqual([true, 'invalid token: bad signature']);
    // The issuer publishes rogue's key as k1: a fetch replaces the set, and the token is checked again.
    server.keys = [rogue.jwk];
    await auth.jwks!.refresh();
    expect(await ask(rogueToken)).toEqual([false, 'admitted as alice']);
    // A token k1 signed is now the bad one; its refusal holds until the set is older than its max age (600 s).
    const k1Token = await signToken(k1, { claims, subject: 'k1-signed' });
    expect(await ask(k1Token)).toEqual([false, 'invalid token: bad signature']);
    now += 599_000;
    expect(await ask(k1Token)).toEqual([true, 'invalid token: bad signature']);
    server.keys = [k1.jwk];
    now += 2_000; // the set is due for a refresh: the token is checked again, with the set in hand, which refreshes it
    expect(await ask(k1Token)).toEqual([false, 'invalid token: bad signature']);
    await auth.jwks!.refresh(); // joins the background refresh
    expect(await ask(k1Token)).toEqual([false, 'admitted as k1-signed']);
    // An unknown kid of a remote set is checked every time (the fetch it asks for may bring its key).
    const fetches = server.fetches;
    now += 3_600_000;
    const k3Token = await signToken(k3, { claims });
    expect(await ask(k3Token)).toEqual([false, 'invalid token: no key of the issuer matches it']);
    expect(await ask(k3Token)).toEqual([false, 'invalid token: no key of the issuer matches it']);
    expect(server.fetches).toBeGreaterThan(fetches);
  });

  it('clockToleranceSeconds admits a token expired within the tolerance', async () => {
    server.keys = [k1.jwk];
    const auth = make('  clockToleranceSeconds: 300');
    expect(await auth.authorize(`Bearer ${await signToken(k1, { expiresIn: -120, claims: { models: ['*'] } })}`, 'm')).toBe('alice');
  });

  it('a token without exp passes by default and is refused with requireExpiration: true', async () => {
    server.keys = [k1.jwk];
    const claims = { models: ['*'] };
    const forever = await signToken(k1, { expiresIn: null, claims });
    expect(JSON.parse(Buffer.from(forever.split('.')[1], 'base64url').toString())).not.toHaveProperty('exp');
    expect(await make().authorize(`Bearer ${forever}`, 'm')).toBe('alice');
    const strict = make('  requireExpiration: true');
    await expectFail(strict, `Bearer ${forever}`, 'm', 401, /^invalid token: no expiry \(exp\), which jwt.requireExpiration asks for$/);
    expect(await strict.authorize(`Bearer ${await signToken(k1, { claims })}`, 'm')).toBe('alice');
  });

  it('an unknown kid triggers one refresh (key rotation), then the cooldown holds further fetches', async () => {
    server.keys = [k1.jwk];
    server.fetches = 0;
    now = 5_000_000;
    const auth = make();
    const claims = { models: ['*'] };
    expect(await auth.authorize(`Bearer ${await signToken(k1, { claims })}`, 'm')).toBe('alice');
    expect(server.fetches).toBe(1);

    // The issuer rotates to k2 right away: within the 30 s cooldown the unknown kid is refused unfetched.
    server.keys = [k2.jwk];
    const t2 = await signToken(k2, { claims });
    await expectFail(auth, `Bearer ${t2}`, 'm', 401, /^invalid token: no key of the issuer matches it$/);
    expect(server.fetches).toBe(1);

    // After the cooldown the unknown kid fetches once, and the new key verifies.
    now += 30_000;
    expect(await auth.authorize(`Bearer ${t2}`, 'm')).toBe('alice');
    expect(server.fetches).toBe(2);
    expect(await auth.authorize(`Bearer ${t2}`, 'm')).toBe('alice');
    expect(server.fetches).toBe(2);

    // A kid the issuer never published: no fetch during the cooldown.
    await expectFail(auth, `Bearer ${await signToken(k3, { claims })}`, 'm', 401, /no key of the issuer matches it/);
    expect(server.fetches).toBe(2);
  });

  it('tokens of a newly published key arriving while its refetch is under way wait for it instead of failing', async () => {
    server.keys = [k1.jwk];
    server.fetches = 0;
    now = 7_000_000;
    const auth = make();
    const claims = { models: ['*'] };
    expect(await auth.authorize(`Bearer ${await signToken(k1, { claims })}`, 'm')).toBe('alice');
    server.keys = [k1.jwk, k2.jwk];
    server.delayMs = 200; // the issuer takes its time: the other tokens arrive during the fetch
    now += 30_000;
    try {
      const tokens = await Promise.all(Array.from({ length: 10 }, (_, i) => signToken(k2, { claims, subject: `user-${i}` })));
      const all = await Promise.all(tokens.map((t) => outcome(auth, `Bearer ${t}`, 'm')));
      expect(all).toEqual(tokens.map((_, i) => `user-${i}`));
      expect(server.fetches).toBe(2);
    } finally {
      server.delayMs = 0;
    }
  });

  it('a key set jose refuses (a member that is no JWK) is a failed fetch: 503 at first, the last good keys later', async () => {
    const broken = [k1.jwk, null] as unknown as typeof server.keys;
    server.keys = broken;
    server.fetches = 0;
    now = 11_000_000;
    const logs: string[] = [];
    const claims = { models: ['*'] };
    const first = new Authenticator(config(), { now: () => now, log: (m) => logs.push(m) });
    await expectFail(first, `Bearer ${await signToken(k1, { claims })}`, 'm', 503, /is unavailable \(the answer is not a valid key set: /);

    server.keys = [k1.jwk];
    const auth = new Authenticator(config(), { now: () => now, log: (m) => logs.push(m), tokenCacheSize: 0 });
    const t = await signToken(k1, { claims });
    expect(await auth.authorize(`Bearer ${t}`, 'm')).toBe('alice');
    server.keys = broken;
    now += 601_000; // past jwksMaxAgeSeconds: a background refresh gets the broken set
    const fetches = server.fetches;
    expect(await auth.authorize(`Bearer ${t}`, 'm')).toBe('alice');
    for (let i = 0; i < 200 && !logs.some((l) => l.includes('keeping the previous keys')); i++) await new Promise((r) => setTimeout(r, 5));
    expect(server.fetches).toBe(fetches + 1);
    expect(logs.join('\n')).toMatch(/failed, keeping the previous keys: the answer is not a valid key set/);
    expect(await auth.authorize(`Bearer ${t}`, 'm')).toBe('alice');
    server.keys = [k1.jwk];
  });

  it('a key the issuer withdraws verifies until the key set is refreshed (jwksMaxAgeSeconds), not only for the token cache TTL', async () => {
    server.keys = [k1.jwk];
    server.fetches = 0;
    now = 13_000_000;
    const claims = { models: ['*'] };
    const auth = make();
    expect(await auth.authorize(`Bearer ${await signToken(k1, { claims, subject: 'a' })}`, 'm')).toBe('a');
    server.keys = [k3.jwk]; // k1 withdrawn
    now += 61_000; // past the verified-token cache's TTL, well within the set's max age (600 s)
    expect(await auth.authorize(`Bearer ${await signToken(k1, { claims, subject: 'b' })}`, 'm')).toBe('b');
    now += 600_000; // the set is old: this token is still checked with it while it is refreshed
    expect(await auth.authorize(`Bearer ${await signToken(k1, { claims, subject: 'c' })}`, 'm')).toBe('c');
    await auth.jwks!.refresh(); // joins the background refresh if it is still under way
    expect(server.fetches).toBeGreaterThanOrEqual(2);
    await expectFail(auth, `Bearer ${await signToken(k1, { claims, subject: 'd' })}`, 'm', 401, /no key of the issuer matches it/);
  });

  it('concurrent first uses share one fetch', async () => {
    server.keys = [k1.jwk];
    server.fetches = 0;
    const auth = make();
    const t = await signToken(k1, { claims: { models: ['*'] } });
    const all = await Promise.all(Array.from({ length: 20 }, () => auth.authorize(`Bearer ${t}`, 'm')));
    expect(new Set(all)).toEqual(new Set(['alice']));
    expect(server.fetches).toBe(1);
  });

  it('refreshes an old set in the background and keeps the last good keys when the issuer is down', async () => {
    server.keys = [k1.jwk];
    server.fetches = 0;
    server.status = 200;
    now = 9_000_000;
    const logs: string[] = [];
    const auth = new Authenticator(config(), { now: () => now, log: (m) => logs.push(m), tokenCacheSize: 0 });
    const t = await signToken(k1, { claims: { models: ['*'] } });
    expect(await auth.authorize(`Bearer ${t}`, 'm')).toBe('alice');
    server.status = 500;
    now += 601_000; // past jwksMaxAgeSeconds (600)
    expect(await auth.authorize(`Bearer ${t}`, 'm')).toBe('alice'); // answered from the old keys
    expect(auth.jwks!.fetches).toBe(2); // the background fetch started
    for (let i = 0; i < 200 && logs.length === 0; i++) await new Promise((r) => setTimeout(r, 5));
    expect(server.fetches).toBe(2);
    expect(logs.join('\n')).toMatch(/fetching the key set .* failed, keeping the previous keys: HTTP 500/);
    expect(await auth.authorize(`Bearer ${t}`, 'm')).toBe('alice');
    server.status = 200;
  });

  it('remembers a verified token within its exp and the cache TTL, and still checks the model', async () => {
    server.keys = [k1.jwk];
    server.fetches = 0;
    let offset = 0;
    const auth = new Authenticator(config(), { now: () => now, tokenNow: () => Date.now() + offset });
    const t = await signToken(k1, { claims: { models: ['sf-*'] }, expiresIn: 300 });
    const first = auth.authorize(`Bearer ${t}`, 'sf-model');
    expect(first).toBeInstanceOf(Promise);
    expect(await first).toBe('alice');
    expect(auth.authorize(`Bearer ${t}`, 'sf-model')).toBe('alice'); // synchronous: from the cache
    await expectFail(auth, `Bearer ${t}`, 'gpt-4', 403, /token subject "alice" may not use model "gpt-4"/);
    offset = 61_000; // past the cache TTL: verified again
    const again = auth.authorize(`Bearer ${t}`, 'sf-model');
    expect(again).toBeInstanceOf(Promise);
    expect(await again).toBe('alice');
    offset = 301_000; // past exp: the cached entry is not used, verification says expired
    await expectFail(auth, `Bearer ${t}`, 'sf-model', 401, /^invalid token: expired$/);
  });

  it('answers 503 when the key set was never obtained', async () => {
    server.status = 503;
    const auth = make();
    const e = await expectFail(auth, `Bearer ${await signToken(k1)}`, 'm', 503, /^cannot verify tokens now: the key set at http:\/\/127\.0\.0\.1:\d+\/jwks\.json is unavailable \(HTTP 503, expected 200\)$/);
    expect(e.headers?.['retry-after']).toBe('1');
    server.status = 200;
  });

  it('with no keys yet, a failed fetch is not retried within the cooldown; after it one fetch recovers', async () => {
    server.status = 503;
    server.keys = [k1.jwk];
    server.fetches = 0;
    now = 5_000_000;
    const logged: string[] = [];
    const auth = new Authenticator(config('  jwksCooldownSeconds: 30\n'), { now: () => now, log: (m) => logged.push(m) });
    const token = await signToken(k1, { claims: { models: ['*'] } });
    for (let i = 0; i < 20; i++) await expectFail(auth, `Bearer ${token}`, 'm', 503, /is unavailable \(HTTP 503, expected 200\)$/);
    expect(server.fetches).toBe(1);
    expect(logged.length).toBe(1);
    server.status = 200;
    now += 29_999; // still within the cooldown: the cached error, no fetch
    await expectFail(auth, `Bearer ${token}`, 'm', 503, /HTTP 503/);
    expect(server.fetches).toBe(1);
    now += 1; // cooldown over: one fetch, and the token verifies
    expect(await auth.authorize(`Bearer ${token}`, 'm')).toBe('alice');
    expect(server.fetches).toBe(2);
  });
});

describe('JWT with an inline key set', () => {
  it('verifies against the inline keys only', async () => {
    const [k, other] = await Promise.all([makeKey('inline-1'), makeKey('inline-2')]);
    const auth = new Authenticator(parseAuthConfig(`
jwt:
  issuer: https://issuer.test
  audiences: [inference-router]
  jwks: ${JSON.stringify({ keys: [k.jwk] })}
  modelsClaim: models
`, 'auth.yaml'));
    expect(await auth.authorize(`Bearer ${await signToken(k, { claims: { models: ['sf-model'] } })}`, 'sf-model')).toBe('alice');
    await expectFail(auth, `Bearer ${await signToken(k, { claims: { models: ['sf-model'] } })}`, 'x', 403, /may not use model "x"/);
    await expectFail(auth, `Bearer ${await signToken(other, { claims: { models: ['*'] } })}`, 'sf-model', 401, /no key of the issuer matches it/);
    expect(auth.jwks).toBeNull();
  });

  it('an unknown kid and a bad signature are refused from memory the second time (the inline set never changes)', async () => {
    const [k, other, forged] = await Promise.all([makeKey('inline-1'), makeKey('inline-2'), makeKey('inline-1')]);
    const auth = new Authenticator(parseAuthConfig(`
jwt:
  issuer: https://issuer.test
  audiences: [inference-router]
  jwks: ${JSON.stringify({ keys: [k.jwk] })}
`, 'auth.yaml'));
    const once = (t: string): Promise<string> | string => auth.authorize(`Bearer ${t}`, 'm');
    const unknownKid = await signToken(other);
    await expect(once(unknownKid)).rejects.toThrow(/^invalid token: no key of the issuer matches it$/);
    expect(() => once(unknownKid)).toThrow(/^invalid token: no key of the issuer matches it$/);
    const badSignature = await signToken(forged);
    await expect(once(badSignature)).rejects.toThrow(/^invalid token: bad signature$/);
    expect(() => once(badSignature)).toThrow(/^invalid token: bad signature$/);
    expect(await once(await signToken(k))).toBe('alice');
  });
});

/** As a worker applies a change of the auth file (worker/worker-auth.ts): the Authenticator it replaces given. */
describe('Authenticator replacing another (a reload of the auth file)', () => {
  const keys = (...names: string[]) => `apiKeys:\n${names.map((n) => `  - { name: ${n}, sha256: "${sha256Hex(`key-${n}`)}" }`).join('\n')}\n`;

  it('naming the same remote key set keeps its keys: tokens still verify while the issuer is down', async () => {
    const jwks = await new JwksServer().start();
    const key = await makeKey('k1');
    jwks.keys = [key.jwk];
    const jwt = `jwt:\n  issuer: https://issuer.test\n  audiences: [inference-router]\n  jwksUri: ${jwks.url}\n`;
    const logs: string[] = [];
    const first = new Authenticator(parseAuthConfig(keys('a') + jwt, 'auth.yaml'), { log: (m) => logs.push(m) });
    try {
      const before = await first.identify(`Bearer ${await signToken(key, { subject: 'before' })}`, 'm');
      expect(before.subject).toBe('before');
      expect(jwks.fetches).toBe(1);
      jwks.status = 500; // the issuer goes down
      const next = new Authenticator(parseAuthConfig(keys('a', 'b') + jwt, 'auth.yaml'), { log: (m) => logs.push(m) }, first);
      // A token never seen before (not in the verified-token cache) is checked with the kept keys.
      const after = await next.identify(`Bearer ${await signToken(key, { subject: 'after' })}`, 'm');
      expect(after.subject).toBe('after');
      expect(jwks.fetches).toBe(1);
      expect(logs.filter((l) => l.includes('fetching the key set'))).toEqual([]);
    } finally {
      await jwks.stop();
    }
  });

  it('while the first fetch of the same key set is under way: tokens on the new config wait for that fetch, no 503', async () => {
    const jwks = await new JwksServer().start();
    const key = await makeKey('k1');
    jwks.keys = [key.jwk];
    jwks.delayMs = 200; // a slow issuer: the reload lands while its answer is on the way
    const jwt = `jwt:\n  issuer: https://issuer.test\n  audiences: [inference-router]\n  jwksUri: ${jwks.url}\n`;
    const old = new Authenticator(parseAuthConfig(keys('a') + jwt, 'auth.yaml'));
    try {
      const first = old.identify(`Bearer ${await signToken(key, { subject: 'first' })}`, 'm');
      const next = new Authenticator(parseAuthConfig(keys('a', 'b') + jwt, 'auth.yaml'), {}, old);
      const second = next.identify(`Bearer ${await signToken(key, { subject: 'second' })}`, 'm');
      expect((await first).subject).toBe('first');
      expect((await second).subject).toBe('second');
      expect(jwks.fetches).toBe(1);
      // And later tokens on the new config use the keys that fetch brought.
      expect((await next.identify(`Bearer ${await signToken(key, { subject: 'third' })}`, 'm')).subject).toBe('third');
      expect(jwks.fetches).toBe(1);
    } finally {
      await jwks.stop();
    }
  });
});
