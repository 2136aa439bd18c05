/**
 * RedisLimiter batching against a real redis-server: the operations of one event-loop turn go
 * out as one script call per route, and each caller still gets the decision the documented rule
 * gives in arrival order. Script calls are counted with the server's INFO commandstats.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { RateLimitSpec, WindowUnit } from '../../../src/config/resource-types.js';
import type { Decision, TokenLimiter } from '../../../src/ratelimit/limiter.js';
import { MAX_BATCH_ADMISSIONS } from '../../../src/ratelimit/redis/batch.js';
import { RedisLimiter } from '../../../src/ratelimit/redis/limiter.js';
import { SETTLE_WAIT_MS } from '../../../src/ratelimit/redis/turn-batches.js';
import { parseRedisLimitSettings } from '../../../src/ratelimit/redis/settings.js';
import { scriptCallsIn } from '../../../bench/redis-stats.js';
import { RedisServer } from '../../helpers/redis-server.js';
import { NO_FALLBACK } from './no-fallback.js';
import { untilUp } from './until-up.js';

const T0 = Date.UTC(2025, 0, 15, 10, 30, 20);
const MINUTE_START = (T0 - (T0 % 60_000)) / 1000;

function spec(input: number | null, output: number | null, unit: WindowUnit = 'minute'): RateLimitSpec {
  return { inputTokensPerUnit: input, outputTokensPerUnit: output, unit, global: null, mode: 'enforce' };
}
const EXAMPLE = spec(10, 5000);


let server: RedisServer;
let limiter: RedisLimiter;
let seq = 0;
const uniqueRoute = (): string => `batch-${process.pid}/r${++seq}`;

beforeAll(async () => {
  server = await RedisServer.start();
  const settings = parseRedisLimitSettings({ RATE_LIMIT_REDIS_FAILURE_MODE: 'closed', RATE_LIMIT_REDIS_TIMEOUT: '5s' });
  limiter = new RedisLimiter(server.address, settings, NO_FALLBACK, { clock: () => T0, log: () => {} });
  await untilUp(limiter);
});

afterAll(async () => {
  await limiter?.close();
  await server?.stop();
});

afterEach(async () => {
  await server.cli('config', 'resetstat');
});

/** Script calls (EVAL on a connection's first use, EVALSHA after) since the last reset. */
async function scriptCalls(): Promise<number> {
  return scriptCallsIn(await server.cli('info', 'commandstats'));
}

async function counter(route: string, direction: 'in' | 'out', unit = 'minute', start = MINUTE_START): Promise<string> {
  return server.cli('get', `ir:{${route}}:${direction}:${unit}:${start}`);
}

