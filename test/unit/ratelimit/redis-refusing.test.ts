/**
 * A Redis that answers but refuses the limiter's script (OOM at maxmemory with noeviction, an ACL
 * without a command the script calls): it answers PING, so the circuit closes and the next call
 * is refused again. One outage in the log, with what to do, not a pair of lines at every call.
 * Real redis-server processes.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { RateLimitSpec } from '../../../src/config/resource-types.js';
import { CounterStore } from '../../../src/ratelimit/local/counter-store.js';
import { RedisLimiter } from '../../../src/ratelimit/redis/limiter.js';
import { parseRedisLimitSettings } from '../../../src/ratelimit/redis/settings.js';
import { RedisServer } from '../../helpers/redis-server.js';

const T0 = Date.UTC(2025, 0, 15, 10, 30, 20);
const LIMIT: RateLimitSpec = { inputTokensPerUnit: 1000, outputTokensPerUnit: null, unit: 'minute', global: null, mode: 'enforce' };

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function until(what: string, cond: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

async function setup(server: RedisServer, env: NodeJS.ProcessEnv = {}) {
  const logs: string[] = [];
  let errors = 0;
  const settings = parseRedisLimitSettings({ RATE_LIMIT_REDIS_TIMEOUT: '1s', RATE_LIMIT_REDIS_LEASES: 'false', ...env });
  const limiter = new RedisLimiter(server.address, settings, new CounterStore(() => T0), {
    clock: () => T0,
    log: (m, level) => logs.push(level === 'warn' ? `warn: ${m}` : m),
    probeIntervalMs: 50,
    onStoreError: () => errors++,
  });
  cleanups.push(() => limiter.close());
  await until('connected', () => limiter.state === 'up');
  return { limiter, logs, errors: () => errors };
}

describe('a Redis that refuses the script but answers PING', () => {
  it('at maxmemory with noeviction: one warn line naming OOM and the fix; "available again" once a script call answers', async () => {
    const server = await RedisServer.start({ args: ['--maxmemory-policy', 'noeviction'] });
    cleanups.push(() => server.stop());
    const { limiter, logs, errors } = await setup(server);
    expect((await limiter.admit('ns/refused', LIMIT, 5)).allowed).toBe(true);

    await server.cli('CONFIG', 'SET', 'maxmemory', '1');
    // Requests keep coming for a while, each decided by the failure mode (local) when refused.
    for (let i = 0; i < 20; i++) {
      expect((await limiter.admit('ns/refused', LIMIT, 5)).allowed).toBe(true);
      await new Promise((r) => setTimeout(r, 30));
    }
    expect(errors()).toBeGreaterThan(1); // calls were tried again, and refused again
    const down = logs.filter((l) => /unavailable/.test(l));
    expect(down, JSON.stringify(logs)).toHaveLength(1);
    expect(down[0]).toMatch(/^warn: rate limit store 127\.0\.0\.1:\d+ is unavailable \(OOM command not allowed when used memory > 'maxmemory'.*\); failure mode "local" applies until it answers again; Redis is at its maxmemory and evicts nothing: raise maxmemory or free memory/);
    expect(logs.filter((l) => /available again/.test(l)), JSON.stringify(logs)).toHaveLength(0);
    // With no traffic, PING answers after the probe interval and the circuit lets calls try again:
    // Redis does not decide for all that (the store gauge stays 0) until a script call answers.
    await until('the circuit closed by a PING', () => limiter.state === 'up');
    expect(limiter.decides).toBe(false);

    await server.cli('CONFIG', 'SET', 'maxmemory', '0');
    // The next call after the probe interval answers: the outage is over.
    for (let i = 0; i < 50 && !logs.some((l) => /available again/.test(l)); i++) {
      await limiter.admit('ns/refused', LIMIT, 1);
      await new Promise((r) => setTimeout(r, 30));
    }
    expect(logs.filter((l) => /available again/.test(l))).toHaveLength(1);
    expect(logs.filter((l) => /unavailable/.test(l))).toHaveLength(1);
    expect(limiter.decides).toBe(true);
  });

  it('an ACL user whose PEXPIRE is taken away while connected: the warn line says to grant the commands docs/rate-limiting.md lists', async () => {
    const server = await RedisServer.start();
    cleanups.push(() => server.stop());
    await server.cli('ACL', 'SETUSER', 'router', 'on', '>pw', 'resetkeys', '~ir:*', 'resetchannels', '-@all', '+evalsha', '+eval', '+ping', '+info', '+quit',
      '+client|setname', '+select', '+time', '+get', '+mget', '+set', '+del', '+incrby', '+decrby', '+pexpire');
    const { limiter, logs } = await setup(server, { REDIS_USERNAME: 'router', REDIS_PASSWORD: 'pw' });
    // Without PEXPIRE from the start, the check at the connection says so (redis-acl-user.test.ts).
    await server.cli('ACL', 'SETUSER', 'router', '-pexpire');
    await limiter.admit('ns/acl', LIMIT, 5); // the window's first admission sets the expiry: refused
    await until('the line', () => logs.some((l) => /unavailable/.test(l)));
    expect(logs[0]).toMatch(/can't run this command.*; the Redis user may not run a command the limiter sends or its scripts call: grant those docs\/rate-limiting\.md lists \(The Redis user\)$/);
  });
});
