import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { RateLimitSpec, WindowUnit } from '../../../src/config/resource-types.js';
import { CounterStore } from '../../../src/ratelimit/local/counter-store.js';
import type { Clock } from '../../../src/clock.js';
import type { Decision, TokenLimiter } from '../../../src/ratelimit/limiter.js';
import { LimitStoreUnavailableError, LimiterUnavailableError } from '../../../src/ratelimit/errors.js';
import { closeRedisLimiters, redisLimiterFor } from '../../../src/ratelimit/redis/clients.js';
import { RedisLimiter, type RedisLimiterOptions } from '../../../src/ratelimit/redis/limiter.js';
import { parseRedisLimitSettings, type RedisFailureMode, type RedisLimitSettings } from '../../../src/ratelimit/redis/settings.js';
import { secondsUntilReset } from '../../../src/ratelimit/windows.js';
import { awayFromMinuteBoundary } from '../../helpers/processes.js';
import { RedisServer } from '../../helpers/redis-server.js';
import { runLimiterConformance } from './limiter-conformance.js';
import { NO_FALLBACK } from './no-fallback.js';

const EXAMPLE: RateLimitSpec = { inputTokensPerUnit: 10, outputTokensPerUnit: 5000, unit: 'minute', global: null, mode: 'enforce' };
const T0 = Date.UTC(2025, 0, 15, 10, 30, 20);

function settings(mode: RedisFailureMode = 'local', timeoutMs = 50): RedisLimitSettings {
  return parseRedisLimitSettings({ RATE_LIMIT_REDIS_FAILURE_MODE: mode, RATE_LIMIT_REDIS_TIMEOUT: `${timeoutMs}ms` });
}


