/**
 * The `local` failure mode against a real redis-server: each charge settles against the store that
 * holds it. A request the local counters decided (Redis unavailable, or slower than the timeout) is
 * not charged in Redis, even when Redis runs the timed-out call after all; its give-back and input
 * correction go to the local counters, even once Redis is back, and its output, usage measured
 * when the answer ends, to Redis once it is back. A request Redis admitted never has its give-back
 * taken off the local counters while Redis is away.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { AnswerUsage } from '../../../src/api/inference-api.js';
import type { RateLimitSpec } from '../../../src/config/resource-types.js';
import type { RequestContext } from '../../../src/http/request-context.js';
import { giveBackInput } from '../../../src/ratelimit/admit-all.js';
import { CounterStore } from '../../../src/ratelimit/local/counter-store.js';
import type { Decision } from '../../../src/ratelimit/limiter.js';
import { RedisLimiter } from '../../../src/ratelimit/redis/limiter.js';
import { parseRedisLimitSettings } from '../../../src/ratelimit/redis/settings.js';
import { admitRequest, type RequestAdmission, type ScopedTerm } from '../../../src/ratelimit/request-admission.js';
import type { TokenCounter } from '../../../src/tokens/token-counter.js';
import { settleUsage } from '../../../src/usage/settle-usage.js';
import { serverPort } from '../../helpers/ports.js';
import { RedisServer } from '../../helpers/redis-server.js';
import { untilUp } from './until-up.js';

const T0 = Date.UTC(2025, 0, 15, 10, 30, 20);
const MINUTE_START = (T0 - (T0 % 60_000)) / 1000;
const SETTLE_WAIT = 5;
const clock = (): number => T0;
const spec = (input: number, output: number | null): RateLimitSpec => ({ inputTokensPerUnit: input, outputTokensPerUnit: output, unit: 'minute', global: null, mode: 'enforce' });

let seq = 0;
const route = (): string => `fallback-${process.pid}/r${++seq}`;

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function server(port?: number): Promise<RedisServer> {
  const s = await RedisServer.start(port === undefined ? {} : { port });
  cleanups.push(async () => {
    s.resume();
    await s.stop();
  });
  return s;
}

/** A worker's global limiter in the `local` failure mode, its local counters beside it. */
function limiter(address: string, leases: string, mode = 'local'): { l: RedisLimiter; fallback: CounterStore } {
  const settings = parseRedisLimitSettings({ RATE_LIMIT_REDIS_FAILURE_MODE: mode, RATE_LIMIT_REDIS_TIMEOUT: '100ms', RATE_LIMIT_REDIS_LEASES: leases });
  const fallback = new CounterStore(clock);
  const l = new RedisLimiter(address, settings, fallback, { clock, log: () => {}, settleWaitMs: SETTLE_WAIT, probeIntervalMs: 50, reconnectCapMs: 100 });
  cleanups.push(() => l.close());
  return { l, fallback };
}

/** A redis-server, a limiter (leases off, failure mode `mode`) connected to it, and one route limit of 100 in, 1000 out a minute. */
async function oneLimitUp(mode = 'local'): Promise<{ s: RedisServer; l: RedisLimiter; fallback: CounterStore; r: string; limit: RateLimitSpec; terms: ScopedTerm[] }> {
  const s = await server();
  const { l, fallback } = limiter(s.address, 'false', mode);
  await untilUp(l);
  const r = route();
  const limit = spec(100, 1000);
  return { s, l, fallback, r, limit, terms: [{ key: r, limit, limiter: l, scope: 'route' }] };
}

async function counts(s: RedisServer, key: string): Promise<{ in: number; out: number; lent: string }> {
  return {
    in: Number(await s.cli('get', `ir:{${key}}:in:minute:${MINUTE_START}`)),
    out: Number(await s.cli('get', `ir:{${key}}:out:minute:${MINUTE_START}`)),
    lent: await s.cli('get', `ir:{${key}}:ls:minute:${MINUTE_START}`),
  };
}

