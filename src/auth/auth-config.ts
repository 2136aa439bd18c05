/**
 * The authentication file (ROUTER_AUTH_CONFIG, docs/auth.md): API keys by sha256 and an optional
 * JWT issuer. Validated once, at the edge, then frozen; unknown keys are rejected; every error
 * names the file and the path of the bad field.
 */
import { LineCounter, parseDocument } from 'yaml';
import { compileGlobs, type ModelGlobs } from './model-globs.js';
import type { RateLimitSpec } from '../config/resource-types.js';
import { parseRateLimit } from '../config/rate-limit-spec.js';
import { unusableJwk } from './inline-jwk.js';

export interface ApiKeyEntry {
  /** The subject: who holds the key. */
  readonly name: string;
  /** Lower-case hex sha256 of the key. */
  readonly sha256: string;
  /** Models the key may use; null = all. */
  readonly models: ModelGlobs | null;
  /** This key's own budget over all its models (a tenant limit), or null. */
  readonly rateLimit: RateLimitSpec | null;
}

export interface JwksJson {
  readonly keys: readonly Record<string, unknown>[];
}

export interface JwtConfig {
  readonly issuer: string;
  readonly audiences: readonly string[];
  /** Remote key set (fetched and cached, jwks-cache.ts); null when `jwks` is inline. */
  readonly jwksUri: string | null;
  readonly jwks: JwksJson | null;
  /** Claim listing the models a token may use; null = every valid token may use all models. */
  readonly modelsClaim: string | null;
  /** Allowed clock skew for exp/nbf, seconds. */
  readonly clockToleranceSeconds: number;
  /** Refuse a token without `exp` (one that never expires); off by default, as RFC 7519 makes `exp` optional. */
  readonly requireExpiration: boolean;
  /** A remote key set older than this is refreshed (in the background), seconds. */
  readonly jwksMaxAgeSeconds: number;
  /** Minimum time between two fetches of the remote key set (unknown kid, refresh), seconds. */
  readonly jwksCooldownSeconds: number;
  /** Timeout of one key set fetch, seconds. */
  readonly jwksTimeoutSeconds: number;
  /** The claim naming the tenant (default `sub`). */
  readonly tenantClaim: string;
  /** Budget of every tenant without an override, or null. */
  readonly rateLimit: RateLimitSpec | null;
  /** Per-tenant overrides, by tenant. */
  readonly tenantLimits: ReadonlyMap<string, RateLimitSpec>;
}

export interface AuthConfig {
  readonly file: string;
  readonly apiKeys: readonly ApiKeyEntry[];
  readonly jwt: JwtConfig | null;
}

/** A bad auth file. `message` reads `<file>: <field path>: <problem>` (with a line when known). */
export class AuthConfigError extends Error {
  constructor(readonly file: string, readonly path: string | null, readonly problem: string) {
    super(`${file}${path ? `: ${path}` : ''}: ${problem}`);
    this.name = 'AuthConfigError';
  }
}

const TOP_KEYS = ['apiKeys', 'jwt'];
const KEY_KEYS = ['name', 'sha256', 'models', 'rateLimit'];
const JWT_KEYS = [
  'issuer', 'audiences', 'jwksUri', 'jwks', 'modelsClaim', 'clockToleranceSeconds', 'requireExpiration',
  'jwksMaxAgeSeconds', 'jwksCooldownSeconds', 'jwksTimeoutSeconds', 'tenantClaim', 'rateLimit', 'tenantLimits',
];
const RATE_LIMIT_KEYS = ['inputTokensPerUnit', 'outputTokensPerUnit', 'unit', 'global', 'mode'];
const HEX64 = /^[0-9a-fA-F]{64}$/;

type Obj = Record<string, unknown>;

