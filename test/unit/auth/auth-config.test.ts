import { generateKeyPairSync } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { AuthConfigError, parseAuthConfig } from '../../../src/auth/auth-config.js';
import { globMatch, globsAllow } from '../../../src/auth/model-globs.js';

const F = '/etc/router/auth.yaml';
const D = 'a'.repeat(64);
const D2 = 'B'.repeat(64);

function error(text: string): AuthConfigError {
  try {
    parseAuthConfig(text, F);
  } catch (err) {
    expect(err).toBeInstanceOf(AuthConfigError);
    return err as AuthConfigError;
  }
  throw new Error('expected an AuthConfigError');
}

describe('parseAuthConfig', () => {
  it('accepts keys and a remote jwt issuer, normalizes and freezes', () => {
    const c = parseAuthConfig(`
apiKeys:
  - name: team-a
    sha256: "${D2}"
    models: ["sf-model", "llama-*"]
  - name: ops
    sha256: "${D}"
jwt:
  issuer: https://issuer.example
  audiences: [inference-router]
  jwksUri: https://issuer.example/.well-known/jwks.json
  modelsClaim: models
`, F);
    expect(c.apiKeys.map((k) => k.name)).toEqual(['team-a', 'ops']);
    expect(c.apiKeys[0].sha256).toBe('b'.repeat(64));
    expect(c.apiKeys[1].models).toBeNull();
    expect(globsAllow(c.apiKeys[0].models!, 'llama-3-8b')).toBe(true);
    expect(globsAllow(c.apiKeys[0].models!, 'sf-model')).toBe(true);
    expect(globsAllow(c.apiKeys[0].models!, 'gpt-4')).toBe(false);
    expect(c.jwt).toMatchObject({
      issuer: 'https://issuer.example', audiences: ['inference-router'], jwks: null, modelsClaim: 'models',
      jwksCooldownSeconds: 30, jwksMaxAgeSeconds: 600, jwksTimeoutSeconds: 5, clockToleranceSeconds: 0, requireExpiration: false,
    });
    expect(Object.isFrozen(c)).toBe(true);
    expect(Object.isFrozen(c.apiKeys[0])).toBe(true);
    expect(Object.isFrozen(c.jwt)).toBe(true);
  });

  it('accepts an inline key set and jwt alone', () => {
    const ec = generateKeyPairSync('ec', { namedCurve: 'P-256' }).publicKey.export({ format: 'jwk' });
    const c = parseAuthConfig(`
jwt:
  issuer: iss
  audiences: [a, b]
  jwks: { keys: [ { kty: EC, crv: P-256, x: ${ec.x}, y: ${ec.y}, kid: k1 } ] }
`, F);
    expect(c.apiKeys).toEqual([]);
    expect(c.jwt!.jwks!.keys[0].kid).toBe('k1');
    expect(c.jwt!.jwksUri).toBeNull();
    expect(c.jwt!.modelsClaim).toBeNull();
  });

  it.each([
    ['', /auth\.yaml: expected a mapping, got nothing/],
    ['{}', /nothing configured: give apiKeys, jwt or both/],
    ['apiKeys: [}', /auth\.yaml: line 1: invalid YAML: [^:]*[^:\s]$/],
    ['apiKey: []', /auth\.yaml: apiKey: unknown field; allowed here: apiKeys, jwt/],
    ['apiKeys: {}', /auth\.yaml: apiKeys: expected a list, got a mapping/],
    [`apiKeys: [{ sha256: "${D}" }]`, /auth\.yaml: apiKeys\[0\]\.name: expected a non-empty string, got nothing/],
    ['apiKeys: [{ name: a, sha256: "abc" }]', /auth\.yaml: apiKeys\[0\]\.sha256: expected the hex sha256 of the key \(64 hex digits\)/],
    [`apiKeys: [{ name: a, sha256: "${D}", model: [x] }]`, /apiKeys\[0\]\.model: unknown field; allowed here: name, sha256, models/],
    [`apiKeys: [{ name: a, sha256: "${D}", models: [] }]`, /apiKeys\[0\]\.models: expected at least one entry/],
    [`apiKeys: [{ name: a, sha256: "${D}", models: [1] }]`, /apiKeys\[0\]\.models\[0\]: expected a non-empty string, got 1/],
    [`apiKeys: [{ name: a, sha256: "${D}" }, { name: a, sha256: "${D2}" }]`, /apiKeys\[1\]\.name: duplicate name "a"/],
    [`apiKeys: [{ name: a, sha256: "${D}" }, { name: b, sha256: "${D.toUpperCase()}" }]`, /apiKeys\[1\]\.sha256: the same key digest is already used by "a"/],
    ['jwt: { audiences: [a], jwksUri: "https://x/j" }', /jwt\.issuer: expected a non-empty string, got nothing/],
    ['jwt: { issuer: i, audiences: [], jwksUri: "https://x/j" }', /jwt\.audiences: expected at least one entry/],
    ['jwt: { issuer: i, audiences: a, jwksUri: "https://x/j" }', /jwt\.audiences: expected a list of strings, got the string "a"/],
    ['jwt: { issuer: i, audiences: [a] }', /jwt: give jwksUri .* or jwks/],
    ['jwt: { issuer: i, audiences: [a], jwksUri: "ftp://x/j" }', /jwt\.jwksUri: expected an http\(s\) URL/],
    ['jwt: { issuer: i, audiences: [a], jwksUri: "not a url" }', /jwt\.jwksUri: expected an http\(s\) URL/],
    ['jwt: { issuer: i, audiences: [a], jwksUri: "https://reader:s3cret@x/j" }', /jwt\.jwksUri: must not hold a user or password \(user:password@\): key sets are public$/],
    ['jwt: { issuer: i, audiences: [a], jwksUri: "https://x/j", jwks: { keys: [] } }', /jwt: give either jwksUri or jwks, not both/],
    ['jwt: { issuer: i, audiences: [a], jwks: { keys: [] } }', /jwt\.jwks\.keys: expected a non-empty list of JWKs/],
    ['jwt: { issuer: i, audiences: [a], jwks: { keys: [ { kid: x } ] } }', /jwt\.jwks\.keys\[0\]: expected a JWK/],
    ['jwt: { issuer: i, audiences: [a], jwks: { keys: [ { kty: RSA, d: secret } ] } }', /jwt\.jwks\.keys\[0\]: is a private key/],
    ['jwt: { issuer: i, audiences: [a], jwks: { keys: [ { kty: oct, k: abc } ] } }', /jwt\.jwks\.keys\[0\]\.kty: symmetric keys/],
    // Keys that could verify no token: refused at load, not every token refused later.
    ['jwt: { issuer: i, audiences: [a], jwks: { keys: [ { kty: EC, crv: P-256, x: abc, y: def } ] } }', /jwt\.jwks\.keys\[0\]: not a usable public key \(/],
    ['jwt: { issuer: i, audiences: [a], jwks: { keys: [ { kty: RSA, n: abc, e: AQAB } ] } }', /jwt\.jwks\.keys\[0\]: an RSA key of \d+ bits; tokens are verified with RSA keys of 2048 bits or more/],
    ['jwt: { issuer: i, audiences: [a], jwksUri: "https://x/j", jwksCooldownSeconds: -1 }', /jwt\.jwksCooldownSeconds: expected a number of seconds from 0 to 3600, got -1/],
    ['jwt: { issuer: i, audiences: [a], jwksUri: "https://x/j", requireExpiration: "yes" }', /jwt\.requireExpiration: expected true or false, got the string "yes"/],
    // 0 is no "no timeout": every fetch of the key set would fail, every token answered 503.
    ['jwt: { issuer: i, audiences: [a], jwksUri: "https://x/j", jwksTimeoutSeconds: 0 }', /jwt\.jwksTimeoutSeconds: expected a number of seconds above 0, up to 60, got 0/],
    ['jwt: { issuer: i, audiences: [a], jwksUri: "https://x/j", issuers: [x] }', /jwt\.issuers: unknown field/],
  ])('rejects %j naming file and field', (text, message) => {
    const e = error(text);
    expect(e.file).toBe(F);
    expect(e.message).toMatch(message);
    expect(e.message.startsWith(F)).toBe(true);
  });
});

describe('globs', () => {
  it.each([
    ['llama-*', 'llama-3', true],
    ['llama-*', 'llama-', true],
    ['llama-*', 'xllama-3', false],
    ['*-chat', 'mistral-7b-chat', true],
    ['*-chat', 'mistral-7b-chat2', false],
    ['a?c', 'abc', true],
    ['a?c', 'ac', false],
    ['*a*b', 'xaxxab', true],
    ['*a*b', 'xaxxa', false],
    ['*a', '*ba', true],
    ['sf-model', 'sf-model', true],
    ['sf-model', 'sf-model2', false],
    ['*', '', true],
  ])('%s vs %s -> %s', (p, t, ok) => {
    expect(globMatch(p, t)).toBe(ok);
  });
});

describe('parseAuthConfig: tenant budgets', () => {
  // A Redis address the limiter cannot use is refused with the file (it made every worker exit, again and again).
  it('refuses a global budget naming several Redis nodes unless REDIS_CLUSTER=true', () => {
    const text = `apiKeys:\n  - name: a\n    sha256: "${D}"\n    rateLimit: {inputTokensPerUnit: 10, global: {redis: {address: "r-0:6379,r-1:6379"}}}\n`;
    expect(() => parseAuthConfig(text, F, false)).toThrow(
      `${F}: apiKeys[0].rateLimit.global.redis.address: names several nodes (Redis Cluster seed nodes); that needs REDIS_CLUSTER=true in the router's environment (one Redis: name only it)`);
    expect(parseAuthConfig(text, F, true).apiKeys[0].rateLimit!.global).toEqual({ redis: { address: 'r-0:6379,r-1:6379' } });
  });

  const ec = generateKeyPairSync('ec', { namedCurve: 'P-256' }).publicKey.export({ format: 'jwk' });
  const jwks = `  jwks: {keys: [{kty: EC, crv: P-256, x: "${ec.x}", y: "${ec.y}"}]}\n`;

  it('takes rateLimit on keys and on jwt (default, tenantClaim, overrides) with the route fields', () => {
    const c = parseAuthConfig(`
apiKeys:
  - name: team-a
    sha256: "${D}"
    rateLimit: {inputTokensPerUnit: 100000, outputTokensPerUnit: 400000, unit: minute, global: {redis: {address: "redis:6379"}}}
  - name: trial
    sha256: "${D2}"
    rateLimit: {outputTokensPerUnit: 50, unit: day, mode: shadow}
jwt:
  issuer: https://issuer.test
  audiences: [a]
${jwks}  tenantClaim: org
  rateLimit: {inputTokensPerUnit: 10, unit: hour}
  tenantLimits:
    - tenant: acme
      rateLimit: {inputTokensPerUnit: 20}
`, F);
    expect(c.apiKeys[0].rateLimit).toEqual({ inputTokensPerUnit: 100000, outputTokensPerUnit: 400000, unit: 'minute', global: { redis: { address: 'redis:6379' } }, mode: 'enforce' });
    expect(c.apiKeys[1].rateLimit).toEqual({ inputTokensPerUnit: null, outputTokensPerUnit: 50, unit: 'day', global: null, mode: 'shadow' });
    expect(c.jwt!.tenantClaim).toBe('org');
    expect(c.jwt!.rateLimit).toMatchObject({ inputTokensPerUnit: 10, unit: 'hour' });
    // The unit defaults to second, as on ModelRoute.
    expect(c.jwt!.tenantLimits.get('acme')).toEqual({ inputTokensPerUnit: 20, outputTokensPerUnit: null, unit: 'second', global: null, mode: 'enforce' });
  });

  it('defaults: tenantClaim sub, no budgets', () => {
    const c = parseAuthConfig(`apiKeys: [{name: a, sha256: "${D}"}]\njwt:\n  issuer: i\n  audiences: [a]\n${jwks}`, F);
    expect(c.apiKeys[0].rateLimit).toBeNull();
    expect(c.jwt!.tenantClaim).toBe('sub');
    expect(c.jwt!.rateLimit).toBeNull();
    expect(c.jwt!.tenantLimits.size).toBe(0);
  });

  it.each([
    ['no token limit', 'rateLimit: {unit: minute}', 'apiKeys[0].rateLimit: must set inputTokensPerUnit or outputTokensPerUnit (or both)'],
    ['bad unit', 'rateLimit: {inputTokensPerUnit: 5, unit: week}', 'apiKeys[0].rateLimit.unit: expected one of second, minute, hour, day, month, got "week"'],
    ['bad mode', 'rateLimit: {inputTokensPerUnit: 5, mode: dry}', 'apiKeys[0].rateLimit.mode: expected one of enforce, shadow, got "dry"'],
    ['zero limit', 'rateLimit: {inputTokensPerUnit: 0}', 'apiKeys[0].rateLimit.inputTokensPerUnit: must be an integer from 1 to 4294967295, got 0'],
    ['bad address', 'rateLimit: {inputTokensPerUnit: 5, global: {redis: {address: redis-host}}}', 'apiKeys[0].rateLimit.global.redis.address: expected host:port'],
    ['unknown field', 'rateLimit: {inputTokensPerUnit: 5, burst: 3}', 'apiKeys[0].rateLimit.burst: unknown field'],
  ])('rejects a key budget with %s, naming the field', (_, field, message) => {
    expect(error(`apiKeys:\n  - name: a\n    sha256: "${D}"\n    ${field}\n`).message).toContain(`${F}: ${message}`);
  });

  it('rejects duplicate tenants and overrides without a limit', () => {
    const head = `jwt:\n  issuer: i\n  audiences: [a]\n${jwks}  tenantLimits:\n`;
    expect(error(`${head}    - {tenant: x, rateLimit: {inputTokensPerUnit: 1}}\n    - {tenant: x, rateLimit: {inputTokensPerUnit: 2}}\n`).message)
      .toContain('jwt.tenantLimits[1].tenant: duplicate tenant "x"');
    expect(error(`${head}    - {tenant: x}\n`).message).toContain('jwt.tenantLimits[0].rateLimit: is required');
  });
});
