/**
 * Checks `Authorization: Bearer <api key or JWT>` against one validated AuthConfig and decides
 * whether the caller may use the requested model (docs/auth.md).
 *
 * - API keys: sha256 of the presented key, looked up by hex digest in a Map, then compared with
 *   timingSafeEqual. Any timing difference of the lookup concerns the digest, not the key.
 * - JWTs (three base64url segments, when `jwt` is configured and no API key matched): jose's
 *   jwtVerify with the issuer, audiences, asymmetric algorithms only, exp/nbf checked; keys from
 *   the inline set or the cached remote set (jwks-cache.ts).
 * Verified tokens are remembered for up to a minute (token-cache.ts), within their exp.
 * Failures throw RouterError: 401 authentication_failed (with `www-authenticate: Bearer`) or
 * 403 authorization_failed; 503 upstream_error when the key set cannot be fetched. No message
 * ever contains the presented credential.
 */
import { hash, timingSafeEqual } from 'node:crypto';
import { createLocalJWKSet, errors, jwtVerify, type JWTPayload, type JWTVerifyGetKey, type JWTVerifyOptions } from 'jose';
import { RouterError, type ErrorCode } from '../errors.js';
import type { ApiKeyEntry, AuthConfig, JwtConfig } from './auth-config.js';
import type { Clock } from '../clock.js';
import { JwksCache, KeySetUnavailableError, type FetchFn } from './jwks-cache.js';
import { globMatch, globsAllow } from './model-globs.js';
import { TokenCache } from './token-cache.js';
import { jwtTenant, keyTenant, type Tenant } from './tenant.js';
import { Buffer } from 'node:buffer';

export interface AuthenticatorOptions {
  /** Clock of the remote key set cache (epoch ms). */
  readonly now?: Clock;
  /** Clock for exp/nbf checks, epoch ms (tests); default: the system clock. */
  readonly tokenNow?: Clock;
  readonly fetch?: FetchFn;
  readonly log?: (message: string) => void;
  /** Verified tokens kept (default 10000; 0 = verify every request). */
  readonly tokenCacheSize?: number;
  /** How long a verified token is trusted without verifying again, ms (default 60000). */
  readonly tokenCacheTtlMs?: number;
}

const CHALLENGE = Object.freeze({ 'www-authenticate': 'Bearer' });
const CHALLENGE_INVALID = Object.freeze({ 'www-authenticate': 'Bearer error="invalid_token"' });
const BEARER = /^bearer +([A-Za-z0-9\-._~+/]+=*) *$/i;
const JWT_SHAPE = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/;

/** Why an Authorization value is no `Bearer <credential>`: the front joins a header sent twice with ", ". */
function malformedMessage(authorization: string): string {
  return /^bearer +[^ ,]+ *, *bearer /i.test(authorization)
    ? 'more than one Authorization header (or credential in it): send one "Authorization: Bearer <api key or token>"'
    : 'malformed Authorization header: expected "Bearer <api key or token>"';
}
/**
 * Tokens refused for a reason that no later request can change (expired, malformed, an issuer,
 * audience or algorithm this configuration does not accept) are remembered, at most this many
 * (the oldest goes first), and refused again without their signature checked: a client that keeps
 * sending an expired token cost a verification (80-150 µs) per request. A bad signature is
 * remembered with the key set it was checked against, and holds while that set is the one in use
 * (an inline set, or a remote set until a fetch replaces it or it is older than jwksMaxAgeSeconds):
 * the same token and key give the same answer. An unknown key is remembered for an inline set only
 * (a remote set's next fetch may bring it, and such a token is what asks for that fetch); `nbf` and
 * `iat` are not remembered (the token may become valid).
 */
const REFUSED_TOKENS_KEPT = 1024;
/**
 * Longer tokens are not remembered when refused (checked each time): an unauthenticated client may
 * send tokens up to the header limit (64 KB), and 1,024 of those would hold 64 MB per worker.
 */
const REFUSED_TOKEN_MAX_CHARS = 8192;