function isObj(v: unknown): v is Obj {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function describe(v: unknown): string {
  if (v === undefined) return 'nothing';
  if (v === null) return 'null';
  if (typeof v === 'string') return `the string ${JSON.stringify(v.length > 60 ? `${v.slice(0, 57)}...` : v)}`;
  if (Array.isArray(v)) return 'a list';
  return typeof v === 'object' ? 'a mapping' : String(v);
}

class Check {
  constructor(readonly file: string, readonly redisCluster: boolean) {}

  fail(path: string | null, problem: string): never {
    throw new AuthConfigError(this.file, path, problem);
  }

  mapping(v: unknown, path: string, allowed: readonly string[]): Obj {
    if (!isObj(v)) this.fail(path, `expected a mapping, got ${describe(v)}`);
    for (const k of Object.keys(v)) {
      if (!allowed.includes(k)) this.fail(path ? `${path}.${k}` : k, `unknown field; allowed here: ${allowed.join(', ')}`);
    }
    return v;
  }

  string(v: unknown, path: string): string {
    if (typeof v !== 'string' || v.trim() === '') this.fail(path, `expected a non-empty string, got ${describe(v)}`);
    return v;
  }

  strings(v: unknown, path: string): string[] {
    if (!Array.isArray(v)) this.fail(path, `expected a list of strings, got ${describe(v)}`);
    if (v.length === 0) this.fail(path, 'expected at least one entry');
    return v.map((s, i) => this.string(s, `${path}[${i}]`));
  }

  seconds(v: unknown, path: string, fallback: number, max: number): number {
    if (v === undefined) return fallback;
    if (typeof v !== 'number' || !Number.isFinite(v) || v < 0 || v > max) this.fail(path, `expected a number of seconds from 0 to ${max}, got ${describe(v)}`);
    return v;
  }

  flag(v: unknown, path: string, fallback: boolean): boolean {
    if (v === undefined) return fallback;
    if (typeof v !== 'boolean') this.fail(path, `expected true or false, got ${describe(v)}`);
    return v;
  }

  /** A timeout: 0 would end every attempt before it could answer. */
  timeoutSeconds(v: unknown, path: string, fallback: number, max: number): number {
    if (v === undefined) return fallback;
    if (typeof v !== 'number' || !Number.isFinite(v) || v <= 0 || v > max) this.fail(path, `expected a number of seconds above 0, up to ${max}, got ${describe(v)}`);
    return v;
  }
}

/**
 * Validates the text of an auth file. Throws AuthConfigError naming `file` and the field.
 * `redisCluster` (REDIS_CLUSTER=true) decides which Redis addresses a global budget may name.
 */
export function parseAuthConfig(text: string, file: string, redisCluster = false): AuthConfig {
  const c = new Check(file, redisCluster);
  const lines = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lines, uniqueKeys: true, prettyErrors: false });
  if (doc.errors.length > 0) {
    const e = doc.errors[0];
    const pos = lines.linePos(e.pos[0]);
    c.fail(null, `line ${pos.line}: invalid YAML: ${e.message.split('\n')[0]}`);
  }
  const root = c.mapping(doc.toJS() ?? undefined, '', TOP_KEYS);
  if (root.apiKeys === undefined && root.jwt === undefined) {
    c.fail(null, 'nothing configured: give apiKeys, jwt or both (or unset ROUTER_AUTH_CONFIG to turn authentication off)');
  }
  const apiKeys = root.apiKeys === undefined ? [] : parseKeys(c, root.apiKeys);
  const jwt = root.jwt === undefined ? null : parseJwt(c, root.jwt);
  return Object.freeze({ file, apiKeys: Object.freeze(apiKeys), jwt });
}

function parseKeys(c: Check, v: unknown): ApiKeyEntry[] {
  if (!Array.isArray(v)) c.fail('apiKeys', `expected a list, got ${describe(v)}`);
  const names = new Set<string>();
  const digests = new Map<string, string>();
  return v.map((raw, i) => {
    const path = `apiKeys[${i}]`;
    const o = c.mapping(raw, path, KEY_KEYS);
    const name = c.string(o.name, `${path}.name`);
    if (names.has(name)) c.fail(`${path}.name`, `duplicate name "${name}"`);
    names.add(name);
    if (typeof o.sha256 !== 'string' || !HEX64.test(o.sha256)) {
      c.fail(`${path}.sha256`, 'expected the hex sha256 of the key (64 hex digits), e.g. from `printf %s "$KEY" | sha256sum`');
    }
    const sha256 = o.sha256.toLowerCase();
    const other = digests.get(sha256);
    if (other !== undefined) c.fail(`${path}.sha256`, `the same key digest is already used by "${other}"`);
    digests.set(sha256, name);
    let models: ModelGlobs | null = null;
    if (o.models !== undefined) {
      const list = c.strings(o.models, `${path}.models`);
      models = compileGlobs(list);
    }
    const rateLimit = limitOf(c, o.rateLimit, `${path}.rateLimit`);
    return Object.freeze({ name, sha256, models, rateLimit });
  });
}

