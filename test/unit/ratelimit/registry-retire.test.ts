/**
 * A Redis store a reload stopped naming (its limits moved to another address, or gone): left out of
 * the store gauge at once (it would read 0 for good once that Redis is taken away), and closed
 * RETIRED_STORE_CLOSE_MS later, unless a configuration names it again meanwhile. Real redis-servers.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RateLimitSpec } from '../../../src/config/resource-types.js';
import { CounterStore } from '../../../src/ratelimit/local/counter-store.js';
import { LimiterRegistry, RETIRED_STORE_CLOSE_MS } from '../../../src/ratelimit/registry.js';
import type { RedisLimiter } from '../../../src/ratelimit/redis/limiter.js';
import { parseRedisLimitSettings } from '../../../src/ratelimit/redis/settings.js';
import { RedisServer } from '../../helpers/redis-server.js';
import { untilUp } from './until-up.js';

let x: RedisServer;
let y: RedisServer;
beforeAll(async () => {
  [x, y] = await Promise.all([RedisServer.start(), RedisServer.start()]);
});
afterAll(async () => {
  await Promise.all([x.stop(), y.stop()]);
});

const spec = (address: string): RateLimitSpec => ({ inputTokensPerUnit: 100, outputTokensPerUnit: null, unit: 'minute', global: { redis: { address } }, mode: 'enforce' });

/** The router's limiter connections open on `server` (its client name). */
async function limiterConnections(server: RedisServer): Promise<number> {
  return (await server.cli('client', 'list')).split('\n').filter((l) => l.includes('name=inference-router-limiter')).length;
}

async function until(what: string, cond: () => Promise<boolean>): Promise<void> {
  for (let i = 0; i < 500; i++) {
    if (await cond()) return;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error(`timed out waiting for ${what}`);
}

describe('LimiterRegistry: stores no configuration names', () => {
  it('are left out of the store states at once and closed RETIRED_STORE_CLOSE_MS later; named again meanwhile, kept', async () => {
    let configured: RateLimitSpec[] = [spec(x.address)];
    const registry = new LimiterRegistry(new CounterStore(), parseRedisLimitSettings({}), { log: () => {} }, () => configured);
    try {
      const onX = registry.limiterFor(spec(x.address)) as RedisLimiter;
      await untilUp(onX);
      expect(registry.storeStates()).toEqual([{ store: x.address, up: true }]);
      // A reload moves the limit to y: x is no longer shown, but kept (requests admitted there settle there).
      configured = [spec(y.address)];
      await untilUp(registry.limiterFor(spec(y.address)) as RedisLimiter);
      expect(registry.storeStates()).toEqual([{ store: y.address, up: true }]);
      const t0 = 1_000_000;
      await registry.retire(t0);
      await registry.retire(t0 + RETIRED_STORE_CLOSE_MS - 1);
      expect(await limiterConnections(x)).toBe(1);
      // Named again before its time: kept, and its time starts over once it is not.
      configured = [spec(x.address), spec(y.address)];
      await registry.retire(t0 + RETIRED_STORE_CLOSE_MS + 1);
      expect(await limiterConnections(x)).toBe(1);
      expect(registry.storeStates().map((s) => s.store).sort()).toEqual([x.address, y.address].sort());
      configured = [spec(y.address)];
      const t1 = t0 + 2 * RETIRED_STORE_CLOSE_MS;
      await registry.retire(t1);
      await registry.retire(t1 + RETIRED_STORE_CLOSE_MS - 1);
      expect(await limiterConnections(x)).toBe(1);
      await registry.retire(t1 + RETIRED_STORE_CLOSE_MS);
      await until('x closed', async () => (await limiterConnections(x)) === 0);
      expect(await limiterConnections(y)).toBe(1);
      // A limit naming x again gets a new client.
      configured = [spec(x.address)];
      await untilUp(registry.limiterFor(spec(x.address)) as RedisLimiter);
      expect(await limiterConnections(x)).toBe(1);
      expect(registry.storeStates()).toEqual([{ store: x.address, up: true }]);
    } finally {
      await registry.close();
    }
  });
});