/** A remembered refusal: its message, and the key set it holds for (null: whatever the keys). */
interface Refusal {
  readonly message: string;
  readonly keys: object | null;
}

const ASYMMETRIC = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA', 'Ed25519'];

interface KeyRecord {
  readonly entry: ApiKeyEntry;
  readonly digest: Buffer;
  readonly tenant: Tenant;
}

function unauthenticated(message: string, invalidToken = false, code: ErrorCode = 'invalid_token'): RouterError {
  return new RouterError('authentication_failed', message, 401, invalidToken ? CHALLENGE_INVALID : CHALLENGE, code);
}

function forbidden(subject: string, model: string): RouterError {
  return new RouterError('authorization_failed', `${subject} may not use model "${model}"`, 403);
}

export class Authenticator {
  readonly config: AuthConfig;
  private readonly keys = new Map<string, KeyRecord>();
  private readonly jwt: JwtConfig | null;
  private readonly getKey: JWTVerifyGetKey | null;
  private readonly verifyOptions: JWTVerifyOptions | null;
  private readonly tokenNow: Clock | null;
  private readonly verified: TokenCache;
  /** Tokens refused for good or for their key set, by their text (REFUSED_TOKENS_KEPT). */
  private readonly refused = new Map<string, Refusal>();
  /** The remote key set cache, when the config names jwksUri. */
  readonly jwks: JwksCache | null;

  /**
   * `previous`: the Authenticator this one replaces (a reload of the auth file); a remote key set
   * at the same URI keeps the keys it fetched (jwks-cache.ts).
   */
  constructor(config: AuthConfig, opts: AuthenticatorOptions = {}, previous: Authenticator | null = null) {
    this.config = config;
    for (const entry of config.apiKeys) this.keys.set(entry.sha256, { entry, digest: Buffer.from(entry.sha256, 'hex'), tenant: keyTenant(entry.name, entry.rateLimit) });
    this.jwt = config.jwt;
    this.tokenNow = opts.tokenNow ?? null;
    this.verified = new TokenCache(opts.tokenCacheSize ?? 10_000, opts.tokenCacheTtlMs ?? 60_000, opts.tokenNow ?? Date.now);
    this.jwks = null;
    this.getKey = null;
    this.verifyOptions = null;
    const j = config.jwt;
    if (j !== null) {
      if (j.jwksUri !== null) {
        this.jwks = new JwksCache(j.jwksUri, {
          maxAgeMs: j.jwksMaxAgeSeconds * 1000,
          cooldownMs: j.jwksCooldownSeconds * 1000,
          timeoutMs: j.jwksTimeoutSeconds * 1000,
          now: opts.now,
          fetch: opts.fetch,
          log: opts.log,
          previous: previous?.jwks,
        });
        this.getKey = this.jwks.getKey as JWTVerifyGetKey;
      } else {
        this.getKey = createLocalJWKSet({ keys: j.jwks!.keys as never }) as JWTVerifyGetKey;
      }
      this.verifyOptions = {
        issuer: j.issuer,
        audience: j.audiences as string[],
        algorithms: ASYMMETRIC,
        clockTolerance: j.clockToleranceSeconds,
        requiredClaims: j.requireExpiration ? ['exp'] : [],
      };
    }
  }

  /**
   * Returns the caller's subject (API key name, or the token's `sub`) when `authorization` holds
   * valid credentials allowed to use `model`; throws RouterError otherwise (see identify()).
   */
  authorize(authorization: string, model: string): Promise<string> | string {
    const t = this.identify(authorization, model);
    return t instanceof Promise ? t.then(subjectOf) : t.subject;
  }