function parseJwt(c: Check, v: unknown): JwtConfig {
  const o = c.mapping(v, 'jwt', JWT_KEYS);
  const issuer = c.string(o.issuer, 'jwt.issuer');
  const audiences = c.strings(o.audiences, 'jwt.audiences');
  let jwksUri: string | null = null;
  let jwks: JwksJson | null = null;
  if (o.jwksUri !== undefined && o.jwks !== undefined) c.fail('jwt', 'give either jwksUri or jwks, not both');
  if (o.jwksUri !== undefined) {
    const uri = c.string(o.jwksUri, 'jwt.jwksUri');
    let url: URL;
    try {
      url = new URL(uri);
    } catch {
      c.fail('jwt.jwksUri', `expected an http(s) URL, got ${describe(uri)}`);
    }
    if (url.protocol !== 'https:' && url.protocol !== 'http:') c.fail('jwt.jwksUri', `expected an http(s) URL, got ${describe(uri)}`);
    // fetch refuses such a URL (no fetch could succeed), and the URI is shown in 503 answers and
    // logs: the credentials are not shown here either.
    if (url.username !== '' || url.password !== '') c.fail('jwt.jwksUri', 'must not hold a user or password (user:password@): key sets are public');
    jwksUri = url.href;
  } else if (o.jwks !== undefined) {
    const set = c.mapping(o.jwks, 'jwt.jwks', ['keys']);
    if (!Array.isArray(set.keys) || set.keys.length === 0) c.fail('jwt.jwks.keys', `expected a non-empty list of JWKs, got ${describe(set.keys)}`);
    set.keys.forEach((k, i) => {
      if (!isObj(k) || typeof k.kty !== 'string') c.fail(`jwt.jwks.keys[${i}]`, 'expected a JWK (a mapping with "kty")');
      if (k.d !== undefined) c.fail(`jwt.jwks.keys[${i}]`, 'is a private key ("d" present); give public keys only');
      if (k.kty === 'oct') c.fail(`jwt.jwks.keys[${i}].kty`, 'symmetric keys ("oct") are not supported; give the issuer\'s public keys');
      const unusable = unusableJwk(k);
      if (unusable !== null) c.fail(`jwt.jwks.keys[${i}]`, unusable);
    });
    jwks = Object.freeze({ keys: Object.freeze(set.keys.map((k) => Object.freeze({ ...(k as Obj) }))) });
  } else {
    c.fail('jwt', 'give jwksUri (the issuer\'s key set URL) or jwks (an inline key set)');
  }
  const modelsClaim = o.modelsClaim === undefined ? null : c.string(o.modelsClaim, 'jwt.modelsClaim');
  const tenantClaim = o.tenantClaim === undefined ? 'sub' : c.string(o.tenantClaim, 'jwt.tenantClaim');
  const rateLimit = limitOf(c, o.rateLimit, 'jwt.rateLimit');
  const tenantLimits = new Map<string, RateLimitSpec>();
  if (o.tenantLimits !== undefined) {
    if (!Array.isArray(o.tenantLimits)) c.fail('jwt.tenantLimits', `expected a list, got ${describe(o.tenantLimits)}`);
    o.tenantLimits.forEach((raw, i) => {
      const path = `jwt.tenantLimits[${i}]`;
      const t = c.mapping(raw, path, ['tenant', 'rateLimit']);
      const tenant = c.string(t.tenant, `${path}.tenant`);
      if (tenantLimits.has(tenant)) c.fail(`${path}.tenant`, `duplicate tenant "${tenant}"`);
      if (t.rateLimit === undefined || t.rateLimit === null) c.fail(`${path}.rateLimit`, 'is required: expected a mapping');
      tenantLimits.set(tenant, limitOf(c, t.rateLimit, `${path}.rateLimit`)!);
    });
  }
  return Object.freeze({
    issuer,
    audiences: Object.freeze(audiences),
    jwksUri,
    jwks,
    modelsClaim,
    clockToleranceSeconds: c.seconds(o.clockToleranceSeconds, 'jwt.clockToleranceSeconds', 0, 300),
    requireExpiration: c.flag(o.requireExpiration, 'jwt.requireExpiration', false),
    jwksMaxAgeSeconds: c.seconds(o.jwksMaxAgeSeconds, 'jwt.jwksMaxAgeSeconds', 600, 86_400),
    jwksCooldownSeconds: c.seconds(o.jwksCooldownSeconds, 'jwt.jwksCooldownSeconds', 30, 3_600),
    jwksTimeoutSeconds: c.timeoutSeconds(o.jwksTimeoutSeconds, 'jwt.jwksTimeoutSeconds', 5, 60),
    tenantClaim,
    rateLimit,
    tenantLimits,
  });
}

/** A tenant budget: the same fields and checks as ModelRoute.spec.rateLimit (config/rate-limit-spec.ts). */
function limitOf(c: Check, v: unknown, path: string): RateLimitSpec | null {
  if (v !== undefined && v !== null) c.mapping(v, path, RATE_LIMIT_KEYS);
  const spec = parseRateLimit(v, path, (p, problem) => c.fail(p, problem), c.redisCluster);
  return spec === null ? null : Object.freeze(spec);
}
