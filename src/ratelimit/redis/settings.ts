import { readFileSync } from 'node:fs';
import { durationSetting } from '../../config/duration-setting.js';
import { alternatives, badSetting } from '../../setting-message.js';
import { LEASES_FORFEIT_MS } from './lua/counters.js';

/** What a global limiter does while its Redis cannot answer in time. */
export type RedisFailureMode = 'local' | 'open' | 'closed';

export const REDIS_FAILURE_MODES: readonly RedisFailureMode[] = ['local', 'open', 'closed'];

/**
 * Process-wide settings of the global (Redis) rate limit store, read from the environment once.
 * Credentials and TLS never come from a resource, only from here.
 */
export interface RedisLimitSettings {
  /** RATE_LIMIT_REDIS_FAILURE_MODE: local (default), open or closed. */
  readonly failureMode: RedisFailureMode;
  /** RATE_LIMIT_REDIS_TIMEOUT: the longest a request waits for Redis, ms (default 50). */
  readonly timeoutMs: number;
  /** REDIS_USERNAME (ACL user), or null. */
  readonly username: string | null;
  /** REDIS_PASSWORD, or null. */
  readonly password: string | null;
  /** REDIS_TLS=true: connect with TLS (rediss:// addresses always do). */
  readonly tls: boolean;
  /**
   * REDIS_TLS_CA_FILE: PEM certificates of the CAs a TLS connection trusts instead of Node's
   * default list (read and checked at start), or null for the default list (which honours
   * NODE_EXTRA_CA_CERTS).
   */
  readonly tlsCa: string | null;
  /** REDIS_CLUSTER=true: the address names Redis Cluster seed nodes. */
  readonly cluster: boolean;
  /**
   * RATE_LIMIT_REDIS_LEASES: workers take leases of a window's input budget from Redis and
   * admit from them without a call (leases.ts; docs/rate-limiting.md). Default true; false
   * decides every admission in Redis.
   */
  readonly leases: boolean;
  /**
   * RATE_LIMIT_REDIS_RECALL_WAIT: the longest a request that fits only once leases out come back
   * waits for them, ms (default 500; 0 refuses it at once). At most LEASES_FORFEIT_MS: leases
   * still out by then are forfeit and such a request is refused anyway.
   */
  readonly recallWaitMs: number;
}

export const DEFAULT_REDIS_TIMEOUT_MS = 50;
export const DEFAULT_RECALL_WAIT_MS = 500;

/** Parses and freezes the Redis limit settings; every error names the variable and what it accepts. */
export function parseRedisLimitSettings(env: NodeJS.ProcessEnv): RedisLimitSettings {
  return Object.freeze({
    failureMode: failureMode(env.RATE_LIMIT_REDIS_FAILURE_MODE),
    timeoutMs: durationSetting('RATE_LIMIT_REDIS_TIMEOUT', env.RATE_LIMIT_REDIS_TIMEOUT, DEFAULT_REDIS_TIMEOUT_MS, { min: 1, max: 60_000 }),
    username: optionalString(env.REDIS_USERNAME),
    password: optionalString(env.REDIS_PASSWORD),
    tls: bool('REDIS_TLS', env.REDIS_TLS),
    tlsCa: caFile(env.REDIS_TLS_CA_FILE),
    cluster: bool('REDIS_CLUSTER', env.REDIS_CLUSTER),
    leases: bool('RATE_LIMIT_REDIS_LEASES', env.RATE_LIMIT_REDIS_LEASES, true),
    recallWaitMs: durationSetting('RATE_LIMIT_REDIS_RECALL_WAIT', env.RATE_LIMIT_REDIS_RECALL_WAIT, DEFAULT_RECALL_WAIT_MS, { min: 0, max: LEASES_FORFEIT_MS }),
  });
}

function failureMode(raw: string | undefined): RedisFailureMode {
  if (raw === undefined || raw === '') return 'local';
  const v = raw.trim().toLowerCase();
  if ((REDIS_FAILURE_MODES as readonly string[]).includes(v)) return v as RedisFailureMode;
  throw new Error(badSetting('RATE_LIMIT_REDIS_FAILURE_MODE', alternatives(REDIS_FAILURE_MODES), raw));
}

function bool(name: string, raw: string | undefined, unset = false): boolean {
  if (raw === undefined || raw === '') return unset;
  const v = raw.trim().toLowerCase();
  if (v === 'true' || v === '1') return true;
  if (v === 'false' || v === '0') return false;
  throw new Error(badSetting(name, 'true or false', raw));
}

/** The PEM text of REDIS_TLS_CA_FILE; it must be readable and hold at least one certificate. */
function caFile(raw: string | undefined): string | null {
  if (raw === undefined || raw === '') return null;
  let pem: string;
  try {
    pem = readFileSync(raw, 'utf8');
  } catch (err) {
    throw new Error(`${badSetting('REDIS_TLS_CA_FILE', 'a readable PEM file of CA certificates', raw)} (cannot read it: ${(err as Error).message})`);
  }
  if (!pem.includes('-----BEGIN CERTIFICATE-----')) {
    throw new Error(`${badSetting('REDIS_TLS_CA_FILE', 'a PEM file of CA certificates', raw)} (it holds no "-----BEGIN CERTIFICATE-----")`);
  }
  return pem;
}

function optionalString(raw: string | undefined): string | null {
  return raw === undefined || raw === '' ? null : raw;
}
