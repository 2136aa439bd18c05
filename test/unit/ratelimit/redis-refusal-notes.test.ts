/**
 * Refusal notes of the global limit (with leases, the default) against a real redis-server: an
 * admission a script call refused for good leaves the reply's counts as the key's note, and for
 * NOTE_VIEW_MS the worker refuses what those counts refuse without a call. Each limiter here is one
 * worker (its own connection); time is an injected clock, so the note's view ends without sleeping.
 */
import { describe, expect, it } from 'vitest';
import type { RateLimitSpec } from '../../../src/config/resource-types.js';
import type { Decision, LimitTerm } from '../../../src/ratelimit/limiter.js';
import { Batch, FIRST_STATUS } from '../../../src/ratelimit/redis/batch.js';
import { LEASE_VIEW_MS } from '../../../src/ratelimit/redis/leases.js';
import { RedisLimiter } from '../../../src/ratelimit/redis/limiter.js';
import { NOTE_VIEW_MS, RedisRefusalNotes } from '../../../src/ratelimit/redis/refusal-notes.js';
import { parseRedisLimitSettings } from '../../../src/ratelimit/redis/settings.js';
import { scriptCallsIn } from '../../../bench/redis-stats.js';
import { NO_FALLBACK } from './no-fallback.js';
import { untilUp } from './until-up.js';
import { RedisServer } from '../../helpers/redis-server.js';
import { redisServerPerFile } from './redis-per-file.js';

const T0 = Date.UTC(2025, 0, 15, 10, 30, 20);
const SETTLE_WAIT = 5;

const spec = (input: number | null, output: number | null, mode: 'enforce' | 'shadow' = 'enforce'): RateLimitSpec =>
  ({ inputTokensPerUnit: input, outputTokensPerUnit: output, unit: 'minute', global: null, mode });

let now = T0;
let seq = 0;
const open: RedisLimiter[] = [];
const redis = redisServerPerFile(open, () => {
  now = T0;
});
const route = (): string => `note-${process.pid}/r${++seq}`;

async function worker(leases = true, address = redis.server.address): Promise<RedisLimiter> {
  const settings = parseRedisLimitSettings({
    RATE_LIMIT_REDIS_FAILURE_MODE: 'closed', RATE_LIMIT_REDIS_TIMEOUT: '5s', RATE_LIMIT_REDIS_LEASES: String(leases),
  });
  const l = new RedisLimiter(address, settings, NO_FALLBACK, { clock: () => now, log: () => {}, settleWaitMs: SETTLE_WAIT, probeIntervalMs: 50, reconnectCapMs: 100 });
  open.push(l);
  await untilUp(l);
  return l;
}

async function scriptCalls(): Promise<number> {
  return scriptCallsIn(await redis.server.cli('info', 'commandstats'));
}

/** Lets queued settles reach Redis (they wait SETTLE_WAIT ms for an admission to ride with). */
const landed = (): Promise<void> => new Promise((r) => setTimeout(r, SETTLE_WAIT + 40));

/** A decided admission, checked to be decided here (no call) or in Redis (a Promise). */
function here<T>(d: T | Promise<T>): T {
  expect(d instanceof Promise).toBe(false);
  return d as T;
}

function inRedis<T>(d: T | Promise<T>): Promise<T> {
  expect(d instanceof Promise).toBe(true);
  return d as Promise<T>;
}

/** A route of 1,000 input tokens a minute with 990 used; the worker's request of 20 refused by Redis. */
async function refusedOnce(w: RedisLimiter, limit = spec(1_000, null)): Promise<{ r: string; limit: RateLimitSpec; refusal: Decision }> {
  const r = route();
  expect((await w.admit(r, limit, 990)).allowed).toBe(true);
  const refusal = await inRedis(w.admit(r, limit, 20));
  expect(refusal.rejectedBy).toBe('input');
  return { r, limit, refusal };
}

