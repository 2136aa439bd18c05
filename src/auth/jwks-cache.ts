/**
 * A remote JSON Web Key Set, cached (our own cache rather than jose's createRemoteJWKSet, whose
 * expired cache makes every verification wait for the issuer and fail while it is down):
 * - first use fetches and waits; later, a set older than maxAge is refreshed in the background
 *   while the current keys keep verifying (stale-while-revalidate);
 * - a token whose kid is unknown triggers one fetch (key rotation), at most once per cooldown;
 *   tokens arriving while a fetch is under way wait for it rather than fail;
 * - a failed fetch keeps the last good keys; concurrent callers share one fetch;
 * - a reload of the auth file naming the same set keeps its keys (`previous`), and the outcome of
 *   a fetch of the replaced cache still under way;
 * - with no keys yet, a failed fetch is not retried within the cooldown either: meanwhile every
 *   verification fails at once with the cached error (503), so a down issuer is not hammered;
 * - the clock and fetch are injected, so rotation and cooldown are tested without sleeping.
 */
import type { Clock } from '../clock.js';
import { createLocalJWKSet, errors, type JSONWebKeySet, type JWSHeaderParameters, type FlattenedJWSInput, type CryptoKey } from 'jose';
import { Buffer } from 'node:buffer';

/** The largest key set answer read (1 MiB): a key set of a few keys is a few KB. */
export const MAX_KEY_SET_BYTES = 1024 * 1024;

function tooLargeSet(bytes: number): string {
  return `the answer is larger than ${MAX_KEY_SET_BYTES} bytes (${bytes} at least); a key set is a few KB`;
}

export type FetchFn = (url: string, init: { signal: AbortSignal; headers: Record<string, string>; redirect: 'manual' }) => Promise<Response>;

export interface JwksCacheOptions {
  readonly maxAgeMs: number;
  readonly cooldownMs: number;
  readonly timeoutMs: number;
  readonly now?: Clock;
  readonly fetch?: FetchFn;
  /** Fetch failures (once per failure, no token content). */
  readonly log?: (message: string) => void;
  /**
   * The cache of the same key set this one replaces (a reload of the auth file): its keys and
   * the times of its fetches carry over, so the issuer being down then breaks no token.
   */
  readonly previous?: JwksCache | null;
}

/** The key set cannot be obtained: verification is impossible right now (503, not 401). */
export class KeySetUnavailableError extends Error {
  constructor(readonly uri: string, reason: string) {
    super(`cannot verify tokens now: the key set at ${uri} is unavailable (${reason})`);
    this.name = 'KeySetUnavailableError';
  }
}

type LocalSet = ReturnType<typeof createLocalJWKSet>;

export class JwksCache {
  readonly uri: string;
  private readonly opts: JwksCacheOptions;
  private readonly now: Clock;
  private readonly fetchFn: FetchFn;
  private local: LocalSet | null = null;
  private fetchedAt = -Infinity;
  private attemptedAt = -Infinity;
  private pending: Promise<void> | null = null;
  private lastError = '';
  /** Fetches started (tests and diagnostics). */
  fetches = 0;

  /** The jose key resolver for jwtVerify. */
  readonly getKey = (header: JWSHeaderParameters, token: FlattenedJWSInput): Promise<CryptoKey> => this.resolve(header, token);

  constructor(uri: string, opts: JwksCacheOptions) {
    this.uri = uri;
    this.opts = opts;
    this.now = opts.now ?? Date.now;
    this.fetchFn = opts.fetch ?? (fetch as unknown as FetchFn);
    const prev = opts.previous;
    if (prev != null && prev.uri === uri) {
      this.takeOver(prev);
      // A fetch of the replaced cache under way (the first one, a rotation's): this one waits for
      // it and takes what it brought, rather than finding no keys and its cooldown running.
      if (prev.pending !== null) {
        this.pending = prev.pending.then(() => this.takeOver(prev)).finally(() => {
          this.pending = null;
        });
      }
    }
  }

  private takeOver(prev: JwksCache): void {
    this.local = prev.local;
    this.fetchedAt = prev.fetchedAt;
    this.attemptedAt = prev.attemptedAt;
    this.lastError = prev.lastError;
  }

