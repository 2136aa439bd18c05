/** The global limiter against a real 3-node Redis Cluster (REDIS_CLUSTER=true, seed list address). */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RateLimitSpec } from '../../../src/config/resource-types.js';
import { RedisLimiter } from '../../../src/ratelimit/redis/limiter.js';
import { parseRedisLimitSettings } from '../../../src/ratelimit/redis/settings.js';
import { RedisClusterServers } from '../../helpers/redis-server.js';
import { NO_FALLBACK } from './no-fallback.js';
import { untilUp } from './until-up.js';

const EXAMPLE: RateLimitSpec = { inputTokensPerUnit: 10, outputTokensPerUnit: 5000, unit: 'minute', global: null };
const T0 = Date.UTC(2025, 0, 15, 10, 30, 20);


let cluster: RedisClusterServers;
const limiters: RedisLimiter[] = [];

async function clusterLimiter(clock?: () => number): Promise<RedisLimiter> {
  const settings = parseRedisLimitSettings({ REDIS_CLUSTER: 'true', RATE_LIMIT_REDIS_FAILURE_MODE: 'closed', RATE_LIMIT_REDIS_TIMEOUT: '2s' });
  const limiter = new RedisLimiter(cluster.address, settings, NO_FALLBACK, { clock, log: () => {} });
  limiters.push(limiter);
  await untilUp(limiter, 'cluster limiter');
  return limiter;
}

beforeAll(async () => {
  cluster = await RedisClusterServers.start(3);
});

afterAll(async () => {
  await Promise.all(limiters.map((l) => l.close()));
  await cluster?.stop();
});

describe('RedisLimiter on Redis Cluster', () => {
  it('the documented example: 10 input tokens per minute, 4 + 4 admitted, the third 4 rejected by input', async () => {
    const limiter = await clusterLimiter();
    const route = `default/sf-route-${process.pid}`;
    const d = [await limiter.admit(route, EXAMPLE, 4), await limiter.admit(route, EXAMPLE, 4), await limiter.admit(route, EXAMPLE, 4)];
    expect(d.map((x) => x.allowed)).toEqual([true, true, false]);
    expect(d[2].rejectedBy).toBe('input');
    expect(d[2].input?.remaining).toBe(2);
    await limiter.chargeOutput(route, EXAMPLE, 12);
    await limiter.adjustInput(route, EXAMPLE, -8);
    const after = await limiter.admit(route, EXAMPLE, 4);
    expect(after.allowed).toBe(true);
    expect(after.output?.remaining).toBe(5000 - 12);
  });

  it('routes spread over the slots of all nodes, each decided on its own node; two clients share budgets', async () => {
    const a = await clusterLimiter(() => T0);
    const b = await clusterLimiter(() => T0);
    const routes = Array.from({ length: 30 }, (_, i) => `ns-${i}/route-${process.pid}`);
    for (const r of routes) {
      expect((await a.admit(r, EXAMPLE, 6)).allowed).toBe(true);
      const second = await b.admit(r, EXAMPLE, 6);
      expect(second.rejectedBy).toBe('input');
      expect(second.input?.remaining).toBe(4);
    }
    // The keys of the routes live on more than one node (the hash tag picks the slot).
    const start = (T0 - (T0 % 60_000)) / 1000;
    const owners = new Set<number>();
    for (const node of cluster.nodes) {
      for (const r of routes) {
        const slot = Number(await node.cli('cluster', 'keyslot', `ir:{${r}}:in:minute:${start}`));
        const keys = Number(await node.cli('cluster', 'countkeysinslot', String(slot)));
        if (keys > 0) owners.add(node.port);
      }
    }
    expect(owners.size).toBeGreaterThan(1);
  });
});
