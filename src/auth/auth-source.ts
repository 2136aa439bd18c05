/**
 * Watches the auth file named by ROUTER_AUTH_CONFIG (config/file-watch.ts, like the resources
 * file source: inotify on the file, armed again after each change, which follows rename-on-save and
 * ConfigMap symlink swaps, with a slow poll beside it). A valid change replaces the Authenticator;
 * an invalid one keeps the last good one, is logged and counted.
 */
import { readFileSync } from 'node:fs';
import { FileWatch } from '../config/file-watch.js';
import type { Exchange } from '../http/exchange.js';
import { parseAuthConfig, type AuthConfig } from './auth-config.js';
import { parseAuthConfigOffThread } from './parse-auth-off-thread.js';
import { Authenticator, type AuthenticatorOptions } from './authenticator.js';
import type { Tenant } from './tenant.js';
import type { RateLimitSpec } from '../config/resource-types.js';

/** Reads and validates an auth file; throws AuthConfigError (or a read error) naming the file. */
export function loadAuthConfigFile(file: string): AuthConfig {
  return parseAuth(readText(file), file, false);
}

/** Auth files longer than this (in characters) are parsed in a thread of their own (parse-auth-off-thread.ts). */
export const AUTH_PARSE_OFF_THREAD_CHARS = 256 * 1024;

/** The auth file's config: a large file parsed off-thread, so the YAML parse's heap does not stay with the process. */
function parseAuth(text: string, file: string, redisCluster: boolean): AuthConfig {
  return text.length > AUTH_PARSE_OFF_THREAD_CHARS ? parseAuthConfigOffThread(text, file, redisCluster) : parseAuthConfig(text, file, redisCluster);
}

/** An AuthSource's log line and its level. */
export type AuthLog = (m: string, level: 'info' | 'warn') => void;

export class AuthSource {
  readonly file: string;
  /** Where its lines go: `warn` for a file refused, unreadable or polled and a key set not fetched, `info` for a reload applied. */
  private readonly log: AuthLog;
  private readonly warn: (m: string) => void;
  private readonly opts: AuthenticatorOptions;
  private lastText = '';
  /** The text of the config in use (the last good one). */
  private goodText = '';
  private auth: Authenticator | null = null;
  private watcher: FileWatch | null = null;
  /** Reloads rejected (invalid or unreadable file). */
  rejected = 0;

  /**
   * The pipeline's `authorize` hook: the caller's tenant, or throws RouterError 401/403 (sync for
   * API keys, a promise for JWTs). Bound, so it can be handed over as is.
   */
  readonly authorize = (x: Exchange, model: string): Tenant | Promise<Tenant> => this.current.identify(x.authorization, model);

  /** REDIS_CLUSTER: the Redis addresses a global tenant budget may name (config/addresses.ts). */
  private readonly redisCluster: boolean;

  constructor(file: string, log: AuthLog, opts: AuthenticatorOptions = {}, redisCluster = false) {
    this.file = file;
    this.redisCluster = redisCluster;
    this.log = log;
    this.warn = (m) => log(m, 'warn');
    this.opts = { log: this.warn, ...opts };
  }

  /** The Authenticator of the last good file. Throws before start(). */
  get current(): Authenticator {
    if (this.auth === null) throw new Error('AuthSource used before start()');
    return this.auth;
  }

  /** The budgets the config in use names (its keys', its JWT tenants' default and overrides). */
  rateLimits(): RateLimitSpec[] {
    const config = this.current.config;
    const out: RateLimitSpec[] = [];
    for (const k of config.apiKeys) if (k.rateLimit !== null) out.push(k.rateLimit);
    const jwt = config.jwt;
    if (jwt !== null) {
      if (jwt.rateLimit !== null) out.push(jwt.rateLimit);
      for (const l of jwt.tenantLimits.values()) out.push(l);
    }
    return out;
  }

  /** The text of the config in use: the last good one (what a worker started later falls back to). */
  get lastGoodText(): string {
    return this.goodText;
  }

  /**
   * First load: throws when the file is invalid (the router must not start on it). `intervalMs`:
   * the poll where inotify is not available. `lastGood`: the text another process last found
   * valid (a worker started after the file went bad), used when the file is unreadable or
   * invalid now; the watch then applies the file's next valid change.
   */
  start(intervalMs = 250, lastGood: string | null = null): void {
    let text = '';
    try {
      text = readText(this.file);
      this.auth = new Authenticator(parseAuth(text, this.file, this.redisCluster), this.opts);
      this.goodText = text;
    } catch (err) {
      if (lastGood === null) throw err;
      this.rejected++;
      this.warn(`auth file not usable, starting with the last good config: ${(err as Error).message}`);
      this.auth = new Authenticator(parseAuth(lastGood, this.file, this.redisCluster), this.opts);
      this.goodText = lastGood;
      if (text === '') text = lastGood; // unreadable: the watch reads again and reports
    }
    this.lastText = text;
    this.watcher = new FileWatch(this.file, () => this.reload(), { fastPollMs: intervalMs, log: this.warn });
    this.watcher.start(); // reports once when in place: a change since the read above is not missed (same text: no-op)
  }

  /** Re-reads the file; a valid change swaps the Authenticator. Returns true when swapped. */
  reload(): boolean {
    let text: string;
    try {
      text = readText(this.file);
    } catch (err) {
      this.rejected++;
      this.warn(`auth reload failed, keeping the last good config: ${(err as Error).message}`);
      return false;
    }
    if (text === this.lastText) return false;
    this.lastText = text;
    let config: AuthConfig;
    try {
      config = parseAuth(text, this.file, this.redisCluster);
    } catch (err) {
      this.rejected++;
      this.warn(`auth reload rejected, keeping the last good config: ${(err as Error).message}`);
      return false;
    }
    this.auth = new Authenticator(config, this.opts, this.auth);
    this.goodText = text;
    this.log(`auth reloaded from ${this.file}: ${config.apiKeys.length} API keys, JWT ${config.jwt === null ? 'off' : 'on'}`, 'info');
    return true;
  }

  stop(): void {
    this.watcher?.stop();
    this.watcher = null;
  }
}

/** The AuthSource for the auth file (ROUTER_AUTH_CONFIG), started; null when there is none. */
export function startAuthSource(file: string | null, log: AuthLog, redisCluster = false): AuthSource | null {
  if (file === null || file === '') return null;
  const source = new AuthSource(file, log, {}, redisCluster);
  source.start();
  return source;
}

function readText(file: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch (err) {
    throw new Error(`${file}: cannot read the auth file (ROUTER_AUTH_CONFIG): ${(err as Error).message}`);
  }
}