  private async resolve(header: JWSHeaderParameters, token: FlattenedJWSInput): Promise<CryptoKey> {
    if (this.local === null) {
      // Join a fetch in progress, or start one unless the last attempt failed within the cooldown.
      if (this.pending !== null || this.now() - this.attemptedAt >= this.opts.cooldownMs) await this.refresh();
      if (this.local === null) throw new KeySetUnavailableError(this.uri, this.lastError);
    } else if (this.due() && this.mayFetch()) {
      void this.refresh(); // background: the current keys keep working meanwhile
    }
    const local: LocalSet = this.local;
    try {
      return await local(header, token);
    } catch (err) {
      if (!(err instanceof errors.JWKSNoMatchingKey)) throw err;
      // An unknown kid: a fetch under way (another token's, or a background refresh) may bring
      // it, so wait for that one; else start one unless the cooldown holds it back.
      if (this.pending !== null) await this.pending;
      else if (this.mayFetch()) await this.refresh();
      else throw err;
      return this.local(header, token);
    }
  }

  /**
   * The key set verifications use now, while younger than maxAge (a new object after each fetch
   * that brought one); null when there is none or it is due for a refresh. A bad signature found
   * with a set holds as long as that set is the current one (authenticator.ts).
   */
  currentSet(): object | null {
    return this.local !== null && !this.due() ? this.local : null;
  }

  /** The set in hand is older than maxAge: due for a refresh, and no longer the current one. */
  private due(): boolean {
    return this.now() - this.fetchedAt >= this.opts.maxAgeMs;
  }

  private mayFetch(): boolean {
    return this.pending === null && this.now() - this.attemptedAt >= this.opts.cooldownMs;
  }

  /** Fetches the set once (joining a fetch in progress); never rejects, keeps the old keys on failure. */
  refresh(): Promise<void> {
    if (this.pending !== null) return this.pending;
    this.attemptedAt = this.now();
    this.fetches++;
    this.pending = this.fetchSet().then(
      (local) => {
        this.local = local;
        this.fetchedAt = this.now();
        this.lastError = '';
      },
      (err: Error) => {
        this.lastError = err.message;
        this.opts.log?.(`auth: fetching the key set ${this.uri} failed${this.local === null ? '' : ', keeping the previous keys'}: ${err.message}`);
      },
    ).finally(() => {
      this.pending = null;
    });
    return this.pending;
  }

  /**
   * The answer's body as text, at most MAX_KEY_SET_BYTES, within the fetch's timeout (its signal
   * bounds the body too): a key set is a few KB, and an answer of hundreds of MB (a wrong URL, a
   * hostile server) read whole would take the worker's memory and stall its event loop.
   */
  private async bodyText(res: Response): Promise<string> {
    const declared = Number(res.headers.get('content-length') ?? -1);
    if (declared > MAX_KEY_SET_BYTES) {
      await res.body?.cancel();
      throw new Error(tooLargeSet(declared));
    }
    const parts: Uint8Array[] = [];
    let size = 0;
    try {
      if (res.body !== null) {
        for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
          size += chunk.byteLength;
          if (size > MAX_KEY_SET_BYTES) {
            await res.body.cancel().catch(() => undefined);
            throw new Error(tooLargeSet(size));
          }
          parts.push(chunk);
        }
      }
    } catch (err) {
      const e = err as Error;
      if (e.name === 'TimeoutError' || e.name === 'AbortError') throw new Error(`no whole answer within ${this.opts.timeoutMs} ms`);
      throw e;
    }
    return Buffer.concat(parts).toString('utf8');
  }

  /** The key set, fetched and made into a key resolver; rejects with the reason it cannot be used. */
  private async fetchSet(): Promise<LocalSet> {
    let res: Response;
    try {
      res = await this.fetchFn(this.uri, {
        signal: AbortSignal.timeout(this.opts.timeoutMs),
        headers: { accept: 'application/json, application/jwk-set+json' },
        redirect: 'manual',
      });
    } catch (err) {
      const e = err as Error;
      throw new Error(e.name === 'TimeoutError' ? `no answer within ${this.opts.timeoutMs} ms` : `${e.message}${e.cause ? ` (${(e.cause as Error).message})` : ''}`);
    }
    if (res.status !== 200) {
      await res.body?.cancel();
      throw new Error(`HTTP ${res.status}, expected 200`);
    }
    const text = await this.bodyText(res);
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      throw new Error('the answer is not JSON');
    }
    const keys = (json as { keys?: unknown } | null)?.keys;
    if (!Array.isArray(keys)) throw new Error('the answer has no "keys" list');
    // Here, not where the keys are taken into use: a set jose refuses (a member that is no JWK
    // object) is a failed fetch like any other, not an exception out of a background refresh.
    try {
      return createLocalJWKSet(json as JSONWebKeySet);
    } catch (err) {
      throw new Error(`the answer is not a valid key set: ${(err as Error).message}`);
    }
  }
}