async function until(what: string, cond: () => boolean | Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

const open: RedisLimiter[] = [];
async function connected(address: string, s: RedisLimitSettings, fallback: TokenLimiter, opts: RedisLimiterOptions = {}): Promise<RedisLimiter> {
  const limiter = new RedisLimiter(address, s, fallback, { log: () => {}, ...opts });
  open.push(limiter);
  await until(`redis limiter ${address} healthy`, () => limiter.state === 'up');
  return limiter;
}

let server: RedisServer;
let seq = 0;
const uniqueRoute = (): string => `test-${process.pid}/r${++seq}`;

beforeAll(async () => {
  server = await RedisServer.start();
});

afterAll(async () => {
  await Promise.all(open.map((l) => l.close()));
  await server?.stop();
});

// Generous timeout here: these tests are about semantics, not about the failure path.
runLimiterConformance('RedisLimiter (injected clock passed to the scripts)', async (clock) => {
  const limiter = await connected(server.address, settings('closed', 2_000), NO_FALLBACK, { clock });
  return { limiter, cleanup: () => limiter.close() };
});

describe('RedisLimiter against a real redis-server', () => {
  it('server clock (no clock given): the documented example, reset within the minute', async () => {
    const limiter = await connected(server.address, settings('closed', 2_000), NO_FALLBACK);
    await awayFromMinuteBoundary(2); // the server's minute must not end between the three admits
    const r = uniqueRoute();
    const a = await limiter.admit(r, EXAMPLE, 4);
    const b = await limiter.admit(r, EXAMPLE, 4);
    const c = await limiter.admit(r, EXAMPLE, 4);
    expect([a.allowed, b.allowed, c.allowed]).toEqual([true, true, false]);
    expect(c.rejectedBy).toBe('input');
    expect(c.input?.remaining).toBe(2);
    expect(c.retryAfterSeconds).toBeGreaterThanOrEqual(1);
    expect(c.retryAfterSeconds).toBeLessThanOrEqual(60);
    // The window key is named after the Redis server's clock.
    const serverSeconds = Number((await server.cli('time')).split('\n')[0]);
    const start = serverSeconds - (serverSeconds % 60);
    const keys = (await server.cli('--scan', '--pattern', `ir:{${r}}:*`)).split('\n');
    expect(keys.some((k) => k === `ir:{${r}}:in:minute:${start}` || k === `ir:{${r}}:in:minute:${start - 60}`)).toBe(true);
  });

  it('keys carry the route hash tag and expire after the window plus a margin', async () => {
    const clock: Clock = () => T0;
    const limiter = await connected(server.address, settings('closed', 2_000), NO_FALLBACK, { clock });
    const r = uniqueRoute();
    await limiter.admit(r, EXAMPLE, 4);
    await limiter.chargeOutput(r, EXAMPLE, 7);
    const start = (T0 - (T0 % 60_000)) / 1000;
    expect(await server.cli('get', `ir:{${r}}:in:minute:${start}`)).toBe('4');
    expect(await server.cli('get', `ir:{${r}}:out:minute:${start}`)).toBe('7');
    const ttl = Number(await server.cli('pttl', `ir:{${r}}:in:minute:${start}`));
    expect(ttl).toBeGreaterThan(40_000);
    expect(ttl).toBeLessThanOrEqual(40_000 + 60_000);
    await limiter.adjustInput(r, EXAMPLE, -1);
    expect(await server.cli('get', `ir:{${r}}:in:minute:${start}`)).toBe('3');
    expect(Number(await server.cli('pttl', `ir:{${r}}:in:minute:${start}`))).toBeGreaterThan(40_000);
  });

  it('braces in a route key cannot break the hash tag', async () => {
    const limiter = await connected(server.address, settings('closed', 2_000), NO_FALLBACK, { clock: () => T0 });
    const a = `ns/x}{y-${++seq}`;
    await limiter.admit(a, EXAMPLE, 4);
    const keys = await server.cli('--scan', '--pattern', `ir:{ns/x%7D%7By-${seq}}:*`);
    expect(keys).toContain(':in:minute:');
  });

  it('calendar months computed in Lua match UTC calendar math, incl. leap years and centuries', async () => {
    let now = 0;
    const limiter = await connected(server.address, settings('closed', 2_000), NO_FALLBACK, { clock: () => now });
    const limit: RateLimitSpec = { inputTokensPerUnit: 1, outputTokensPerUnit: null, unit: 'month', global: null, mode: 'enforce' };
    const instants = [
      Date.UTC(1970, 0, 1), Date.UTC(2000, 1, 29, 23, 59, 59, 999), Date.UTC(2000, 2, 1), Date.UTC(2024, 1, 29, 12),
      Date.UTC(2100, 1, 28, 23, 59, 59, 999), Date.UTC(2100, 2, 1), Date.UTC(2400, 1, 29), Date.UTC(2023, 11, 31, 23, 59, 59, 999),
      Date.UTC(2024, 0, 1), Date.UTC(2025, 3, 30, 23, 59, 59, 1),
    ];
    let x = 12345;
    for (let i = 0; i < 300; i++) {
      x = (x * 1103515245 + 12345) % 2147483648; // deterministic LCG
      instants.push(Math.floor((x / 2147483648) * Date.UTC(2200, 0, 1)));
    }
    for (const at of instants) {
      now = at;
      const d = await limiter.admit(uniqueRoute(), limit, 1);
      expect(d.input?.resetSeconds, new Date(at).toISOString()).toBe(secondsUntilReset('month', at));
    }
  });

  it('every unit: the reset matches the UTC window end', async () => {
    let now = 0;
    const limiter = await connected(server.address, settings('closed', 2_000), NO_FALLBACK, { clock: () => now });
    const units: WindowUnit[] = ['second', 'minute', 'hour', 'day', 'month'];
    let x = 987;
    for (let i = 0; i < 100; i++) {
      x = (x * 1103515245 + 12345) % 2147483648;
      now = Date.UTC(2020, 0, 1) + Math.floor((x / 2147483648) * 10 * 365 * 86_400_000);
      const unit = units[i % units.length];
      const d = await limiter.admit(uniqueRoute(), { inputTokensPerUnit: 5, outputTokensPerUnit: 5, unit, global: null, mode: 'enforce' }, 1);
      expect(d.retryAfterSeconds, `${unit} at ${new Date(now).toISOString()}`).toBe(secondsUntilReset(unit, now));
    }
  });

  it('two instances (two clients) share one budget', async () => {
    const clock: Clock = () => T0;
    const a = await connected(server.address, settings('closed', 2_000), NO_FALLBACK, { clock });
    const b = await connected(server.address, settings('closed', 2_000), NO_FALLBACK, { clock });
    const r = uniqueRoute();
    expect((await a.admit(r, EXAMPLE, 4)).allowed).toBe(true);
    expect((await b.admit(r, EXAMPLE, 4)).input?.remaining).toBe(2);
    const third = await a.admit(r, EXAMPLE, 4);
    expect(third.rejectedBy).toBe('input');
    await b.chargeOutput(r, { ...EXAMPLE, outputTokensPerUnit: 10 }, 10);
    expect((await a.admit(r, { ...EXAMPLE, outputTokensPerUnit: 10 }, 1)).rejectedBy).toBe('output');
  });

  it('hundreds of concurrent admits from two instances never exceed the limit', async () => {
    const clock: Clock = () => T0;
    const a = await connected(server.address, settings('closed', 5_000), NO_FALLBACK, { clock });
    const b = await connected(server.address, settings('closed', 5_000), NO_FALLBACK, { clock });
    const r = uniqueRoute();
    const limit: RateLimitSpec = { inputTokensPerUnit: 600, outputTokensPerUnit: null, unit: 'hour', global: null, mode: 'enforce' };
    const calls: (Promise<Decision> | Decision)[] = [];
    for (let i = 0; i < 400; i++) calls.push((i % 2 === 0 ? a : b).admit(r, limit, 3));
    const decisions = await Promise.all(calls);
    expect(decisions.filter((d) => d.allowed).length).toBe(200);
    const start = (T0 - (T0 % 3_600_000)) / 1000;
    expect(await server.cli('get', `ir:{${r}}:in:hour:${start}`)).toBe('600');
  });

  it('rejects bad amounts like the local store', async () => {
    const limiter = await connected(server.address, settings('closed', 2_000), NO_FALLBACK, { clock: () => T0 });
    await expect(limiter.admit('ns/r', EXAMPLE, -1)).rejects.toThrow(RangeError);
    await expect(limiter.admit('ns/r', EXAMPLE, 1.5)).rejects.toThrow(/non-negative integer/);
    await expect(limiter.chargeOutput('ns/r', EXAMPLE, -3)).rejects.toThrow(RangeError);
    await expect(limiter.adjustInput('ns/r', EXAMPLE, 0.5)).rejects.toThrow(RangeError);
  });

  it('credentials come from the settings: REDIS_PASSWORD authenticates, a wrong one leaves the store unavailable', async () => {
    const secured = await RedisServer.start({ args: ['--requirepass', 'pa55'] });
    try {
      const good = parseRedisLimitSettings({ REDIS_PASSWORD: 'pa55', RATE_LIMIT_REDIS_FAILURE_MODE: 'closed', RATE_LIMIT_REDIS_TIMEOUT: '2s' });
      const limiter = await connected(secured.address, good, NO_FALLBACK, { clock: () => T0 });
      expect((await limiter.admit(uniqueRoute(), EXAMPLE, 4)).allowed).toBe(true);
      const logs: string[] = [];
      const bad = parseRedisLimitSettings({ REDIS_PASSWORD: 'wrong', RATE_LIMIT_REDIS_FAILURE_MODE: 'closed' });
      const denied = new RedisLimiter(secured.address, bad, NO_FALLBACK, { log: (m) => logs.push(m) });
      open.push(denied);
      await expect(denied.admit(uniqueRoute(), EXAMPLE, 4)).rejects.toThrow(LimitStoreUnavailableError);
      expect(denied.state).not.toBe('up');
      await until('the outage line', () => logs.length > 0);
      expect(logs.join('\n')).toMatch(/WRONGPASS|invalid|unreachable/i);
    } finally {
      await secured.stop();
    }
  });

  it('redisLimiterFor: one limiter (one client) per distinct address in the process', async () => {
    const s = settings('closed', 2_000);
    const a = redisLimiterFor(server.address, s, NO_FALLBACK, { log: () => {} });
    expect(redisLimiterFor(` ${server.address} `, s, NO_FALLBACK)).toBe(a);
    const other = redisLimiterFor(`redis://${server.address}`, s, NO_FALLBACK, { log: () => {} });
    expect(other).not.toBe(a);
    expect(redisLimiterFor(`redis://${server.address}`, s, NO_FALLBACK)).toBe(other);
    await until('shared limiter healthy', () => a.state === 'up' && other.state === 'up');
    await awayFromMinuteBoundary(2); // no clock given: both admits must fall in one server minute
    const r = uniqueRoute();
    await a.admit(r, EXAMPLE, 8);
    expect((await other.admit(r, EXAMPLE, 4)).rejectedBy).toBe('input');
    await closeRedisLimiters();
    expect(redisLimiterFor(`redis://${server.address}`, s, NO_FALLBACK, { log: () => {} })).not.toBe(other);
    expect(redisLimiterFor(server.address, s, NO_FALLBACK, { log: () => {} })).not.toBe(a);
    await closeRedisLimiters();
  });
});