describe('refusal notes of the global limit', () => {
  it('a request refused for good is refused again from the note, with the same decision, without a call; one the note does not refuse goes to Redis', async () => {
    const a = await worker();
    const { r, limit, refusal } = await refusedOnce(a);
    expect(refusal.input).toEqual({ limit: 1_000, remaining: 10, resetSeconds: 40 });
    await redis.server.cli('config', 'resetstat');
    for (let i = 0; i < 50; i++) expect(here(a.admit(r, limit, 20))).toEqual(refusal);
    expect(here(a.admit(r, limit, 11)).rejectedBy).toBe('input');
    expect(await scriptCalls()).toBe(0);
    // 10 tokens fit: not the note's to refuse.
    expect((await inRedis(a.admit(r, limit, 10))).allowed).toBe(true);
    expect(await scriptCalls()).toBe(1);
  });

  it('a note is used for NOTE_VIEW_MS after its reply: another worker\'s give-back is seen when it ends, and the request that then fits is admitted', async () => {
    expect(NOTE_VIEW_MS).toBe(LEASE_VIEW_MS);
    const a = await worker();
    const b = await worker();
    const r = route();
    const limit = spec(1_000, null);
    const first = await a.admit(r, limit, 990);
    expect((await inRedis(b.admit(r, limit, 20))).allowed).toBe(false);
    // `a`'s request never reached a pod: its input goes back, in a call of `a`'s.
    await a.adjustInput(r, limit, -500, false, 0, first.window);
    await landed();
    // Within the view `b` does not know of it (the slack a note has, as a lease's view of output).
    now += NOTE_VIEW_MS;
    expect(here(b.admit(r, limit, 20)).allowed).toBe(false);
    now += 1;
    expect((await inRedis(b.admit(r, limit, 20))).allowed).toBe(true);
  });

  it('the worker\'s own give-back drops its note: its next request is decided in Redis, after the give-back', async () => {
    const a = await worker();
    const { r, limit } = await refusedOnce(a);
    expect(here(a.admit(r, limit, 20)).allowed).toBe(false);
    void a.adjustInput(r, limit, -500);
    expect((await inRedis(a.admit(r, limit, 20))).allowed).toBe(true);
  });

  it('the note counts the admissions its call admitted before the refusal', async () => {
    const a = await worker();
    const r = route();
    const limit = spec(1_000, null);
    expect((await a.admit(r, limit, 980)).allowed).toBe(true);
    // One turn, one call: 5 admitted, then 20 refused (985 + 20 > 1,000).
    const [five, twenty] = await Promise.all([a.admit(r, limit, 5), a.admit(r, limit, 20)]);
    expect([five.allowed, twenty.allowed]).toEqual([true, false]);
    expect(twenty.input?.remaining).toBe(15);
    expect(here(a.admit(r, limit, 16)).input?.remaining).toBe(15);
    expect((await inRedis(a.admit(r, limit, 15))).allowed).toBe(true);
  });

  it('another worker\'s lease out counts as given back: the note refuses only what would not fit with it back, with the figures the script gave', async () => {
    const a = await worker();
    const b = await worker();
    const r = route();
    const limit = spec(10_000, null);
    expect((await b.admit(r, limit, 5)).allowed).toBe(true); // b now holds a lease of the window
    const lent = Number(await redis.server.cli('get', `ir:{${r}}:ls:minute:${(T0 - (T0 % 60_000)) / 1000}`));
    expect(lent).toBeGreaterThan(0);
    // Too large even with b's lease back: refused for good.
    const refusal = await inRedis(a.admit(r, limit, 9_996));
    expect(refusal.rejectedBy).toBe('input');
    expect(refusal.input?.remaining).toBe(9_995);
    expect(here(a.admit(r, limit, 9_996))).toEqual(refusal);
    // 9,995 fits once the lease is back: the script's to decide (it recalls the lease).
    await inRedis(a.admit(r, limit, 9_995));
  });

  it('a count that only grows keeps the note: an output charge does not drop it', async () => {
    const a = await worker();
    const { r, limit } = await refusedOnce(a);
    void a.chargeOutput(r, limit, 30);
    expect(here(a.admit(r, limit, 20)).allowed).toBe(false);
  });

  it('the output limit reached: every request is refused from the note, by input first when its tokens do not fit, until the view ends', async () => {
    const a = await worker();
    const r = route();
    const limit = spec(1_000, 100);
    expect((await a.admit(r, limit, 10)).allowed).toBe(true);
    await a.chargeOutput(r, limit, 100);
    await landed();
    now += LEASE_VIEW_MS + 1; // the lease's view of the output count is too old: the next request goes to Redis
    const refusal = await inRedis(a.admit(r, limit, 5));
    expect(refusal.rejectedBy).toBe('output');
    expect(refusal.output).toEqual({ limit: 100, remaining: 0, resetSeconds: 40 });
    await redis.server.cli('config', 'resetstat');
    expect(here(a.admit(r, limit, 5))).toEqual(refusal);
    const byInput = here(a.admit(r, limit, 2_000));
    expect(byInput.rejectedBy).toBe('input');
    expect(byInput.input).toEqual({ limit: 1_000, remaining: 990, resetSeconds: 40 });
    expect(await scriptCalls()).toBe(0);
    now += NOTE_VIEW_MS + 1;
    expect((await inRedis(a.admit(r, limit, 5))).rejectedBy).toBe('output');
  });

  it('an output-only limit (never leased) reached: its requests are refused from the note too', async () => {
    const a = await worker();
    const r = route();
    const limit = spec(null, 100);
    expect((await inRedis(a.admit(r, limit, 10))).allowed).toBe(true);
    await a.chargeOutput(r, limit, 100);
    await landed();
    const refusal = await inRedis(a.admit(r, limit, 10));
    expect(refusal.rejectedBy).toBe('output');
    await redis.server.cli('config', 'resetstat');
    expect(here(a.admit(r, limit, 10))).toEqual(refusal);
    expect(await scriptCalls()).toBe(0);
  });

  it('the note\'s figures follow the injected clock: retry-after counts down to the window\'s end', async () => {
    const a = await worker();
    const { r, limit } = await refusedOnce(a);
    now += NOTE_VIEW_MS; // 39.95 s left: still 40 whole seconds
    expect(here(a.admit(r, limit, 20)).retryAfterSeconds).toBe(40);
  });

  it('a request under other limits (a config edit) goes to Redis', async () => {
    const a = await worker();
    const { r } = await refusedOnce(a);
    expect((await inRedis(a.admit(r, spec(2_000, null), 20))).allowed).toBe(true);
  });

  it('with RATE_LIMIT_REDIS_LEASES=false no note is kept: every refusal is a call', async () => {
    const a = await worker(false);
    const { r, limit } = await refusedOnce(a);
    await redis.server.cli('config', 'resetstat');
    for (let i = 0; i < 3; i++) expect((await inRedis(a.admit(r, limit, 20))).allowed).toBe(false);
    expect(await scriptCalls()).toBe(3);
  });

  it('a shadow limit keeps no note: its refusals are each decided in Redis', async () => {
    const a = await worker();
    const r = route();
    const limit = spec(1_000, null, 'shadow');
    expect((await a.admit(r, limit, 990)).allowed).toBe(true);
    expect((await inRedis(a.admit(r, limit, 20))).allowed).toBe(false);
    expect((await inRedis(a.admit(r, limit, 20))).allowed).toBe(false);
  });

  it('the notes go when the connection is lost: none outlives a reconnection to a Redis that lost its counts', async () => {
    const own = await RedisServer.start();
    try {
      const a = await worker(true, own.address);
      const r = route();
      const limit = spec(1_000, null);
      expect((await a.admit(r, limit, 990)).allowed).toBe(true);
      expect((await a.admit(r, limit, 20)).allowed).toBe(false);
      await own.cli('client', 'kill', 'type', 'normal');
      const deadline = Date.now() + 5000;
      while (a.state === 'up' && Date.now() < deadline) await new Promise((res) => setTimeout(res, 5));
      await own.cli('flushall');
      await untilUp(a);
      expect((await inRedis(a.admit(r, limit, 20))).allowed).toBe(true);
    } finally {
      await own.stop();
    }
  });
});