/** What the local counters hold for `key` (input used, output used), read by a zero-token admission. */
function local(fallback: CounterStore, key: string, limit: RateLimitSpec): { in: number; out: number } {
  const d = fallback.admit(key, limit, 0);
  return { in: limit.inputTokensPerUnit! - d.input!.remaining, out: limit.outputTokensPerUnit === null ? 0 : limit.outputTokensPerUnit - d.output!.remaining };
}

/** The request context as the pipeline leaves it once admitted (worker/pipeline.ts). */
function admittedContext(inputTokens: number, a: RequestAdmission): RequestContext {
  return { inputTokens, outputTokens: 0, outputTokensEstimated: 0, admittedAt: Date.now(), admittedByFailureMode: a.byFailureMode, admittedLateCharges: a.lateCharges, admittedWindows: a.windows } as unknown as RequestContext;
}

const usage = (promptTokens: number, completionTokens: number): AnswerUsage => ({ promptTokens, completionTokens, text: '', generated: null });
const NO_COUNTER = {} as TokenCounter;
/** Lets queued settles, give-backs and late replies reach Redis. */
const landed = (ms = SETTLE_WAIT + 100): Promise<void> => new Promise((r) => setTimeout(r, ms));

describe('the local failure mode: each charge settles against the store that holds it', () => {
  it.each(['true', 'false'])('admissions the local counters decided because Redis stalled past the timeout are not charged in Redis when it runs the call after all, admitted or refused (leases %s)', async (leases) => {
    const s = await server();
    const { l, fallback } = limiter(s.address, leases);
    await untilUp(l);
    const r = route();
    const limit = spec(10, null);
    fallback.admit(r, limit, 4); // the local counters hold 4 (an earlier outage); Redis 0
    s.pause();
    let ds: [Decision, Decision, Decision[]];
    try {
      ds = await Promise.all([l.admit(r, limit, 5), l.admit(r, limit, 3), l.admitAll([{ key: `${r}-2`, limit }, { key: `${r}-tenant`, limit }], 6)]);
    } finally {
      s.resume();
    }
    // Decided by the local counters: 4 + 5 fits, 4 + 5 + 3 does not; the two-limit request fits.
    expect([ds[0].allowed, ds[1].allowed, ds[2].map((d) => d.allowed)]).toEqual([true, false, [true, true]]);
    for (const d of [ds[0], ds[1], ...ds[2]]) expect(d.byFailureMode).toBe(true);
    await untilUp(l);
    await landed(300); // the late reply, and the call that gives back what it charged
    // Redis (which would have admitted all three) keeps nothing of them; the local counters keep what they admitted.
    for (const key of [r, `${r}-2`, `${r}-tenant`]) expect(await counts(s, key), key).toEqual({ in: 0, out: 0, lent: '' });
    expect(local(fallback, r, limit).in).toBe(9);
    expect(local(fallback, `${r}-2`, limit).in).toBe(6);
  });

  it('a settle whose call timed out is charged once: its output to the local counters, which took it, not to Redis as well when Redis runs the call after all; its input correction lands in Redis, which holds the admission', async () => {
    const { s, l, fallback, r, limit, terms } = await oneLimitUp();
    const a = await admitRequest(terms, 6);
    expect([a.admitted, a.byFailureMode]).toEqual([true, 0]);
    s.pause();
    try {
      settleUsage(admittedContext(6, a), NO_COUNTER, usage(3, 7), terms);
      const deadline = Date.now() + 5000;
      while (l.state === 'up' && Date.now() < deadline) await landed(10);
      expect(l.state).not.toBe('up');
    } finally {
      s.resume();
    }
    await untilUp(l);
    await landed(300); // the late reply, and the call that undoes what it must not keep
    expect(await counts(s, r)).toEqual({ in: 3, out: 0, lent: '' });
    expect(local(fallback, r, limit)).toEqual({ in: 0, out: 7 });
  });

  /**
   * Two requests (6 and 4 input tokens) admitted by the failure mode `mode` while Redis is
   * unreachable; then Redis starts, holding 10 admitted meanwhile (other instances); the first
   * request's answer ends (the pod counted 3 prompt tokens, a correction of -3, and 7 output
   * tokens) and the second, which never reached a pod, gives its 4 input tokens back.
   */
  async function admittedDuringOutageThenSettled(mode: 'local' | 'open'): Promise<{ s: RedisServer; fallback: CounterStore; r: string; limit: RateLimitSpec }> {
    const port = await serverPort();
    const { l, fallback } = limiter(`127.0.0.1:${port}`, 'false', mode);
    const r = route();
    const limit = spec(100, 1000);
    const terms: ScopedTerm[] = [{ key: r, limit, limiter: l, scope: 'route' }];
    const a1 = await admitRequest(terms, 6);
    const a2 = await admitRequest(terms, 4);
    expect([a1.admitted, a2.admitted, a1.byFailureMode, a2.byFailureMode]).toEqual([true, true, 1, 1]);
    const s = await server(port);
    await untilUp(l);
    await s.cli('set', `ir:{${r}}:in:minute:${MINUTE_START}`, '10');
    settleUsage(admittedContext(6, a1), NO_COUNTER, usage(3, 7), terms);
    await giveBackInput(terms, 4, a2.byFailureMode, Date.now(), a2.lateCharges, a2.windows);
    await landed();
    return { s, fallback, r, limit };
  }

  it('a request admitted by the local counters while Redis was down: its give-back and input correction go there once Redis is back, never lowering Redis\'s count; its output is charged to Redis', async () => {
    const { s, fallback, r, limit } = await admittedDuringOutageThenSettled('local');
    expect(await counts(s, r)).toEqual({ in: 10, out: 7, lent: '' });
    expect(local(fallback, r, limit)).toEqual({ in: 3, out: 0 });
  });

  it('the open failure mode: a request it admitted while Redis was down charged nothing, so its give-back and correction never lower Redis\'s count once it is back', async () => {
    const { s, fallback, r } = await admittedDuringOutageThenSettled('open');
    expect(await counts(s, r)).toEqual({ in: 10, out: 7, lent: '' });
    expect(fallback.size).toBe(0);
  });

  it('a request admitted by Redis, settled while Redis is down: its give-back does not lower the local counters; its output is charged there', async () => {
    const { s, l, fallback, r, limit, terms } = await oneLimitUp();
    const a1 = await admitRequest(terms, 6);
    const a2 = await admitRequest(terms, 4);
    expect([a1.admitted, a2.admitted, a1.byFailureMode, a2.byFailureMode]).toEqual([true, true, 0, 0]);
    fallback.admit(r, limit, 5); // the local counters hold 5 (an earlier outage)
    await s.kill();
    const deadline = Date.now() + 5000;
    while (l.state === 'up' && Date.now() < deadline) await landed(10);
    expect(l.state).not.toBe('up');
    settleUsage(admittedContext(6, a1), NO_COUNTER, usage(3, 7), terms);
    await giveBackInput(terms, 4, a2.byFailureMode, Date.now(), a2.lateCharges, a2.windows);
    await landed();
    expect(local(fallback, r, limit)).toEqual({ in: 5, out: 7 });
  });
});