describe('RedisLimiter batching', () => {
  it('N concurrent admits on one route: one script call; exactly floor(limit / tokens) admitted, in arrival order', async () => {
    const r = uniqueRoute();
    await server.cli('config', 'resetstat');
    const decisions = await Promise.all(Array.from({ length: 50 }, () => limiter.admit(r, spec(100, 1000), 3)));
    expect(await scriptCalls()).toBe(1);
    expect(decisions.map((d) => d.allowed)).toEqual([...Array<boolean>(33).fill(true), ...Array<boolean>(17).fill(false)]);
    // Each admitted caller sees the count right after its own admission.
    expect(decisions.slice(0, 33).map((d) => d.input?.remaining)).toEqual(Array.from({ length: 33 }, (_, i) => 100 - 3 * (i + 1)));
    for (const d of decisions.slice(33)) {
      expect(d).toEqual({
        allowed: false,
        rejectedBy: 'input',
        retryAfterSeconds: 40,
        input: { limit: 100, remaining: 1, resetSeconds: 40 },
        output: { limit: 1000, remaining: 1000, resetSeconds: 40 },
        window: T0 - 20_000, // the minute the script charged (by the clock it was given)
      });
    }
    expect(await counter(r, 'in')).toBe('99');
  });

  it(`more than ${MAX_BATCH_ADMISSIONS} admits in one turn: several calls, still exact`, async () => {
    const r = uniqueRoute();
    const n = 2 * MAX_BATCH_ADMISSIONS + 200;
    await server.cli('config', 'resetstat');
    const decisions = await Promise.all(Array.from({ length: n }, () => limiter.admit(r, spec(1000, null, 'hour'), 2)));
    expect(await scriptCalls()).toBe(3);
    expect(decisions.filter((d) => d.allowed).length).toBe(500);
    expect(decisions.findIndex((d) => !d.allowed)).toBe(500);
    expect(await counter(r, 'in', 'hour', (T0 - (T0 % 3_600_000)) / 1000)).toBe('1000');
  });

  it('admits and settles of one turn: one call; the settles (summed) apply first, then the admissions in order', async () => {
    const r = uniqueRoute();
    expect((await limiter.admit(r, EXAMPLE, 4)).allowed).toBe(true); // input 4
    await server.cli('config', 'resetstat');
    const [first, , second, , , third] = await Promise.all<Decision | void>([
      limiter.admit(r, EXAMPLE, 4),
      limiter.settle(r, EXAMPLE, 2, 4000), // the backend counted 6 prompt tokens, generated 4000
      limiter.admit(r, EXAMPLE, 4),
      limiter.adjustInput(r, EXAMPLE, -1),
      limiter.chargeOutput(r, EXAMPLE, 990),
      limiter.admit(r, EXAMPLE, 1),
    ]) as [Decision, void, Decision, void, void, Decision];
    expect(await scriptCalls()).toBe(1);
    // Settles first: input 4 + 2 - 1 = 5, output 4990. Then 5 + 4 = 9 admitted, 9 + 4 > 10
    // rejected, 9 + 1 = 10 admitted.
    expect(first).toMatchObject({ allowed: true, input: { remaining: 1 }, output: { remaining: 10 } });
    expect(second).toMatchObject({ allowed: false, rejectedBy: 'input', input: { remaining: 1 }, output: { remaining: 10 } });
    expect(third).toMatchObject({ allowed: true, input: { remaining: 0 }, output: { remaining: 10 } });
    expect(await counter(r, 'in')).toBe('10');
    expect(await counter(r, 'out')).toBe('4990');
  });

  it('a correction in the call of admissions: floored at 0 before them, and the input counter written once (a new key with the window\'s expiry)', async () => {
    const r = uniqueRoute();
    const key = `ir:{${r}}:in:minute:${MINUTE_START}`;
    await server.cli('config', 'resetstat');
    // No counter yet: the correction -5 floors at 0, then 4 + 4 are admitted.
    const [, a, b] = await Promise.all<Decision | void>([
      limiter.adjustInput(r, EXAMPLE, -5),
      limiter.admit(r, EXAMPLE, 4),
      limiter.admit(r, EXAMPLE, 4),
    ]) as [void, Decision, Decision];
    const stats = await server.cli('info', 'commandstats'); // before this test reads anything
    expect(scriptCallsIn(stats)).toBe(1);
    expect(stats).toMatch(/cmdstat_incrby:calls=1,/); // the correction and both admissions: one write
    expect(stats).not.toMatch(/cmdstat_(get|set):/);
    expect(a).toMatchObject({ allowed: true, input: { remaining: 6 } });
    expect(b).toMatchObject({ allowed: true, input: { remaining: 2 } });
    expect(await counter(r, 'in')).toBe('8');
    const windowLeftMs = MINUTE_START * 1000 + 60_000 - T0;
    const ttl = Number(await server.cli('pttl', key));
    expect(ttl).toBeGreaterThan(windowLeftMs); // the window's end plus a margin
    expect(ttl).toBeLessThanOrEqual(windowLeftMs + 60_000);
    await server.cli('config', 'resetstat');
    // A counter of 8: the correction -20 floors at 0, then 3 is admitted; one more write.
    const [, c] = await Promise.all<Decision | void>([limiter.adjustInput(r, EXAMPLE, -20), limiter.admit(r, EXAMPLE, 3)]) as [void, Decision];
    expect(await server.cli('info', 'commandstats')).toMatch(/cmdstat_incrby:calls=1,/);
    expect(c).toMatchObject({ allowed: true, input: { remaining: 7 } });
    expect(await counter(r, 'in')).toBe('3');
    expect(Number(await server.cli('pttl', key))).toBeLessThanOrEqual(ttl); // its expiry kept
  });

  it('settles alone: one call for all of them in the turn', async () => {
    const r = uniqueRoute();
    await server.cli('config', 'resetstat');
    await Promise.all([
      limiter.chargeOutput(r, EXAMPLE, 7),
      limiter.settle(r, EXAMPLE, 3, 5),
      limiter.adjustInput(r, EXAMPLE, -1),
    ]);
    expect(await scriptCalls()).toBe(1);
    expect(await counter(r, 'in')).toBe('2');
    expect(await counter(r, 'out')).toBe('12');
  });

  it('a settle with no admission in its turn waits for the next admission of its route and rides along with it', async () => {
    const r = uniqueRoute();
    await server.cli('config', 'resetstat');
    const charged = limiter.chargeOutput(r, spec(10, 100), 100);
    await new Promise((resolve) => setImmediate(resolve));
    const d = await limiter.admit(r, spec(10, 100), 1);
    await charged;
    expect(await scriptCalls()).toBe(1);
    expect(d).toMatchObject({ allowed: false, rejectedBy: 'output' });
  });

  it(`a settle alone goes out on its own after the settle wait (SETTLE_WAIT_MS = ${SETTLE_WAIT_MS} ms by default)`, async () => {
    const r = uniqueRoute();
    await server.cli('config', 'resetstat');
    await limiter.settle(r, EXAMPLE, 3, 7); // resolves once Redis applied it: nothing else comes along
    expect(await scriptCalls()).toBe(1);
    expect(await counter(r, 'in')).toBe('3');
    expect(await counter(r, 'out')).toBe('7');
  });

  it('settles keep waiting for an admission through later turns; closing the limiter sends them', async () => {
    const settings = parseRedisLimitSettings({ RATE_LIMIT_REDIS_FAILURE_MODE: 'closed', RATE_LIMIT_REDIS_TIMEOUT: '5s' });
    const patient = new RedisLimiter(server.address, settings, NO_FALLBACK, { clock: () => T0, log: () => {}, settleWaitMs: 600_000 });
    try {
      while (patient.state !== 'up') await new Promise((resolve) => setTimeout(resolve, 10));
      const a = uniqueRoute();
      const b = uniqueRoute();
      await server.cli('config', 'resetstat');
      let landed = false;
      const first = Promise.resolve(patient.chargeOutput(a, EXAMPLE, 40)).then(() => { landed = true; });
      for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve));
      expect(await scriptCalls()).toBe(0);
      expect(landed).toBe(false);
      // Another route's admission does not take it along; its own route's does.
      await patient.admit(b, EXAMPLE, 1);
      expect(landed).toBe(false);
      const d = await patient.admit(a, EXAMPLE, 2);
      await first;
      expect(d).toMatchObject({ allowed: true, output: { remaining: 5000 - 40 } });
      expect(await scriptCalls()).toBe(2);
      // One more waits, and close() sends it before the connection goes.
      const last = patient.settle(a, EXAMPLE, -1, 5);
      await patient.close();
      await last;
      expect(await counter(a, 'in')).toBe('1');
      expect(await counter(a, 'out')).toBe('45');
    } finally {
      await patient.close();
    }
  });

  it('two routes in one turn: one call per route, each decided on its own counters', async () => {
    const a = uniqueRoute();
    const b = uniqueRoute();
    await server.cli('config', 'resetstat');
    const [a1, b1, a2, b2, a3] = await Promise.all([
      limiter.admit(a, EXAMPLE, 4),
      limiter.admit(b, EXAMPLE, 6),
      limiter.admit(a, EXAMPLE, 4),
      limiter.admit(b, EXAMPLE, 6),
      limiter.admit(a, EXAMPLE, 4),
      limiter.chargeOutput(b, EXAMPLE, 50),
    ]);
    expect(await scriptCalls()).toBe(2);
    expect([a1.allowed, a2.allowed, a3.allowed]).toEqual([true, true, false]);
    expect([b1.allowed, b2.allowed]).toEqual([true, false]);
    expect(b2.output?.remaining).toBe(4950); // the route's charge, applied before its admissions
    expect(a3.output?.remaining).toBe(5000);
    expect(await counter(a, 'in')).toBe('8');
    expect(await counter(b, 'in')).toBe('6');
  });

  it('a limit or unit edited within a turn: each admission is decided under its own limit, in arrival order', async () => {
    const r = uniqueRoute();
    const decisions = await Promise.all([
      limiter.admit(r, spec(10, null), 4), // 4 <= 10
      limiter.admit(r, spec(20, null), 8), // 4 + 8 <= 20 (raised)
      limiter.admit(r, spec(10, null), 4), // 12 + 4 > 10 (back to 10)
      limiter.admit(r, spec(10, null, 'hour'), 10), // another unit: its own window
      limiter.admit(r, spec(20, null), 8), // 12 + 8 <= 20
    ]);
    expect(decisions.map((d) => d.allowed)).toEqual([true, true, false, true, true]);
    expect(decisions.map((d) => d.input?.remaining)).toEqual([6, 8, 0, 0, 0]);
    expect(await counter(r, 'in')).toBe('20');
    expect(await counter(r, 'in', 'hour', (T0 - (T0 % 3_600_000)) / 1000)).toBe('10');
  });
});
