/**
 * Leases of the global limit (RATE_LIMIT_REDIS_LEASES=true) against a real redis-server: a
 * worker admits from a slice of the window's input that Redis lent it and counted at once, so
 * input is never over-admitted, and what a lease did not use comes back. Each limiter here is one
 * worker (its own connection); time is an injected clock, so views, idleness and windows move
 * without sleeping.
 */
import { describe, expect, it } from 'vitest';
import type { RateLimitSpec } from '../../../src/config/resource-types.js';
import type { Decision, LimitTerm } from '../../../src/ratelimit/limiter.js';
import { LimitStoreUnavailableError } from '../../../src/ratelimit/errors.js';
import { LEASE_ASK_MIN, LEASE_IDLE_MS, LEASE_VIEW_MS } from '../../../src/ratelimit/redis/leases.js';
import { RedisLimiter } from '../../../src/ratelimit/redis/limiter.js';
import { RECALL_RETRY_MS, recallWaits } from '../../../src/ratelimit/redis/recall-waits.js';
import { LEASES_FORFEIT_MS } from '../../../src/ratelimit/redis/lua/counters.js';
import { DEFAULT_RECALL_WAIT_MS, parseRedisLimitSettings } from '../../../src/ratelimit/redis/settings.js';
import { scriptCallsIn } from '../../../bench/redis-stats.js';
import { NO_FALLBACK } from './no-fallback.js';
import { untilUp } from './until-up.js';
import { RedisServer } from '../../helpers/redis-server.js';
import { redisServerPerFile } from './redis-per-file.js';

const T0 = Date.UTC(2025, 0, 15, 10, 30, 20);
const MINUTE_START = (T0 - (T0 % 60_000)) / 1000;
const SETTLE_WAIT = 5;

const spec = (input: number | null, output: number | null): RateLimitSpec => ({ inputTokensPerUnit: input, outputTokensPerUnit: output, unit: 'minute', global: null, mode: 'enforce' });

let now = T0;
let seq = 0;
const open: RedisLimiter[] = [];
const redis = redisServerPerFile(open, () => {
  now = T0;
});
const route = (): string => `lease-${process.pid}/r${++seq}`;
/** Asks again within the default wait (500 ms, 25 ms apart). */
const MAX_WAITS = recallWaits(DEFAULT_RECALL_WAIT_MS);

async function worker(events: string[] = [], clock: () => number = () => now, recallWait?: string): Promise<RedisLimiter> {
  const settings = parseRedisLimitSettings({
    RATE_LIMIT_REDIS_FAILURE_MODE: 'closed', RATE_LIMIT_REDIS_TIMEOUT: '5s', RATE_LIMIT_REDIS_LEASES: 'true', RATE_LIMIT_REDIS_RECALL_WAIT: recallWait,
  });
  const l = new RedisLimiter(redis.server.address, settings, NO_FALLBACK, {
    clock, log: () => {}, settleWaitMs: SETTLE_WAIT,
    onLease: (e) => events.push(e), onRecallWait: (admitted) => events.push(admitted ? 'wait admitted' : 'wait refused'),
  });
  open.push(l);
  await untilUp(l);
  return l;
}

/** Two workers; `a` holds a lease of a new route's window (10,000 input tokens a minute, 5 used); `b` waits up to `bRecallWait`. */
async function leaseHeld(aEvents: string[] = [], bEvents: string[] = [], bRecallWait?: string): Promise<{ a: RedisLimiter; b: RedisLimiter; r: string; limit: RateLimitSpec }> {
  const a = await worker(aEvents);
  const b = await worker(bEvents, undefined, bRecallWait);
  const r = route();
  const limit = spec(10_000, null);
  expect((await a.admit(r, limit, 5)).allowed).toBe(true);
  return { a, b, r, limit };
}

async function scriptCalls(): Promise<number> {
  return scriptCallsIn(await redis.server.cli('info', 'commandstats'));
}

async function inCounter(r: string, start = MINUTE_START): Promise<number> {
  return Number(await redis.server.cli('get', `ir:{${r}}:in:minute:${start}`));
}

/** Lets queued settles and lease returns reach Redis (they wait SETTLE_WAIT ms for an admission to ride with). */
const landed = (): Promise<void> => new Promise((r) => setTimeout(r, SETTLE_WAIT + 40));

