/**
 * Watches the auth file named by ROUTER_AUTH_CONFIG (config/file-watch.ts, like the resources
 * file source: inotify on the file, armed again after each change, which follows rename-on-save and
 * ConfigMap symlink swaps, with a slow poll beside it). The primary alone follows the file: a valid
 * change becomes the config in use and is handed to `onApplied` (the primary sends it to its
 * workers, which check credentials with it: worker/worker-auth.ts); an invalid one keeps the last
 * good one, is logged and counted.
 */
import { readFileSync } from 'node:fs';
import { FileWatch } from '../config/file-watch.js';
import { PARSE_IN_PLACE_CHARS } from '../config/parse-off-thread.js';
import { parseAuthConfig, type AuthConfig } from './auth-config.js';
import { AUTH_PARSE_THREAD, parseAuthConfigInThread, parseAuthConfigOffThread } from './parse-auth-off-thread.js';

/** Reads and validates an auth file; throws AuthConfigError (or a read error) naming the file. */
export function loadAuthConfigFile(file: string): AuthConfig {
  return parseAuth(readText(file), file, false);
}

/** Auth files longer than this (in characters) are parsed in a thread of their own (parse-auth-off-thread.ts). */
export const AUTH_PARSE_OFF_THREAD_CHARS = 256 * 1024;

/** The auth file's config: a large file parsed off-thread, so the YAML parse's heap does not stay with the process. */
function parseAuth(text: string, file: string, redisCluster: boolean, thread: URL = AUTH_PARSE_THREAD): AuthConfig {
  return text.length > AUTH_PARSE_OFF_THREAD_CHARS ? parseAuthConfigOffThread(text, file, redisCluster, thread) : parseAuthConfig(text, file, redisCluster);
}

export interface AuthSourceOptions {
  /** REDIS_CLUSTER: the Redis addresses a global tenant budget may name (config/addresses.ts). */
  readonly redisCluster?: boolean;
  /** Told each config put in use, the first one included (the primary sends it to its workers). */
  readonly onApplied?: (config: AuthConfig) => void;
  /** The parser thread's module (tests run the built one). */
  readonly parseThread?: URL;
}

/** An AuthSource's log line and its level. */
export type AuthLog = (m: string, level: 'info' | 'warn') => void;

export class AuthSource {
  readonly file: string;
  /** Where its lines go: `warn` for a file refused, unreadable or polled, `info` for a reload applied. */
  private readonly log: AuthLog;
  private readonly warn: (m: string) => void;
  private lastText = '';
  private inUse: AuthConfig | null = null;
  private watcher: FileWatch | null = null;
  /** The reload in progress (a large file's parse runs off the event loop), or null. */
  private reloading: Promise<boolean> | null = null;
  /** The file changed again while a reload was in progress: read it once more after that one. */
  private reloadAgain = false;
  private stopped = false;
  /** Reloads rejected (invalid or unreadable file). */
  rejected = 0;

  /** REDIS_CLUSTER: the Redis addresses a global tenant budget may name (config/addresses.ts). */
  private readonly redisCluster: boolean;
  /** The parser thread's module (tests run the built one). */
  private readonly parseThread: URL;
  /** Told each config put in use, the first one included. */
  private readonly onApplied: (config: AuthConfig) => void;

  constructor(file: string, log: AuthLog, opts: AuthSourceOptions = {}) {
    this.parseThread = opts.parseThread ?? AUTH_PARSE_THREAD;
    this.onApplied = opts.onApplied ?? (() => undefined);
    const redisCluster = opts.redisCluster ?? false;
    this.file = file;
    this.redisCluster = redisCluster;
    this.log = log;
    this.warn = (m) => log(m, 'warn');
  }

  /** The config of the last good file. Throws before start(). */
  get config(): AuthConfig {
    if (this.inUse === null) throw new Error('AuthSource used before start()');
    return this.inUse;
  }

  /**
   * First load: throws when the file is unreadable or invalid (the router must not start on it).
   * `intervalMs`: the poll where inotify is not available.
   */
  start(intervalMs = 250): void {
    const text = readText(this.file);
    const config = parseAuth(text, this.file, this.redisCluster, this.parseThread);
    this.inUse = config;
    this.lastText = text;
    this.onApplied(config);
    this.watcher = new FileWatch(this.file, () => void this.reload(), { fastPollMs: intervalMs, log: this.warn });
    this.watcher.start(); // reports once when in place: a change since the read above is not missed (same text: no-op)
  }

  /**
   * Re-reads the file; a valid change becomes the config in use. Resolves true when one did. The
   * process goes on (the workers serving with the config in use) until the new one is in place. A
   * change while a reload is in progress is read once that one is over (the same promise), so the
   * last text written is the one that ends up applied, and a parse that ends late never replaces a
   * newer config.
   */
  reload(): Promise<boolean> {
    if (this.reloading !== null) this.reloadAgain = true;
    else this.reloading = this.reloadUntilRead();
    return this.reloading;
  }

  private async reloadUntilRead(): Promise<boolean> {
    let swapped = false;
    try {
      do {
        this.reloadAgain = false;
        if (await this.reloadOnce()) swapped = true;
      } while (this.reloadAgain && !this.stopped);
    } finally {
      this.reloading = null;
    }
    return swapped;
  }

  private async reloadOnce(): Promise<boolean> {
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
      // Longer than the resources file's bound (what a parse of that size holds the event loop is
      // measured there): parsed in a thread while the process goes on serving with the config in use.
      config = text.length > PARSE_IN_PLACE_CHARS
        ? await parseAuthConfigInThread(text, this.file, this.redisCluster, this.parseThread)
        : parseAuthConfig(text, this.file, this.redisCluster);
    } catch (err) {
      if (this.stopped) return false;
      this.rejected++;
      this.warn(`auth reload rejected, keeping the last good config: ${(err as Error).message}`);
      return false;
    }
    if (this.stopped) return false;
    this.inUse = config;
    this.onApplied(config);
    this.log(`auth reloaded from ${this.file}: ${config.apiKeys.length} API keys, JWT ${config.jwt === null ? 'off' : 'on'}`, 'info');
    return true;
  }

  /** Stops the watch; a reload in progress then changes nothing. */
  stop(): void {
    this.stopped = true;
    this.watcher?.stop();
    this.watcher = null;
  }
}

/** The AuthSource for the auth file (ROUTER_AUTH_CONFIG), started; null when there is none. */
export function startAuthSource(file: string | null, log: AuthLog, opts: AuthSourceOptions = {}): AuthSource | null {
  if (file === null || file === '') return null;
  const source = new AuthSource(file, log, opts);
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

