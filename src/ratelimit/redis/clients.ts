import type { TokenLimiter } from '../limiter.js';
import { RedisLimiter, type RedisLimiterOptions } from './limiter.js';
import type { RedisLimitSettings } from './settings.js';

/** One limiter (one Redis client) per distinct address in this process, shared by every limit. */
const limiters = new Map<string, RedisLimiter>();

/**
 * The process's limiter for `address`, created on first use. Later calls with the same address
 * return the same limiter; their settings, fallback and options are those of the first call.
 */
export function redisLimiterFor(
  address: string,
  settings: RedisLimitSettings,
  fallback: TokenLimiter,
  opts?: RedisLimiterOptions,
): RedisLimiter {
  const key = address.trim();
  let limiter = limiters.get(key);
  if (limiter === undefined) {
    limiter = new RedisLimiter(key, settings, fallback, opts);
    limiters.set(key, limiter);
  }
  return limiter;
}

/** Closes every limiter of this process (on shutdown). */
export async function closeRedisLimiters(): Promise<void> {
  const all = [...limiters.values()];
  limiters.clear();
  await Promise.all(all.map((l) => l.close()));
}

/** Each limit store of this process (its address as logs show it) and whether Redis decides now (state up). */
export function redisStoreStates(): { readonly store: string; readonly up: boolean }[] {
  const out: { store: string; up: boolean }[] = [];
  for (const l of limiters.values()) out.push({ store: l.name, up: l.state === 'up' });
  return out;
}