describe('refusal notes of the global limit for admissions against several limits (route and tenant)', () => {
  const both = (r: string, tenantInput: number): LimitTerm[] => [
    { key: r, limit: spec(1_000_000, null) },
    { key: `${r}-tenant`, limit: spec(tenantInput, null) },
  ];

  it('a tenant over its budget is refused from the notes with the decisions the script gave, without a call; the route alone and what fits still go on', async () => {
    const a = await worker();
    const r = route();
    const terms = both(r, 100);
    expect((await a.admitAll(terms, 90)).map((d) => d.allowed)).toEqual([true, true]);
    const refusal = await inRedis(a.admitAll(terms, 20));
    expect(refusal.map((d) => d.rejectedBy)).toEqual([null, 'input']);
    expect(refusal[0].input?.remaining).toBe(1_000_000 - 90);
    expect(refusal[1].input?.remaining).toBe(10);
    await redis.server.cli('config', 'resetstat');
    for (let i = 0; i < 20; i++) expect(here(a.admitAll(terms, 20))).toEqual(refusal);
    expect(await scriptCalls()).toBe(0);
    // The route's own lease still admits its requests without a tenant budget.
    expect(here(a.admit(r, terms[0].limit, 20)).allowed).toBe(true);
    expect((await inRedis(a.admitAll(terms, 10))).map((d) => d.allowed)).toEqual([true, true]);
  });

  it('a limit without a note of its own sends the request to Redis', async () => {
    const a = await worker();
    const r = route();
    const terms = both(r, 100);
    expect((await a.admitAll(terms, 90)).every((d) => d.allowed)).toBe(true);
    expect((await a.admitAll(terms, 20))[1].allowed).toBe(false);
    // Another tenant of the same route: its limit has no note here.
    const other: LimitTerm[] = [terms[0], { key: `${r}-other`, limit: spec(100, null) }];
    expect((await inRedis(a.admitAll(other, 20))).every((d) => d.allowed)).toBe(true);
  });

  it('no note with a shadow limit among them', async () => {
    const a = await worker();
    const r = route();
    const terms: LimitTerm[] = [{ key: r, limit: spec(1_000_000, null, 'shadow') }, { key: `${r}-tenant`, limit: spec(100, null) }];
    expect((await a.admitAll(terms, 90)).map((d) => d.allowed)).toEqual([true, true]);
    expect((await inRedis(a.admitAll(terms, 20)))[1].allowed).toBe(false);
    expect((await inRedis(a.admitAll(terms, 20)))[1].allowed).toBe(false);
  });
});

describe('RedisRefusalNotes', () => {
  it('drops the notes whose view is over once it holds many: keys refused once and never again are not kept', () => {
    let t = 1_000;
    const notes = new RedisRefusalNotes(() => t);
    const limit = spec(10, null);
    const refuse = (key: string): void => {
      const b = new Batch(key, `ir:{${key}}`, 'minute', '');
      b.join({ key, limit, tokens: 20, waits: 0, resolve: () => {}, reject: () => {} });
      // 40 s left, 5 used, nothing else; the admission refused by input.
      const reply = [40_000, 5, 0, 0, 0, 0, 0, 0, 1];
      expect(reply.length).toBe(FIRST_STATUS + 1);
      notes.fromReply(b, reply);
    };
    for (let i = 0; i < 200; i++) refuse(`k${i}`);
    expect(notes.size).toBe(200); // all within one view
    t += NOTE_VIEW_MS + 1;
    refuse('late');
    expect(notes.size).toBe(1);
    expect(notes.refuse('late', limit, 6)?.rejectedBy).toBe('input');
    expect(notes.refuse('late', limit, 5)).toBeNull();
  });
});