  /**
   * The caller's tenant (tenant.ts: subject, tenant name, budget) when `authorization` holds valid
   * credentials allowed to use `model`; throws RouterError otherwise. Synchronous for API keys
   * and for tokens verified recently (token-cache.ts); a promise when a JWT must be verified.
   */
  identify(authorization: string, model: string): Promise<Tenant> | Tenant {
    if (authorization.length === 0) {
      throw unauthenticated('missing credentials: send "Authorization: Bearer <api key or token>"', false, 'missing_credentials');
    }
    const m = BEARER.exec(authorization);
    if (m === null) throw unauthenticated(malformedMessage(authorization), false, 'invalid_credentials');
    const token = m[1];

    const digest = hash('sha256', token, 'buffer');
    const rec = this.keys.get(digest.toString('hex'));
    if (rec !== undefined && timingSafeEqual(digest, rec.digest)) {
      const models = rec.entry.models;
      if (models !== null && !globsAllow(models, model)) throw forbidden(`API key "${rec.entry.name}"`, model);
      return rec.tenant;
    }
    if (this.jwt === null || !JWT_SHAPE.test(token)) throw unauthenticated('invalid credentials: unknown API key', true, 'invalid_credentials');
    const hit = this.verified.get(token);
    if (hit !== null) {
      if (this.jwt.modelsClaim !== null && !claimAllows(hit.models, model)) throw forbidden(`token subject "${hit.subject}"`, model);
      return hit.tenant;
    }
    const refused = this.refused.get(token);
    if (refused !== undefined) {
      if (refused.keys === null || refused.keys === this.keySet()) throw unauthenticated(refused.message, true);
      this.refused.delete(token);
    }
    return this.verifyJwt(token, model);
  }

  /** The key set verifications use now: the inline set's resolver, or the remote set while current (jwks-cache.ts); null when none. */
  private keySet(): object | null {
    return this.jwks === null ? this.getKey : this.jwks.currentSet();
  }

  private async verifyJwt(token: string, model: string): Promise<Tenant> {
    const j = this.jwt!;
    let payload: JWTPayload;
    const opts = this.tokenNow === null ? this.verifyOptions! : { ...this.verifyOptions!, currentDate: new Date(this.tokenNow()) };
    // Read before the verification: a fetch during it makes the remembered refusal stale, not wrong.
    const keys = this.keySet();
    try {
      payload = (await jwtVerify(token, this.getKey!, opts)).payload;
    } catch (err) {
      if (!(err instanceof errors.JWKSMultipleMatchingKeys)) throw this.refusal(token, err, keys);
      try {
        payload = await verifyWithEach(token, err, opts);
      } catch (each) {
        throw this.refusal(token, each, keys);
      }
    }
    const subject = typeof payload.sub === 'string' && payload.sub !== '' ? payload.sub : j.issuer;
    const models = j.modelsClaim === null ? undefined : payload[j.modelsClaim];
    const claim = payload[j.tenantClaim];
    const name = typeof claim === 'string' && claim !== '' ? claim : typeof claim === 'number' ? String(claim) : subject;
    const tenant = jwtTenant(subject, name, j.tenantLimits.get(name) ?? j.rateLimit);
    this.verified.set(token, tenant, models, payload.exp, payload.nbf, j.clockToleranceSeconds * 1000);
    if (j.modelsClaim !== null && !claimAllows(models, model)) {
      throw forbidden(`token subject "${subject}"`, model);
    }
    return tenant;
  }

  /**
   * The answer to a token jwtVerify refused with `err`, checked against the key set `keys`; a
   * refusal for good, or for that key set, is remembered (REFUSED_TOKENS_KEPT).
   */
  private refusal(token: string, err: unknown, keys: object | null): RouterError {
    const answer = jwtFailure(err);
    let holdsFor: object | null;
    if (refusedForGood(err)) holdsFor = null;
    else if (keys !== null && refusedByKeySet(err, this.jwks === null)) holdsFor = keys;
    else return answer;
    if (token.length > REFUSED_TOKEN_MAX_CHARS) return answer;
    if (this.refused.size >= REFUSED_TOKENS_KEPT) this.refused.delete(this.refused.keys().next().value as string);
    this.refused.set(token, { message: answer.message, keys: holdsFor });
    return answer;
  }
}

/**
 * A token without `kid` (RFC 7515 makes it optional) while the issuer's set holds several keys
 * that fit its algorithm (a key rotation publishes the old and the new key): each of them is
 * tried, as jose's JWKSMultipleMatchingKeys offers. The first whose signature holds decides (its
 * claim checks included, whose refusal is thrown); when none does, the signature is bad (jose's
 * JWSSignatureVerificationFailed is thrown).
 */
