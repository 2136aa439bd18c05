/**
 * The Redis ACL that docs/rate-limiting.md gives the router's user is enough: a real redis-server
 * with a user allowed only those commands and the `ir:*` keys runs the limiter's conformance
 * suite, leased admissions, and a give-back after a stall (the read of which instance answers,
 * INFO), with no permission error logged; without INFO the read fails and says so.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { RateLimitSpec } from '../../../src/config/resource-types.js';
import { CounterStore } from '../../../src/ratelimit/local/counter-store.js';
import { RedisLimiter } from '../../../src/ratelimit/redis/limiter.js';
import { parseRedisLimitSettings } from '../../../src/ratelimit/redis/settings.js';
import { RedisClusterServers, RedisServer } from '../../helpers/redis-server.js';
import { NO_FALLBACK } from './no-fallback.js';
import { runLimiterConformance } from './limiter-conformance.js';
import { untilUp } from './until-up.js';

/** docs/rate-limiting.md, "The Redis user": the user's rules after `on >password` (and those a Cluster adds). */
const DOCUMENTED_RULES = ['resetkeys', '~ir:*', 'resetchannels', '-@all', '+evalsha', '+eval', '+ping', '+info', '+quit', '+client|setname', '+select', '+time', '+get', '+mget', '+set', '+del', '+incrby', '+decrby', '+pexpire'];
const CLUSTER_RULES = ['+cluster|slots', '+cluster|info'];
const PASSWORD = 'limiter-secret';
const limit: RateLimitSpec = { inputTokensPerUnit: 100, outputTokensPerUnit: 1000, unit: 'minute', global: null, mode: 'enforce' };

let server: RedisServer;
beforeAll(async () => {
  server = await RedisServer.start();
  await server.cli('acl', 'setuser', 'router', 'on', `>${PASSWORD}`, ...DOCUMENTED_RULES);
  await server.cli('acl', 'setuser', 'router-no-info', 'on', `>${PASSWORD}`, ...DOCUMENTED_RULES.filter((r) => r !== '+info'));
});
afterAll(async () => {
  server.resume();
  await server.stop();
});

/** The limit store's settings as Redis user `user`, with `env` on top (`local` failure mode, 2 s timeout, leases on unless said). */
function userSettings(user: string, env: Record<string, string> = {}) {
  return parseRedisLimitSettings({
    REDIS_USERNAME: user, REDIS_PASSWORD: PASSWORD, RATE_LIMIT_REDIS_FAILURE_MODE: 'local', RATE_LIMIT_REDIS_TIMEOUT: '2s', ...env,
  });
}

runLimiterConformance('RedisLimiter as a Redis user with the documented ACL', async (clock) => {
  const limiter = new RedisLimiter(server.address, userSettings('router', { RATE_LIMIT_REDIS_FAILURE_MODE: 'closed' }), NO_FALLBACK, { clock, log: () => {} });
  await untilUp(limiter);
  return { limiter, cleanup: () => limiter.close() };
});

let seq = 0;
const route = (): string => `acl-${process.pid}/r${++seq}`;
const landed = (ms = 300): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Admits 6 and 4 tokens, stalls Redis (the circuit opens), gives 4 back once it answers again; the count then, and the log. */
async function giveBackAfterStall(user: string): Promise<{ count: number; lines: string[]; warned: string[] }> {
  const warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
  const lines: string[] = [];
  const l = new RedisLimiter(server.address, userSettings(user, { RATE_LIMIT_REDIS_TIMEOUT: '200ms', RATE_LIMIT_REDIS_LEASES: 'false' }), new CounterStore(), {
    log: (m, level) => lines.push(`${level ?? 'info'} ${m}`), settleWaitMs: 5, probeIntervalMs: 50, reconnectCapMs: 100,
  });
  try {
    await untilUp(l);
    await landed();
    const r = route();
    const before = Date.now();
    expect((await l.admit(r, limit, 6)).allowed).toBe(true);
    expect((await l.admit(r, limit, 4)).allowed).toBe(true);
    server.pause();
    await Promise.resolve(l.admit(`${r}-other`, limit, 1)).then(() => {}, () => {}); // times out: the circuit opens
    expect(l.state).toBe('down');
    server.resume();
    await untilUp(l);
    await l.adjustInput(r, limit, -4, false, before);
    let count = 0;
    for (let waited = 0; waited < 3000; waited += 100) {
      await landed(100);
      const keys = (await server.cli('--scan', '--pattern', `ir:{${r}}:in:*`)).split('\n').filter((k) => k !== '');
      count = keys.length === 1 ? Number(await server.cli('get', keys[0])) : -1;
      if (count === 6) break;
    }
    return { count, lines, warned: warn.mock.calls.map((c) => String(c[0])) };
  } finally {
    warn.mockRestore();
    await l.close();
  }
}