describe('give-backs of requests Redis charged, held while Redis is unavailable', () => {
  let now = T0;
  const movingClock = (): number => now;

  /** A limiter on a clock the test moves; `mode` failure mode, no leases. */
  function held(address: string, mode = 'local'): RedisLimiter {
    const settings = parseRedisLimitSettings({ RATE_LIMIT_REDIS_FAILURE_MODE: mode, RATE_LIMIT_REDIS_TIMEOUT: '100ms', RATE_LIMIT_REDIS_LEASES: 'false' });
    const l = new RedisLimiter(address, settings, new CounterStore(movingClock), { clock: movingClock, log: () => {}, settleWaitMs: SETTLE_WAIT, probeIntervalMs: 50, reconnectCapMs: 100 });
    cleanups.push(() => l.close());
    return l;
  }

  /**
   * Two requests of route `r` (6 and 4 input tokens) admitted by Redis; then Redis becomes
   * unavailable (`outage`) and, meanwhile, the first one's answer ends (the pod counted 3 prompt
   * tokens: -3) and the second, which never reached a pod, gives its 4 back; then Redis is back
   * (`back`).
   */
  async function givenBackDuringOutage(s: RedisServer, r: string, outage: () => Promise<unknown> | void, back: () => Promise<unknown> | void): Promise<void> {
    now = T0;
    const l = held(s.address);
    await untilUp(l);
    const limit = spec(100, 1000);
    const terms: ScopedTerm[] = [{ key: r, limit, limiter: l, scope: 'route' }];
    const a1 = await admitRequest(terms, 6);
    const a2 = await admitRequest(terms, 4);
    expect([a1.admitted, a2.admitted, a1.byFailureMode, a2.byFailureMode]).toEqual([true, true, 0, 0]);
    expect((await counts(s, r)).in).toBe(10);
    await outage();
    // A request of another route finds Redis unavailable (a call that times out, or a lost connection).
    await l.admit(`${r}-other`, limit, 1);
    const deadline = Date.now() + 5000;
    while (l.state === 'up' && Date.now() < deadline) await landed(10);
    expect(l.state).not.toBe('up');
    // (The pipeline's window checks read the wall clock: the requests were admitted just now.)
    settleUsage(admittedContext(6, a1), NO_COUNTER, usage(3, 7), terms);
    await giveBackInput(terms, 4, a2.byFailureMode, Date.now(), a2.lateCharges, a2.windows);
    await landed();
    await back();
    await untilUp(l);
    await landed(300);
  }

  it('Redis stalled past the timeout, then went on (the same instance, the same window): the give-back and the correction held meanwhile are given back once it answers', async () => {
    const s = await server();
    const r = route();
    await givenBackDuringOutage(s, r, () => s.pause(), () => s.resume());
    expect((await counts(s, r)).in).toBe(3);
  });

  /** An outage with Redis running: a password is required from now on, and its clients are disconnected (new connections are refused). */
  async function locked(s: RedisServer): Promise<void> {
    await s.cli('config', 'set', 'requirepass', 'pw');
    await s.cli('-a', 'pw', '--no-auth-warning', 'client', 'kill', 'type', 'normal');
  }

  /** A command while locked. */
  const authed = (s: RedisServer, ...args: string[]): Promise<string> => s.cli('-a', 'pw', '--no-auth-warning', ...args);
  /** The limiter may connect again. */
  const unlocked = (s: RedisServer): Promise<string> => authed(s, 'config', 'set', 'requirepass', '');

  it('the connection was lost and the router reconnected to the same instance, its counts intact: the held give-backs are given back', async () => {
    const s = await server();
    const r = route();
    await givenBackDuringOutage(s, r, () => locked(s), () => unlocked(s));
    expect((await counts(s, r)).in).toBe(3);
  });

  it('Redis restarted empty on the same address (another instance): the held give-backs are dropped, never lowering what it counted since', async () => {
    const s = await server();
    const r = route();
    await givenBackDuringOutage(s, r, () => s.kill(), async () => {
      // Restarted locked: other routers charged 8 to it before the limiter reconnects (none of the requests of before is in it).
      const again = await RedisServer.start({ port: s.port, args: ['--requirepass', 'pw'] });
      cleanups.push(() => again.stop());
      await authed(again, 'set', `ir:{${r}}:in:minute:${MINUTE_START}`, '8');
      await unlocked(again);
    });
    expect((await counts(s, r)).in).toBe(8);
  });

  it('the window the requests were charged in ended before Redis came back: the held give-backs are dropped (the next window owes them nothing)', async () => {
    const s = await server();
    const r = route();
    await givenBackDuringOutage(s, r, () => locked(s), async () => {
      now = T0 + 60_000;
      await authed(s, 'set', `ir:{${r}}:in:minute:${MINUTE_START + 60}`, '8'); // the next window's requests
      await unlocked(s);
    });
    expect((await counts(s, r)).in).toBe(10);
    expect(await s.cli('get', `ir:{${r}}:in:minute:${MINUTE_START + 60}`)).toBe('8');
  });
});

