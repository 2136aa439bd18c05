import type { TokenLimiter } from '../limiter.js';
import { RedisLimiter, type RedisLimiterOptions } from './limiter.js';
import type { RedisLimitSettings } from './settings.js';

/** One limiter (one Redis client) per distinct address in this process, shared by every limit. */
const limiters = new Map<string, RedisLimiter>();

/** The key of an address (as a limit names it) in this process's limiters. */
export function redisAddressKey(address: string): string {
  return address.trim();
}

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
  const key = redisAddressKey(address);
  let limiter = limiters.get(key);
  if (limiter === undefined) {
    limiter = new RedisLimiter(key, settings, fallback, opts);
    limiters.set(key, limiter);
  }
  return limiter;
}

/**
 * Closes the limiter of each address `retired` says to (no configuration has named it for long
 * enough), taking it out of the process's limiters: a limit naming the address again gets a new one.
 */
export async function closeRetiredRedisLimiters(retired: (key: string) => boolean): Promise<void> {
  const closing: RedisLimiter[] = [];
  for (const [key, l] of limiters) {
    if (!retired(key)) continue;
    limiters.delete(key);
    closing.push(l);
  }
  await Promise.all(closing.map((l) => l.close()));
}

/** Closes every limiter of this process (on shutdown). */
export async function closeRedisLimiters(): Promise<void> {
  const all = [...limiters.values()];
  limiters.clear();
  await Promise.all(all.map((l) => l.close()));
}

/**
 * Each limit store of this process whose address `shown` takes (its address as logs show it), and
 * whether Redis decides now (RedisLimiter.decides).
 */
export function redisStoreStates(shown: (key: string) => boolean = () => true): { readonly store: string; readonly up: boolean }[] {
  const out: { store: string; up: boolean }[] = [];
  for (const [key, l] of limiters) if (shown(key)) out.push({ store: l.name, up: l.decides });
  return out;
}
