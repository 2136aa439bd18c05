/** The global limiter against a real 3-node Redis Cluster (REDIS_CLUSTER=true, seed list address). */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RateLimitSpec } from '../../../src/config/resource-types.js';
import { LimitStoreUnavailableError } from '../../../src/ratelimit/errors.js';
import { RedisLimiter } from '../../../src/ratelimit/redis/limiter.js';
import { parseRedisLimitSettings } from '../../../src/ratelimit/redis/settings.js';
import { awayFromMinuteBoundary } from '../../helpers/processes.js';
import { RedisClusterServers, type RedisServer } from '../../helpers/redis-server.js';
import { NO_FALLBACK } from './no-fallback.js';
import { untilUp } from './until-up.js';

const EXAMPLE: RateLimitSpec = { inputTokensPerUnit: 10, outputTokensPerUnit: 5000, unit: 'minute', global: null, mode: 'enforce' };
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
    await awayFromMinuteBoundary(2); // no clock given: Redis's own minute must not end between the admits
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

  it('closed failure mode: a two-limit request whose second limit\'s node stalls past the timeout is answered 503 and leaves no charge on the first limit\'s node', async () => {
    const settings = parseRedisLimitSettings({ REDIS_CLUSTER: 'true', RATE_LIMIT_REDIS_FAILURE_MODE: 'closed', RATE_LIMIT_REDIS_TIMEOUT: '200ms', RATE_LIMIT_REDIS_LEASES: 'false' });
    const limiter = new RedisLimiter(cluster.address, settings, NO_FALLBACK, { clock: () => T0, log: () => {}, probeIntervalMs: 50 });
    limiters.push(limiter);
    await untilUp(limiter, 'cluster limiter');
    const start = (T0 - (T0 % 60_000)) / 1000;
    const inKey = (k: string): string => `ir:{${k}}:in:minute:${start}`;
    /** The node that serves `k`'s slot (the others answer MOVED). */
    const owner = async (k: string): Promise<RedisServer> => {
      for (const n of cluster.nodes) if (!(await n.cli('get', inKey(k))).startsWith('MOVED')) return n;
      throw new Error(`no owner for ${k}`);
    };
    const route = `default/in-order-${process.pid}`;
    const routeNode = await owner(route);
    let tenant = '';
    let tenantNode: RedisServer | null = null;
    for (let i = 0; tenantNode === null || tenantNode === routeNode; i++) {
      tenant = `tenant:key:t${i}-${process.pid}`;
      tenantNode = await owner(tenant);
    }
    // The give-back of what the route charged carries the window the route's node charged, by the
    // counters' (fixed) clock, which decides it: whatever this process's clock says (when that
    // decided, an admission begun in the last 200 ms of a real minute kept the route's 4).
    tenantNode.pause();
    let outcome: unknown;
    try {
      outcome = await Promise.resolve(limiter.admitAll([{ key: route, limit: EXAMPLE }, { key: tenant, limit: EXAMPLE }], 4)).then(() => 'admitted', (e: unknown) => e);
    } finally {
      tenantNode.resume();
    }
    expect(outcome).toBeInstanceOf(LimitStoreUnavailableError);
    await untilUp(limiter, 'cluster limiter');
    // The give-back, and the tenant node's late reply (or the route node's, when its call too ran
    // past the timeout on a busy machine): read until both counts settle at 0, for up to 5 s.
    const counts = async (): Promise<number[]> => [Number(await routeNode.cli('get', inKey(route))), Number(await tenantNode!.cli('get', inKey(tenant)))];
    let seen = await counts();
    for (let waited = 0; waited < 5000 && (seen[0] !== 0 || seen[1] !== 0); waited += 100) {
      await new Promise((r) => setTimeout(r, 100));
      seen = await counts();
    }
    expect(seen).toEqual([0, 0]);
  });
});