describe('leases of the global limit', () => {
  it('the first admission takes a lease; the next ones are decided from it without a call; what it did not use goes back on close', async () => {
    const a = await worker();
    const r = route();
    const limit = spec(1_000_000, null);
    await redis.server.cli('config', 'resetstat');
    expect((await a.admit(r, limit, 5)).allowed).toBe(true);
    expect(await scriptCalls()).toBe(1);
    expect(await inCounter(r)).toBe(5 + LEASE_ASK_MIN);
    let last: Decision | Promise<Decision> | null = null;
    for (let i = 0; i < 100; i++) {
      last = a.admit(r, limit, 5);
      expect(last instanceof Promise).toBe(false);
    }
    const d = last as Decision;
    expect(d.allowed).toBe(true);
    // The headers count what requests used: the lease's unused part is still this worker's to admit.
    expect(d.input).toEqual({ limit: 1_000_000, remaining: 1_000_000 - 505, resetSeconds: 40 });
    expect(await scriptCalls()).toBe(1);
    expect(await inCounter(r)).toBe(5 + LEASE_ASK_MIN);
    await a.close();
    expect(await inCounter(r)).toBe(505);
  });

  it('two workers never admit more input than the limit, and the leases give back every token they did not use', async () => {
    const a = await worker();
    const b = await worker();
    const r = route();
    const limit = spec(100_000, null);
    let admitted = 0;
    let refusedInRow = 0;
    for (let i = 0; refusedInRow < 4 && i < 100_000; i++) {
      const w = i % 2 === 0 ? a : b;
      const d = await w.admit(r, limit, 7);
      if (d.allowed) {
        admitted += 7;
        refusedInRow = 0;
      } else {
        refusedInRow++;
        now += LEASE_VIEW_MS + 1; // lets the holders' views age, so leases go back and what is free is decided in Redis
        await landed();
      }
    }
    expect(admitted).toBeLessThanOrEqual(100_000);
    await a.close();
    await b.close();
    expect(await inCounter(r)).toBe(admitted);
    expect(await redis.server.cli('exists', `ir:{${r}}:ls:minute:${MINUTE_START}`)).toBe('0'); // no lease counted as out
    // Nothing is lost: what is left of the limit is admitted by a worker without a lease.
    const c = await worker();
    const free = 100_000 - admitted;
    expect(free).toBeLessThan(7);
    if (free > 0) expect((await c.admit(r, spec(100_000, null), free)).allowed).toBe(true);
  });

  it('a lease admits while the output count it last saw is under the limit; a view older than LEASE_VIEW_MS goes to Redis', async () => {
    const a = await worker();
    const b = await worker();
    const r = route();
    const limit = spec(1_000_000, 1_000);
    expect((await a.admit(r, limit, 5)).allowed).toBe(true);
    await b.chargeOutput(r, limit, 1_000);
    // Within the view's age the lease still admits (the charge is not in what it saw)...
    expect((a.admit(r, limit, 5) as Decision).allowed).toBe(true);
    now += LEASE_VIEW_MS + 1;
    // ...after it, the request is decided in Redis, which sees the output limit reached.
    const d = await a.admit(r, limit, 5);
    expect(d.allowed).toBe(false);
    expect(d.rejectedBy).toBe('output');
  });

  it('a request that fits only if the leases out came back waits: the refusal recalls them, their holder gives them back at its next reply, and the request is admitted', async () => {
    const events: string[] = [];
    const bEvents: string[] = [];
    const { a, b, r, limit } = await leaseHeld(events, bEvents);
    const lent = await inCounter(r) - 5;
    expect(lent).toBe(Math.floor(9_995 / 16));
    // Only 5 tokens are used, but the lease is counted: 9,500 more do not fit in Redis now; they
    // would if the lease came back, so the request waits instead of being refused.
    const waiting = b.admit(r, limit, 9_500);
    // The holder's next call (here a settle) brings the recall flag; the lease goes back at once.
    await a.chargeOutput(r, limit, 1);
    const d = await waiting;
    expect(d.allowed).toBe(true);
    expect(await inCounter(r)).toBe(9_505);
    expect(events).toEqual(['lent', 'recalled', 'given_back']);
    expect(bEvents).toEqual(['wait admitted']);
    expect(await redis.server.cli('get', `ir:{${r}}:ls:minute:${MINUTE_START}`)).toBe(''); // no lease out
  });

  it('an admission against several limits (route and tenant) refused only because of a lease out waits for it too', async () => {
    const events: string[] = [];
    const { a, b, r, limit } = await leaseHeld(events);
    const tenant = `${r}-tenant`;
    const waiting = b.admitAll([{ key: r, limit }, { key: tenant, limit: spec(100_000, null) }], 9_500);
    await a.chargeOutput(r, limit, 1); // its reply recalls a's lease
    const ds = await waiting;
    expect(ds.map((d) => d.allowed)).toEqual([true, true]);
    expect(await inCounter(r)).toBe(9_505);
    expect(await inCounter(tenant)).toBe(9_500);
    expect(events).toEqual(['lent', 'recalled', 'given_back']);
  });

  it('a request that would not fit even with every lease back is refused at once', async () => {
    const { b, r, limit } = await leaseHeld();
    const before = await scriptCalls();
    const d = await b.admit(r, limit, 9_996); // 5 used: 9,995 would be free with the lease back
    expect(d.allowed).toBe(false);
    expect(d.rejectedBy).toBe('input');
    expect(await scriptCalls() - before).toBe(1);
  });

  it('a lease whose holder never comes back (frozen here) bounds the wait: the request is refused after RATE_LIMIT_REDIS_RECALL_WAIT (500 ms by default)', async () => {
    const bEvents: string[] = [];
    const { b, r, limit } = await leaseHeld([], bEvents);
    const before = await scriptCalls();
    const started = performance.now();
    const d = await b.admit(r, limit, 9_500);
    expect(d.allowed).toBe(false);
    expect(d.rejectedBy).toBe('input');
    expect(MAX_WAITS).toBe(20);
    expect(await scriptCalls() - before).toBe(1 + MAX_WAITS);
    expect(bEvents).toEqual(['wait refused']);
    expect(performance.now() - started).toBeGreaterThanOrEqual(MAX_WAITS * RECALL_RETRY_MS - 5);
  });

  it('RATE_LIMIT_REDIS_RECALL_WAIT sets that bound: 100ms asks again 4 times; 0 refuses at once without waiting', async () => {
    const shortEvents: string[] = [];
    const held = await leaseHeld([], shortEvents, '100ms');
    let before = await scriptCalls();
    let started = performance.now();
    expect((await held.b.admit(held.r, held.limit, 9_500)).allowed).toBe(false);
    expect(await scriptCalls() - before).toBe(1 + 4);
    expect(performance.now() - started).toBeGreaterThanOrEqual(4 * RECALL_RETRY_MS - 5);
    expect(shortEvents).toEqual(['wait refused']);

    const noWaitEvents: string[] = [];
    const noWait = await worker(noWaitEvents, undefined, '0');
    before = await scriptCalls();
    started = performance.now();
    const d = await noWait.admit(held.r, held.limit, 9_500);
    expect(d.allowed).toBe(false);
    expect(d.rejectedBy).toBe('input');
    expect(await scriptCalls() - before).toBe(1);
    expect(noWaitEvents).toEqual([]);
  });

  it('leases still out LEASES_FORFEIT_MS after a refusal first recalled them are forfeit: from then on a request that needed them is refused at once', async () => {
    const a = await worker([], () => T0); // its clock stands still: it never sees its lease age, as a stopped holder
    const bEvents: string[] = [];
    const b = await worker(bEvents);
    const r = route();
    const limit = spec(10_000, null);
    expect((await a.admit(r, limit, 5)).allowed).toBe(true);
    expect((await b.admit(r, limit, 9_500)).allowed).toBe(false); // waited the whole bound
    expect(bEvents).toEqual(['wait refused']);
    const lentKey = `ir:{${r}}:ls:minute:${MINUTE_START}`;
    expect(Number(await redis.server.cli('get', lentKey))).toBe(Math.floor(9_995 / 16));
    now += LEASES_FORFEIT_MS + 1; // the scripts' clock (injected), still in the same minute
    const before = await scriptCalls();
    const d = await b.admit(r, limit, 9_500);
    expect(d.allowed).toBe(false);
    expect(d.rejectedBy).toBe('input');
    expect(await scriptCalls() - before).toBe(1); // no wait
    expect(bEvents).toEqual(['wait refused']);
    expect(await redis.server.cli('exists', lentKey)).toBe('0');
    // The forfeit tokens stay counted: 5 used and the lease.
    expect(await inCounter(r)).toBe(5 + Math.floor(9_995 / 16));
    // The remaining-input header counts them as used now.
    expect(d.input?.remaining).toBe(10_000 - 5 - Math.floor(9_995 / 16));
    // A holder that comes back after all gives its unused tokens back; the count of leases out does not go below 0.
    await a.close();
    expect(await inCounter(r)).toBe(5);
    expect(await redis.server.cli('exists', lentKey)).toBe('0');
  });

  it('Redis lost while a request waits for leases: the wait ends with the store unavailable (the failure mode decides), not after the whole wait', async () => {
    const own = await RedisServer.start();
    try {
      const settings = parseRedisLimitSettings({ RATE_LIMIT_REDIS_FAILURE_MODE: 'closed', RATE_LIMIT_REDIS_TIMEOUT: '5s' });
      const mk = async (): Promise<RedisLimiter> => {
        const l = new RedisLimiter(own.address, settings, NO_FALLBACK, { clock: () => now, log: () => {}, settleWaitMs: SETTLE_WAIT, probeIntervalMs: 50 });
        open.push(l);
        await untilUp(l);
        return l;
      };
      const a = await mk();
      const b = await mk();
      const r = route();
      const limit = spec(10_000, null);
      expect((await a.admit(r, limit, 5)).allowed).toBe(true);
      const waiting = Promise.resolve(b.admit(r, limit, 9_500)).then((d) => d, (e: unknown) => e);
      await new Promise((res) => setTimeout(res, RECALL_RETRY_MS / 2)); // its first answer came back: it waits
      const started = performance.now();
      await own.kill();
      const outcome = await waiting;
      expect(outcome).toBeInstanceOf(LimitStoreUnavailableError);
      expect(performance.now() - started).toBeLessThan(MAX_WAITS * RECALL_RETRY_MS);
    } finally {
      await own.stop();
    }
  });

  it('a lease lent by a call Redis ran after the worker stopped waiting (Redis stalled past the timeout) goes back: its tokens are not lost for the window', async () => {
    const own = await RedisServer.start();
    try {
      // open: the stalled request is admitted uncounted here, so Redis counting its own tokens is right.
      const settings = parseRedisLimitSettings({ RATE_LIMIT_REDIS_FAILURE_MODE: 'open', RATE_LIMIT_REDIS_TIMEOUT: '100ms' });
      const l = new RedisLimiter(own.address, settings, NO_FALLBACK, { clock: () => now, log: () => {}, settleWaitMs: SETTLE_WAIT, probeIntervalMs: 50 });
      open.push(l);
      await untilUp(l);
      const r = route();
      const tenant = `${r}-tenant`;
      const limit = spec(1_000_000, null);
      const counts = async (key: string): Promise<[string, string]> => [
        await own.cli('get', `ir:{${key}}:in:minute:${MINUTE_START}`), await own.cli('get', `ir:{${key}}:ls:minute:${MINUTE_START}`),
      ];
      own.pause();
      try {
        // One admission alone and one against two limits: each call asks for leases.
        const alone = l.admit(r, limit, 5);
        const both = l.admitAll([{ key: `${r}-2`, limit }, { key: tenant, limit }], 5);
        expect((await alone).input).toBeNull(); // the open failure mode: admitted, counts unknown
        expect((await both).map((d) => d.input)).toEqual([null, null]);
      } finally {
        own.resume();
      }
      await untilUp(l);
      await new Promise((res) => setTimeout(res, 100));
      // Redis ran the calls late: each counted its admission and lent a lease nobody holds; the
      // leases came back, so only the admissions stay counted.
      expect(await counts(r)).toEqual(['5', '']);
      expect(await counts(`${r}-2`)).toEqual(['5', '']);
      expect(await counts(tenant)).toEqual(['5', '']);
    } finally {
      own.resume();
      await own.stop();
    }
  });

  it.each(['true', 'false'])('the closed failure mode (leases %s): admissions refused with 503 because Redis stalled past the timeout are not charged when Redis runs the call after all', async (leases) => {
    const own = await RedisServer.start();
    try {
      const settings = parseRedisLimitSettings({ RATE_LIMIT_REDIS_FAILURE_MODE: 'closed', RATE_LIMIT_REDIS_TIMEOUT: '100ms', RATE_LIMIT_REDIS_LEASES: leases });
      const l = new RedisLimiter(own.address, settings, NO_FALLBACK, { clock: () => now, log: () => {}, settleWaitMs: SETTLE_WAIT, probeIntervalMs: 50 });
      open.push(l);
      await untilUp(l);
      const r = route();
      const limit = spec(1_000_000, null);
      const counts = async (key: string): Promise<[number, string]> => [
        Number(await own.cli('get', `ir:{${key}}:in:minute:${MINUTE_START}`)), await own.cli('get', `ir:{${key}}:ls:minute:${MINUTE_START}`),
      ];
      own.pause();
      try {
        const refused = await Promise.all([
          Promise.resolve(l.admit(r, limit, 5)).then(() => 'admitted', (e: unknown) => e),
          Promise.resolve(l.admit(r, limit, 7)).then(() => 'admitted', (e: unknown) => e),
          Promise.resolve(l.admitAll([{ key: `${r}-2`, limit }, { key: `${r}-tenant`, limit }], 5)).then(() => 'admitted', (e: unknown) => e),
        ]);
        for (const e of refused) expect(e).toBeInstanceOf(LimitStoreUnavailableError);
      } finally {
        own.resume();
      }
      await untilUp(l);
      await new Promise((res) => setTimeout(res, 100));
      for (const key of [r, `${r}-2`, `${r}-tenant`]) expect(await counts(key), key).toEqual([0, '']);
    } finally {
      own.resume();
      await own.stop();
    }
  });

  it('a lease is forfeit as soon as the connection is lost: none outlives a reconnection to a Redis that lost its counts (the lease clock here never ages its view)', async () => {
    const own = await RedisServer.start();
    try {
      const settings = parseRedisLimitSettings({ RATE_LIMIT_REDIS_FAILURE_MODE: 'closed', RATE_LIMIT_REDIS_TIMEOUT: '5s', RATE_LIMIT_REDIS_LEASES: 'true' });
      const events: string[] = [];
      const l = new RedisLimiter(own.address, settings, NO_FALLBACK, {
        clock: () => T0, log: () => {}, settleWaitMs: SETTLE_WAIT, probeIntervalMs: 50, reconnectCapMs: 100, onLease: (e) => events.push(e),
      });
      open.push(l);
      await untilUp(l);
      const r = route();
      const limit = spec(1_000_000, null);
      expect((await l.admit(r, limit, 5)).allowed).toBe(true);
      expect(events).toEqual(['lent']);
      // The connection drops; the Redis it comes back to has lost the window's counts (a restart
      // without persistence, a failover to a replica that was behind).
      await own.cli('client', 'kill', 'type', 'normal');
      const deadline = Date.now() + 5000;
      while (l.state === 'up' && Date.now() < deadline) await new Promise((res) => setTimeout(res, 5));
      await own.cli('flushall');
      await untilUp(l);
      expect((await l.admit(r, limit, 7)).allowed).toBe(true);
      // Decided by Redis, which counts it (from the old lease it was counted nowhere).
      expect(Number(await own.cli('get', `ir:{${r}}:in:minute:${MINUTE_START}`))).toBeGreaterThanOrEqual(7);
      expect(events.slice(0, 2)).toEqual(['lent', 'forfeited']);
    } finally {
      await own.stop();
    }
  });

  it('a lease held when Redis stalls past the timeout goes back when it goes on, instead of staying counted for the rest of the window', async () => {
    const own = await RedisServer.start();
    try {
      const settings = parseRedisLimitSettings({ RATE_LIMIT_REDIS_FAILURE_MODE: 'closed', RATE_LIMIT_REDIS_TIMEOUT: '100ms', RATE_LIMIT_REDIS_LEASES: 'true' });
      const events: string[] = [];
      const l = new RedisLimiter(own.address, settings, NO_FALLBACK, {
        clock: () => T0, log: () => {}, settleWaitMs: SETTLE_WAIT, probeIntervalMs: 50, onLease: (e) => events.push(e),
      });
      open.push(l);
      await untilUp(l);
      const r = route();
      const other = route();
      const limit = spec(1_000_000, null);
      const counts = async (key: string): Promise<[number, string]> => [
        Number(await own.cli('get', `ir:{${key}}:in:minute:${MINUTE_START}`)), await own.cli('get', `ir:{${key}}:ls:minute:${MINUTE_START}`),
      ];
      expect((await l.admit(r, limit, 5)).allowed).toBe(true);
      expect(events).toEqual(['lent']);
      expect((await counts(r))[0]).toBeGreaterThan(5);
      own.pause();
      try {
        // Another limit's call times out: the circuit opens while the lease of `r` is held.
        await expect(l.admit(other, limit, 3)).rejects.toBeInstanceOf(LimitStoreUnavailableError);
      } finally {
        own.resume();
      }
      await untilUp(l);
      await new Promise((res) => setTimeout(res, 200));
      expect(await counts(r)).toEqual([5, '']);
      expect(events).toEqual(['lent', 'given_back']);
    } finally {
      await own.stop();
    }
  });

  it('a limiter closing decides its waiting admissions at once', async () => {
    const { b, r, limit } = await leaseHeld();
    const waiting = b.admit(r, limit, 9_500);
    await new Promise((res) => setTimeout(res, RECALL_RETRY_MS / 2)); // its first answer came back: it waits
    const started = performance.now();
    await b.close();
    const d = await waiting;
    expect(d.allowed).toBe(false);
    expect(performance.now() - started).toBeLessThan(MAX_WAITS * RECALL_RETRY_MS);
  });

  it('an idle lease goes back', async () => {
    const a = await worker();
    const r = route();
    const limit = spec(1_000_000, null);
    expect((await a.admit(r, limit, 5)).allowed).toBe(true);
    expect(await inCounter(r)).toBe(5 + LEASE_ASK_MIN);
    now += LEASE_IDLE_MS;
    await new Promise((res) => setTimeout(res, LEASE_IDLE_MS));
    await landed();
    expect(await inCounter(r)).toBe(5);
  });

  it('a lease of an ended window is not given back into the next one', async () => {
    const a = await worker();
    const r = route();
    const limit = spec(1_000_000, null);
    expect((await a.admit(r, limit, 5)).allowed).toBe(true);
    now += 60_000; // the next minute
    expect((await a.admit(r, limit, 5)).allowed).toBe(true);
    expect(await inCounter(r)).toBe(5 + LEASE_ASK_MIN);
    expect(await inCounter(r, MINUTE_START + 60)).toBe(5 + LEASE_ASK_MIN);
  });

  it('a request under other limits (an edit) gives the lease back and takes one under the new limits', async () => {
    const a = await worker();
    const r = route();
    expect((await a.admit(r, spec(1_000_000, null), 5)).allowed).toBe(true);
    const d = await a.admit(r, spec(2_000_000, null), 5);
    expect(d.allowed).toBe(true);
    expect(d.input?.limit).toBe(2_000_000);
    expect(await inCounter(r)).toBe(10 + LEASE_ASK_MIN);
    await a.close();
    expect(await inCounter(r)).toBe(10);
  });

  it('a unit edit gives the lease back to its own unit\'s window, even where the two windows start together', async () => {
    now = Date.UTC(2025, 0, 15, 10, 0, 20); // the minute and the hour both start at 10:00:00
    const start = (now - 20_000) / 1000;
    const a = await worker();
    const r = route();
    expect((await a.admit(r, spec(1_000_000, null), 5)).allowed).toBe(true);
    const hourly: RateLimitSpec = { ...spec(1_000_000, null), unit: 'hour' };
    expect((await a.admit(r, hourly, 5)).allowed).toBe(true);
    await landed();
    expect(await inCounter(r, start)).toBe(5);
    expect(Number(await redis.server.cli('get', `ir:{${r}}:in:hour:${start}`))).toBe(5 + LEASE_ASK_MIN);
  });

  it('leases are on by default; with RATE_LIMIT_REDIS_LEASES=false every admission is decided in Redis', async () => {
    expect(parseRedisLimitSettings({}).leases).toBe(true);
    const settings = parseRedisLimitSettings({ RATE_LIMIT_REDIS_FAILURE_MODE: 'closed', RATE_LIMIT_REDIS_TIMEOUT: '5s', RATE_LIMIT_REDIS_LEASES: 'false' });
    expect(settings.leases).toBe(false);
    const l = new RedisLimiter(redis.server.address, settings, NO_FALLBACK, { clock: () => now, log: () => {} });
    open.push(l);
    await untilUp(l);
    const r = route();
    for (let i = 0; i < 3; i++) expect(l.admit(r, spec(1_000_000, null), 5) instanceof Promise).toBe(true);
    await landed();
    expect(await inCounter(r)).toBe(15);
  });
});

