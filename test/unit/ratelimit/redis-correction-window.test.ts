/**
 * A request's input corrections and give-backs go to the window its admission was charged in, by
 * the Redis store's clock, not by the router's: the admission's Decision.window goes with them and
 * the script applies them only while that window is on. Against a real redis-server; the store's
 * clock is an injected one (passed to the script instead of TIME), so it differs from this
 * process's clock as a skewed Redis clock would.
 */
import { afterEach, beforeAll, afterAll, describe, expect, it } from 'vitest';
import type { AnswerUsage } from '../../../src/api/inference-api.js';
import type { RateLimitSpec, WindowUnit } from '../../../src/config/resource-types.js';
import type { RequestContext } from '../../../src/http/request-context.js';
import { giveBackInput } from '../../../src/ratelimit/admit-all.js';
import { RedisLimiter } from '../../../src/ratelimit/redis/limiter.js';
import { parseRedisLimitSettings } from '../../../src/ratelimit/redis/settings.js';
import { admitRequest, type RequestAdmission, type ScopedTerm } from '../../../src/ratelimit/request-admission.js';
import type { TokenCounter } from '../../../src/tokens/token-counter.js';
import { settleUsage } from '../../../src/usage/settle-usage.js';
import { RedisServer } from '../../helpers/redis-server.js';
import { NO_FALLBACK } from './no-fallback.js';
import { untilUp } from './until-up.js';

/** 2025-01-15T10:30:20.000Z: the store's clock starts here, 40 s into minute M. */
const T0 = Date.UTC(2025, 0, 15, 10, 30, 20);
const M = T0 - (T0 % 60_000);
const NEXT = M + 60_000;

let server: RedisServer;
beforeAll(async () => {
  server = await RedisServer.start();
});
afterAll(async () => {
  await server.stop();
});

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

let seq = 0;
const NO_COUNTER = {} as TokenCounter;
const usage = (promptTokens: number): AnswerUsage => ({ promptTokens, completionTokens: 0, text: '', generated: null });
const landed = (ms = 200): Promise<void> => new Promise((r) => setTimeout(r, ms));

function limitOf(unit: WindowUnit): RateLimitSpec {
  return { inputTokensPerUnit: 100, outputTokensPerUnit: null, unit, global: null, mode: 'enforce' };
}

/** A limiter whose clock (the store's) is `clock.now`, leases off unless `leases`, settles sent 5 ms after their turn. */
async function limiter(clock: { now: number }, leases = false): Promise<RedisLimiter> {
  const settings = parseRedisLimitSettings({ RATE_LIMIT_REDIS_FAILURE_MODE: 'closed', RATE_LIMIT_REDIS_TIMEOUT: '5s', RATE_LIMIT_REDIS_LEASES: String(leases) });
  const l = new RedisLimiter(server.address, settings, NO_FALLBACK, { clock: () => clock.now, log: () => {}, settleWaitMs: 5 });
  cleanups.push(() => l.close());
  await untilUp(l);
  return l;
}

/** limiter() with one route limit of `unit` on it. */
async function routeLimiter(clock: { now: number }, unit: WindowUnit = 'minute'): Promise<{ r: string; terms: ScopedTerm[] }> {
  const l = await limiter(clock);
  const r = `correction-window-${process.pid}/r${++seq}`;
  return { r, terms: [{ key: r, limit: limitOf(unit), limiter: l, scope: 'route' }] };
}

async function inputCount(r: string, unit: WindowUnit, windowStartMs: number): Promise<number> {
  return Number(await server.cli('get', `ir:{${r}}:in:${unit}:${windowStartMs / 1000}`));
}

/** The request context as the pipeline leaves it once admitted (worker/pipeline.ts). */
function admittedContext(inputTokens: number, a: RequestAdmission, admittedAt: number): RequestContext {
  return { inputTokens, outputTokens: 0, outputTokensEstimated: 0, admittedAt, admittedByFailureMode: a.byFailureMode, admittedLateCharges: a.lateCharges, admittedWindows: a.windows } as unknown as RequestContext;
}