describe('the documented ACL', () => {
  it('leased admissions, output charges and give-backs run with no permission error', async () => {
    const lines: string[] = [];
    const l = new RedisLimiter(server.address, userSettings('router'), new CounterStore(), { log: (m, level) => lines.push(`${level ?? 'info'} ${m}`) });
    try {
      await untilUp(l);
      const r = route();
      for (let i = 0; i < 5; i++) expect((await l.admit(r, limit, 3)).allowed).toBe(true);
      await l.chargeOutput(r, limit, 20);
      await l.adjustInput(r, limit, -2);
      expect(l.state).toBe('up');
      expect(lines.filter((x) => x.startsWith('warn'))).toEqual([]);
    } finally {
      await l.close();
    }
  });

  it('a give-back held while Redis stalled is taken off once it answers again (INFO allowed)', async () => {
    const { count, lines, warned } = await giveBackAfterStall('router');
    expect(count).toBe(6);
    expect(lines.filter((x) => /NOPERM|could not be read/.test(x))).toEqual([]);
    expect(warned).toEqual([]);
  });

  it('without INFO: each read (the first connection, the end of the stall) fails with a warn line naming NOPERM, and the held give-back is dropped', async () => {
    const { count, lines, warned } = await giveBackAfterStall('router-no-info');
    expect(count).toBe(10);
    expect(lines.filter((x) => x.includes('could not be read (INFO server: NOPERM'))).toHaveLength(2);
    // The Redis client's own ready check reads INFO too, and says so on stderr (console.warn).
    expect(warned.length).toBeGreaterThan(0);
    expect(warned.every((w) => w.includes('INFO command fails'))).toBe(true);
  });
});

describe('the documented ACL on a Redis Cluster', () => {
  it('admissions on the nodes their slots name, output charges and give-backs run with no permission error', async () => {
    const cluster = await RedisClusterServers.start(3);
    const lines: string[] = [];
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
    let l: RedisLimiter | null = null;
    try {
      for (const n of cluster.nodes) await n.cli('acl', 'setuser', 'router', 'on', `>${PASSWORD}`, ...DOCUMENTED_RULES, ...CLUSTER_RULES);
      const settings = userSettings('router', { REDIS_CLUSTER: 'true', RATE_LIMIT_REDIS_FAILURE_MODE: 'closed' });
      l = new RedisLimiter(cluster.address, settings, NO_FALLBACK, { log: (m, level) => lines.push(`${level ?? 'info'} ${m}`) });
      await untilUp(l, 'cluster limiter');
      const routes = Array.from({ length: 12 }, (_, i) => `acl-${i}/r-${process.pid}`);
      for (const r of routes) {
        expect((await l.admit(r, limit, 30)).allowed).toBe(true);
        await l.settle(r, limit, -10, 5);
      }
      // Each route's keys are on exactly one node: the one its slot names (the script ran there).
      for (const r of routes) {
        const slot = await cluster.nodes[0].cli('cluster', 'keyslot', `ir:{${r}}`);
        const holding: number[] = [];
        for (let i = 0; i < cluster.nodes.length; i++) if (Number(await cluster.nodes[i].cli('cluster', 'countkeysinslot', slot)) > 0) holding.push(i);
        expect(holding, `the nodes holding ${r}'s keys (slot ${slot})`).toHaveLength(1);
      }
      expect(lines.filter((x) => x.startsWith('warn'))).toEqual([]);
      expect(warn.mock.calls).toEqual([]);
    } finally {
      warn.mockRestore();
      await l?.close();
      await cluster.stop();
    }
  });
});