describe('leases of the global limit for admissions against several limits (route and tenant)', () => {
  const both = (r: string, routeInput: number, tenantInput: number, tenantMode?: 'shadow'): LimitTerm[] => [
    { key: r, limit: spec(routeInput, null) },
    { key: `${r}-tenant`, limit: tenantMode === undefined ? spec(tenantInput, null) : { ...spec(tenantInput, null), mode: tenantMode } },
  ];
  const lentOut = async (key: string): Promise<string> => redis.server.cli('get', `ir:{${key}}:ls:minute:${MINUTE_START}`);

  it('the first admission takes a lease of each limit; the next ones are decided from both without a call; what they did not use goes back on close', async () => {
    const events: string[] = [];
    const a = await worker(events);
    const r = route();
    const terms = both(r, 1_000_000, 500_000);
    await redis.server.cli('config', 'resetstat');
    expect((await a.admitAll(terms, 5)).map((d) => d.allowed)).toEqual([true, true]);
    expect(await scriptCalls()).toBe(1);
    expect(events).toEqual(['lent', 'lent']);
    expect(await inCounter(r)).toBe(5 + LEASE_ASK_MIN);
    expect(await inCounter(`${r}-tenant`)).toBe(5 + LEASE_ASK_MIN);
    let last: Decision[] | Promise<Decision[]> | null = null;
    for (let i = 0; i < 100; i++) {
      last = a.admitAll(terms, 5);
      expect(last instanceof Promise).toBe(false);
    }
    const ds = last as Decision[];
    expect(ds.map((d) => d.allowed)).toEqual([true, true]);
    // Each limit's headers count what requests used, as for one limit.
    expect(ds[0].input).toEqual({ limit: 1_000_000, remaining: 1_000_000 - 505, resetSeconds: 40 });
    expect(ds[1].input).toEqual({ limit: 500_000, remaining: 500_000 - 505, resetSeconds: 40 });
    expect(await scriptCalls()).toBe(1);
    await a.close();
    expect(await inCounter(r)).toBe(505);
    expect(await inCounter(`${r}-tenant`)).toBe(505);
    expect(await lentOut(r)).toBe('');
    expect(await lentOut(`${r}-tenant`)).toBe('');
  });

  it('one lease of a route serves its requests with and without a tenant budget; only the limit whose lease does not cover a request is asked for a new one', async () => {
    const events: string[] = [];
    const a = await worker(events);
    const r = route();
    const terms = both(r, 1_000_000, 500_000);
    await redis.server.cli('config', 'resetstat');
    expect((await a.admit(r, terms[0].limit, 5)).allowed).toBe(true); // the route's lease
    expect((await a.admitAll(terms, 5)).map((d) => d.allowed)).toEqual([true, true]); // the route's lease covers: the tenant's is asked for
    expect(events).toEqual(['lent', 'lent']);
    expect(await scriptCalls()).toBe(2);
    expect(await inCounter(r)).toBe(5 + LEASE_ASK_MIN + 5); // that admission charged in Redis, the route's lease kept
    expect(a.admitAll(terms, 5) instanceof Promise).toBe(false);
    expect(a.admit(r, terms[0].limit, 5) instanceof Promise).toBe(false);
    expect(await scriptCalls()).toBe(2);
    await a.close();
    expect(await inCounter(r)).toBe(20);
    expect(await inCounter(`${r}-tenant`)).toBe(10);
  });

  it('a request its leases do not cover gives them back in the call that asks for larger ones', async () => {
    const events: string[] = [];
    const a = await worker(events);
    const r = route();
    const terms = both(r, 1_000_000, 1_000_000);
    expect((await a.admitAll(terms, 5)).map((d) => d.allowed)).toEqual([true, true]);
    await redis.server.cli('config', 'resetstat');
    expect((await a.admitAll(terms, 5_000)).map((d) => d.allowed)).toEqual([true, true]);
    expect(await scriptCalls()).toBe(1);
    const lent = Math.min(64 * 5_000, Math.floor((1_000_000 - 5 - 5_000) / 16));
    expect(events).toEqual(['lent', 'lent', 'given_back', 'given_back', 'lent', 'lent']);
    for (const key of [r, `${r}-tenant`]) {
      expect(await inCounter(key)).toBe(5 + 5_000 + lent);
      expect(Number(await lentOut(key))).toBe(lent);
    }
  });

  it('a tenant\'s lease held by one worker is recalled for another worker\'s admission that fits only with it back', async () => {
    const aEvents: string[] = [];
    const bEvents: string[] = [];
    const a = await worker(aEvents);
    const b = await worker(bEvents);
    const r = route();
    const terms = both(r, 1_000_000, 10_000);
    const tenant = terms[1];
    expect((await a.admitAll(terms, 5)).map((d) => d.allowed)).toEqual([true, true]);
    const tenantLease = Math.floor(9_995 / 16);
    expect(await inCounter(tenant.key)).toBe(5 + tenantLease);
    // 9,500 more do not fit beside the tenant's lease, but would with it back: the admission waits.
    const waiting = b.admitAll(terms, 9_500);
    await a.chargeOutput(tenant.key, tenant.limit, 1); // a's next call on the tenant brings the recall flag
    const ds = await waiting;
    expect(ds.map((d) => d.allowed)).toEqual([true, true]);
    expect(await inCounter(tenant.key)).toBe(9_505);
    expect(aEvents).toEqual(['lent', 'lent', 'recalled', 'given_back']);
    expect(bEvents).toEqual(['lent', 'wait admitted']); // b's first call lent it a lease of the route (not recalled)
    expect(await lentOut(tenant.key)).toBe('');
  });

  it('a shadow limit is never leased: a request with one goes to Redis each time, the enforced limit\'s lease aside', async () => {
    const events: string[] = [];
    const a = await worker(events);
    const r = route();
    const terms = both(r, 1_000_000, 1_000, 'shadow');
    await redis.server.cli('config', 'resetstat');
    for (let i = 0; i < 3; i++) {
      const ds = a.admitAll(terms, 500);
      expect(ds instanceof Promise).toBe(true);
      expect((await ds)[0].allowed).toBe(true); // the third would be refused by the shadow limit, and is admitted
    }
    expect(await scriptCalls()).toBe(3);
    expect(events).toEqual(['lent']);
    expect(await inCounter(`${r}-tenant`)).toBe(1_500); // counted past its limit, as shadow limits are
    expect(await lentOut(`${r}-tenant`)).toBe('');
  });

  it('workers admitting with and without a tenant budget never admit more input than either limit, and every unused token comes back', async () => {
    const a = await worker();
    const b = await worker();
    const c = await worker();
    const r = route();
    const terms = both(r, 60_000, 20_000);
    let routeUsed = 0;
    let tenantUsed = 0;
    const refused = async (): Promise<void> => {
      now += LEASE_VIEW_MS + 1; // the holders' views age, so leases go back and what is free is decided in Redis
      await landed();
    };
    // a and b with the tenant's budget, c without one, in turn, until the tenant's budget refuses four in a row...
    let refusedInRow = 0;
    for (let i = 0; refusedInRow < 4 && i < 100_000; i++) {
      if (i % 3 === 2) {
        if ((await c.admit(r, terms[0].limit, 7)).allowed) routeUsed += 7;
        continue;
      }
      const ds = await (i % 3 === 0 ? a : b).admitAll(terms, 7);
      if (ds[0].allowed && ds[1].allowed) {
        routeUsed += 7;
        tenantUsed += 7;
        refusedInRow = 0;
      } else {
        expect(ds[1].rejectedBy).toBe('input'); // the tenant's budget binds first
        refusedInRow++;
        await refused();
      }
    }
    // ...then c alone until the route's limit does.
    refusedInRow = 0;
    for (let i = 0; refusedInRow < 4 && i < 100_000; i++) {
      if ((await c.admit(r, terms[0].limit, 7)).allowed) {
        routeUsed += 7;
        refusedInRow = 0;
      } else {
        refusedInRow++;
        await refused();
      }
    }
    expect(routeUsed).toBeLessThanOrEqual(60_000);
    expect(tenantUsed).toBeLessThanOrEqual(20_000);
    await Promise.all([a.close(), b.close(), c.close()]);
    expect(await inCounter(r)).toBe(routeUsed);
    expect(await inCounter(`${r}-tenant`)).toBe(tenantUsed);
    expect(await redis.server.cli('exists', `ir:{${r}}:ls:minute:${MINUTE_START}`, `ir:{${r}-tenant}:ls:minute:${MINUTE_START}`)).toBe('0');
    // Nothing lost to leases: each budget was used to its last request's worth.
    expect(20_000 - tenantUsed).toBeLessThan(7);
    expect(60_000 - routeUsed).toBeLessThan(7);
  });
});