async function verifyWithEach(token: string, candidates: errors.JWKSMultipleMatchingKeys, opts: JWTVerifyOptions): Promise<JWTPayload> {
  for await (const key of candidates) {
    try {
      return (await jwtVerify(token, key, opts)).payload;
    } catch (err) {
      if (!(err instanceof errors.JWSSignatureVerificationFailed)) throw err;
    }
  }
  throw new errors.JWSSignatureVerificationFailed();
}

function subjectOf(t: Tenant): string {
  return t.subject;
}

/** A models claim: a list of globs, or one string of space-separated globs. Absent = none. */
function claimAllows(claim: unknown, model: string): boolean {
  if (typeof claim === 'string') {
    for (const g of claim.split(' ')) if (g !== '' && globMatch(g, model)) return true;
    return false;
  }
  if (!Array.isArray(claim)) return false;
  for (const g of claim) if (typeof g === 'string' && globMatch(g, model)) return true;
  return false;
}

/**
 * Whether jwtVerify's refusal `err` holds whatever happens later under this configuration: the
 * token expired, is malformed, or names an issuer, audience or algorithm (or lacks a claim) this
 * configuration does not accept. Not a bad signature or an unknown key (the key set may change),
 * nor a token not valid yet (nbf, iat), nor a key set that cannot be had.
 */
function refusedForGood(err: unknown): boolean {
  if (err instanceof errors.JWTExpired || err instanceof errors.JOSEAlgNotAllowed) return true;
  if (err instanceof errors.JWTClaimValidationFailed) return err.claim !== 'nbf' && err.claim !== 'iat';
  return err instanceof errors.JOSEError && (err.code === 'ERR_JWT_INVALID' || err.code === 'ERR_JWS_INVALID');
}

/**
 * Whether jwtVerify's refusal `err` holds for as long as the key set it was checked against is the
 * one in use: a bad signature (the same token and key give the same answer), and an unknown key
 * when the set is `inline` (it never changes; a fetched set's next fetch may bring the key).
 */
function refusedByKeySet(err: unknown, inline: boolean): boolean {
  return err instanceof errors.JWSSignatureVerificationFailed || (inline && err instanceof errors.JWKSNoMatchingKey);
}

function jwtFailure(err: unknown): RouterError {
  if (err instanceof KeySetUnavailableError) return new RouterError('upstream_error', err.message, 503, { 'retry-after': '1' }, 'key_set_unavailable');
  if (err instanceof errors.JWTExpired) return unauthenticated('invalid token: expired', true);
  if (err instanceof errors.JWTClaimValidationFailed) {
    switch (err.claim) {
      case 'iss': return unauthenticated('invalid token: issuer not accepted', true);
      case 'aud': return unauthenticated('invalid token: audience not accepted', true);
      case 'nbf': return unauthenticated('invalid token: not valid yet (nbf)', true);
      case 'iat': return unauthenticated('invalid token: issued in the future (iat)', true);
      case 'exp': return unauthenticated(err.reason === 'missing' ? 'invalid token: no expiry (exp), which jwt.requireExpiration asks for' : 'invalid token: expiry (exp) not a number', true);
      default: return unauthenticated(`invalid token: claim "${err.claim}" ${err.reason === 'missing' ? 'missing' : 'not accepted'}`, true);
    }
  }
  if (err instanceof errors.JWSSignatureVerificationFailed) return unauthenticated('invalid token: bad signature', true);
  if (err instanceof errors.JWKSNoMatchingKey) return unauthenticated('invalid token: no key of the issuer matches it', true);
  if (err instanceof errors.JOSEAlgNotAllowed) return unauthenticated('invalid token: algorithm not accepted', true);
  if (err instanceof errors.JOSEError) return unauthenticated(`invalid token: ${err.code === 'ERR_JWT_INVALID' || err.code === 'ERR_JWS_INVALID' ? 'malformed' : 'not accepted'}`, true);
  return unauthenticated('invalid token: not accepted', true);
}
