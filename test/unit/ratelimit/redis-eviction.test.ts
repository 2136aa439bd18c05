/**
 * A Redis whose maxmemory-policy evicts keys may evict a limit's counts, and that window then counts
 * from 0 again, silently: the store warns of such a Redis when it connects. Real redis-server processes.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { RateLimitSpec } from '../../../src/config/resource-types.js';
import { CounterStore } from '../../../src/ratelimit/local/counter-store.js';
import { RedisLimiter } from '../../../src/ratelimit/redis/limiter.js';
import { parseRedisLimitSettings } from '../../../src/ratelimit/redis/settings.js';
import { evictingPolicy } from '../../../src/ratelimit/redis/eviction.js';
import { RedisServer } from '../../helpers/redis-server.js';

const LIMIT: RateLimitSpec = { inputTokensPerUnit: 1000, outputTokensPerUnit: null, unit: 'minute', global: null, mode: 'enforce' };

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** The store's log lines once it has connected and read what the Redis answering is (INFO). */
async function linesFor(args: string[]): Promise<string[]> {
  const server = await RedisServer.start({ args });
  cleanups.push(() => server.stop());
  const logs: string[] = [];
  const limiter = new RedisLimiter(server.address, parseRedisLimitSettings({ RATE_LIMIT_REDIS_TIMEOUT: '1s' }), new CounterStore(() => Date.now()), {
    log: (m, level) => logs.push(level === 'warn' ? `warn: ${m}` : m),
  });
  cleanups.push(() => limiter.close());
  expect((await limiter.admit('ns/evict', LIMIT, 5)).allowed).toBe(true);
  await new Promise((r) => setTimeout(r, 200)); // INFO's replies
  return logs;
}

describe('a Redis that evicts keys at its maxmemory', () => {
  it('allkeys-lru with a maxmemory: one warn line naming the policy, what it does to the counts, and noeviction', async () => {
    const logs = await linesFor(['--maxmemory', '100mb', '--maxmemory-policy', 'allkeys-lru']);
    expect(logs).toHaveLength(1);
    expect(logs[0]).toMatch(/^warn: rate limit store 127\.0\.0\.1:\d+: Redis evicts keys at its maxmemory \(maxmemory-policy allkeys-lru\), the limits' counts too: a window whose counts are evicted counts from 0 again.*; set maxmemory-policy noeviction for the limiter's Redis/);
  });

  it('volatile-ttl too (the counts expire); nothing for noeviction, nor without a maxmemory', async () => {
    expect(await linesFor(['--maxmemory', '100mb', '--maxmemory-policy', 'volatile-ttl'])).toHaveLength(1);
    expect(await linesFor(['--maxmemory', '100mb', '--maxmemory-policy', 'noeviction'])).toEqual([]);
    expect(await linesFor(['--maxmemory', '0', '--maxmemory-policy', 'allkeys-lru'])).toEqual([]);
  });

  it('reads INFO memory', () => {
    expect(evictingPolicy('# Memory\r\nused_memory:1\r\nmaxmemory:104857600\r\nmaxmemory_human:100.00M\r\nmaxmemory_policy:allkeys-lfu\r\n')).toBe('allkeys-lfu');
    expect(evictingPolicy('maxmemory:0\r\nmaxmemory_policy:allkeys-lfu\r\n')).toBeNull();
    expect(evictingPolicy('')).toBeNull();
  });
});