describe('the window of an input correction is the one Redis charged', () => {
  it('an admission names the window the script charged, by the store clock', async () => {
    const clock = { now: T0 };
    const { terms } = await routeLimiter(clock);
    const a = await admitRequest(terms, 6);
    expect(a.windows).toEqual([M]);
  });

  it('so does each limit of an admission against a route and a tenant (one call of the admit-all script), each of its own unit', async () => {
    const clock = { now: T0 };
    const l = await limiter(clock);
    const r = `correction-window-${process.pid}/r${++seq}`;
    const a = await admitRequest([
      { key: r, limit: limitOf('minute'), limiter: l, scope: 'route' },
      { key: `${r}-tenant`, limit: limitOf('hour'), limiter: l, scope: 'tenant' },
    ], 6);
    expect(a.admitted).toBe(true);
    expect(a.windows).toEqual([M, T0 - (T0 % 3_600_000)]);
  });

  it('and an admission from a lease names the window the lease was lent in (where its tokens were charged)', async () => {
    const clock = { now: T0 };
    const l = await limiter(clock, true);
    const r = `correction-window-${process.pid}/r${++seq}`;
    const limit: RateLimitSpec = { ...limitOf('minute'), inputTokensPerUnit: 100_000 };
    await l.admit(r, limit, 10); // asks for a lease
    const fromLease = l.admit(r, limit, 10);
    expect(fromLease).not.toBeInstanceOf(Promise); // decided by the lease, without a call
    expect((fromLease as Awaited<typeof fromLease>).window).toBe(M);
  });

  it("a give-back whose window is still on by Redis's clock is taken off, though this process's clock has left that window", async () => {
    const clock = { now: T0 }; // Redis's second stays the same: its clock is behind this process's
    const { r, terms } = await routeLimiter(clock, 'second');
    const a = await admitRequest(terms, 6);
    const admittedAt = Date.now();
    expect(await inputCount(r, 'second', T0)).toBe(6);
    await landed(1_050); // this process's second is over
    await giveBackInput(terms, 6, a.byFailureMode, admittedAt, a.lateCharges, a.windows);
    await landed();
    expect(await inputCount(r, 'second', T0)).toBe(0);
  });

  it("a give-back whose window is over by Redis's clock is dropped, though this process's clock is still in it: the next window keeps its count", async () => {
    const clock = { now: T0 };
    const { r, terms } = await routeLimiter(clock);
    const a = await admitRequest(terms, 6);
    const admittedAt = Date.now();
    clock.now = NEXT + 10_000; // Redis's minute ended (its clock runs ahead of this process's)
    await admitRequest(terms, 4);
    await giveBackInput(terms, 6, a.byFailureMode, admittedAt, a.lateCharges, a.windows);
    await landed();
    expect(await inputCount(r, 'minute', M)).toBe(6); // that window is over: its count no longer matters
    expect(await inputCount(r, 'minute', NEXT)).toBe(4); // not 0: the next window owes the request nothing
  });

  it("an answer's input correction after Redis's window ended corrects nothing in the next one; one in the window it was charged in does", async () => {
    const clock = { now: T0 };
    const { r, terms } = await routeLimiter(clock);
    const early = await admitRequest(terms, 6);
    const earlyCtx = admittedContext(6, early, Date.now());
    clock.now = NEXT + 10_000;
    const late = await admitRequest(terms, 4);
    const lateCtx = admittedContext(4, late, Date.now());
    expect(late.windows).toEqual([NEXT]);
    // Both answers end in the same turn: their corrections, of two windows, do not share a call.
    settleUsage(earlyCtx, NO_COUNTER, usage(9), terms); // +3, of window M: dropped
    settleUsage(lateCtx, NO_COUNTER, usage(5), terms); // +1, of the window on
    await landed();
    expect(await inputCount(r, 'minute', NEXT)).toBe(5);
    expect(await inputCount(r, 'minute', M)).toBe(6);
  });
});