describe('the open failure mode: a request admitted because its call timed out, that Redis then charged late', () => {
  /**
   * Redis stalls; a request (6 input tokens) and a two-limit request (5, route and tenant) are
   * admitted by the `open` mode when their calls time out. With `givenBackFirst`, both never reach
   * a pod and give their input back while Redis still stalls, before it runs the calls; else
   * after it ran them (the late replies came). `served`: they reached a pod instead, whose usage
   * counts 3 prompt tokens for the first (a correction of -3) and 5 for the second (none).
   */
  async function admittedOpenThenLate(givenBackFirst: boolean, served = false): Promise<{ s: RedisServer; r: string }> {
    const { s, l, r, limit, terms: one } = await oneLimitUp('open');
    const two: ScopedTerm[] = [{ key: `${r}-2`, limit, limiter: l, scope: 'route' }, { key: `${r}-tenant`, limit, limiter: l, scope: 'tenant' }];
    s.pause();
    let a1: RequestAdmission;
    let a2: RequestAdmission;
    try {
      [a1, a2] = await Promise.all([admitRequest(one, 6), admitRequest(two, 5)]);
      expect([a1.admitted, a1.byFailureMode, a2.admitted, a2.byFailureMode]).toEqual([true, 1, true, 3]);
      if (givenBackFirst && !served) {
        await giveBackInput(one, 6, a1.byFailureMode, Date.now(), a1.lateCharges, a1.windows);
        await giveBackInput(two, 5, a2.byFailureMode, Date.now(), a2.lateCharges, a2.windows);
      }
      if (givenBackFirst && served) {
        settleUsage(admittedContext(6, a1), NO_COUNTER, usage(3, 0), one);
        settleUsage(admittedContext(5, a2), NO_COUNTER, usage(5, 0), two);
      }
    } finally {
      s.resume();
    }
    await untilUp(l);
    await landed(300); // the late replies (and what they undo)
    if (!givenBackFirst && !served) {
      await giveBackInput(one, 6, a1.byFailureMode, Date.now(), a1.lateCharges, a1.windows);
      await giveBackInput(two, 5, a2.byFailureMode, Date.now(), a2.lateCharges, a2.windows);
    }
    if (!givenBackFirst && served) {
      settleUsage(admittedContext(6, a1), NO_COUNTER, usage(3, 0), one);
      settleUsage(admittedContext(5, a2), NO_COUNTER, usage(5, 0), two);
    }
    await landed();
    return { s, r };
  }

  it.each([true, false])('one that never reached a pod is not charged in Redis in the end (given back before the late reply came: %s)', async (givenBackFirst) => {
    const { s, r } = await admittedOpenThenLate(givenBackFirst);
    for (const key of [r, `${r}-2`, `${r}-tenant`]) expect((await counts(s, key)).in, key).toBe(0);
  });

  it.each([true, false])('one that was served keeps the charge Redis made late (nothing else counts it), with its answer\'s input correction (settled before the late reply came: %s)', async (settledFirst) => {
    const { s, r } = await admittedOpenThenLate(settledFirst, true);
    expect((await counts(s, r)).in).toBe(3);
    for (const key of [`${r}-2`, `${r}-tenant`]) expect((await counts(s, key)).in, key).toBe(5);
  });

  it('one refused by a limit of another store after Redis\'s call timed out (decided one after the other) is not charged in Redis in the end', async () => {
    const s = await server();
    const { l } = limiter(s.address, 'false', 'open');
    await untilUp(l);
    const r = route();
    const tenantCounters = new CounterStore(clock);
    const terms: ScopedTerm[] = [
      { key: r, limit: spec(100, 1000), limiter: l, scope: 'route' },
      { key: `${r}-tenant`, limit: spec(5, null), limiter: tenantCounters, scope: 'tenant' }, // a local limit of 5: refuses 6
    ];
    s.pause();
    let a: RequestAdmission;
    try {
      a = await admitRequest(terms, 6);
    } finally {
      s.resume();
    }
    expect([a.admitted, a.shownScope]).toEqual([false, 'tenant']);
    await untilUp(l);
    await landed(300); // the late reply, and what it undoes
    expect((await counts(s, r)).in).toBe(0);
  });
});
