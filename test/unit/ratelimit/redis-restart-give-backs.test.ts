/**
 * A give-back goes only to the Redis instance that charged it, against a real redis-server
 * restarted on the same address: a request admitted before the restart gives nothing back to the
 * new instance (which never held its charge), whether the give-back goes out while it answers or
 * is held while it stalls, or while the router is still reading which instance answers; one
 * admitted by the instance answering now is given back.
 */
import net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import type { AnswerUsage } from '../../../src/api/inference-api.js';
import type { RateLimitSpec } from '../../../src/config/resource-types.js';
import type { RequestContext } from '../../../src/http/request-context.js';
import { giveBackInput } from '../../../src/ratelimit/admit-all.js';
import { CounterStore } from '../../../src/ratelimit/local/counter-store.js';
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
const limit: RateLimitSpec = { inputTokensPerUnit: 100, outputTokensPerUnit: null, unit: 'minute', global: null, mode: 'enforce' };

let seq = 0;
const route = (): string => `restart-${process.pid}/r${++seq}`;

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const landed = (ms = 300): Promise<void> => new Promise((r) => setTimeout(r, ms));
const NO_COUNTER = {} as TokenCounter;
const usage = (promptTokens: number): AnswerUsage => ({ promptTokens, completionTokens: 0, text: '', generated: null });

/** The request context as the pipeline leaves it once admitted (worker/pipeline.ts), admitted at `admittedAt`. */
function admittedContext(inputTokens: number, a: RequestAdmission, admittedAt: number): RequestContext {
  return { inputTokens, outputTokens: 0, outputTokensEstimated: 0, admittedAt, admittedByFailureMode: a.byFailureMode, admittedLateCharges: a.lateCharges, admittedWindows: a.windows } as unknown as RequestContext;
}

async function inputCount(s: RedisServer, r: string): Promise<number> {
  return Number(await s.cli('get', `ir:{${r}}:in:minute:${MINUTE_START}`));
}

/** A redis-server, stopped (resumed first, if paused) after the test. */
async function redisServer(): Promise<RedisServer> {
  const s = await RedisServer.start();
  cleanups.push(async () => {
    s.resume();
    await s.stop();
  });
  return s;
}

/**
 * A limiter connected to `address` (`local` failure mode, store timeout `timeout`, leases off,
 * its log lines to `log`) with one route limit on it: `terms` of a request of route `r`.
 */
async function routeLimiter(address: string, timeout: string, log: (m: string, level?: 'warn' | 'error') => void = () => {}): Promise<{ l: RedisLimiter; r: string; terms: ScopedTerm[] }> {
  const settings = parseRedisLimitSettings({ RATE_LIMIT_REDIS_FAILURE_MODE: 'local', RATE_LIMIT_REDIS_TIMEOUT: timeout, RATE_LIMIT_REDIS_LEASES: 'false' });
  const l = new RedisLimiter(address, settings, new CounterStore(clock), { clock, log, settleWaitMs: SETTLE_WAIT, probeIntervalMs: 50, reconnectCapMs: 100 });
  cleanups.push(() => l.close());
  await untilUp(l);
  const r = route();
  return { l, r, terms: [{ key: r, limit, limiter: l, scope: 'route' }] };
}

/** A redis-server and a routeLimiter connected to it, store timeout `timeout` (100 ms by default). */
async function oneRouteUp(timeout = '100ms'): Promise<{ s: RedisServer; l: RedisLimiter; r: string; terms: ScopedTerm[] }> {
  const s = await redisServer();
  return { s, ...(await routeLimiter(s.address, timeout)) };
}

/**
 * Route `r`'s requests of 6 and 4 input tokens admitted by Redis, then a stall of Redis (the circuit
 * opens) and its end (it closes again); `beforeUp` runs while Redis is stalled.
 */
async function stalledOnce(l: RedisLimiter, s: RedisServer, terms: ScopedTerm[], r: string, beforeUp: () => void = () => {}): Promise<{ a1: RequestAdmission; a2: RequestAdmission; admittedAt: number }> {
  const a1 = await admitRequest(terms, 6);
  const a2 = await admitRequest(terms, 4);
  const admittedAt = Date.now();
  expect(await inputCount(s, r)).toBe(10);
  s.pause();
  await l.admit(`${r}-other`, limit, 1); // times out: the circuit opens
  expect(l.state).toBe('down');
  beforeUp();
  s.resume();
  await untilUp(l);
  return { a1, a2, admittedAt };
}

/** Route `r`'s input count, read until it is `expected` (a give-back may be held until the instance is read), up to 5 s. */
async function countOnceLanded(s: RedisServer, r: string, expected: number): Promise<number> {
  let count = await inputCount(s, r);
  for (let waited = 0; waited < 5000 && count !== expected; waited += 100) {
    await landed(100);
    count = await inputCount(s, r);
  }
  return count;
}

/**
 * Two requests of one route (6 and 4 input tokens) admitted by Redis; Redis restarts empty on the
 * same address and the limiter reconnects; a request of 8 is admitted by the new instance. With
 * `stalled`, the new instance then stalls past the timeout (the circuit opens) while the first
 * two end: the first one's answer counted 3 prompt tokens (-3), the second never reached a pod
 * (-4). Returns the new instance's count once everything landed.
 */
async function endedAfterRestart(stalled: boolean): Promise<{ before: number; after: number }> {
  const { s, l, r, terms } = await oneRouteUp();
  const a1 = await admitRequest(terms, 6);
  const a2 = await admitRequest(terms, 4);
  const admittedAt = Date.now();
  expect([a1.admitted, a2.admitted, a1.byFailureMode, a2.byFailureMode]).toEqual([true, true, 0, 0]);
  expect(await inputCount(s, r)).toBe(10);
  await s.restart();
  await untilUp(l);
  await landed(); // which instance answers is read
  const a3 = await admitRequest(terms, 8);
  expect([a3.admitted, a3.byFailureMode]).toEqual([true, 0]);
  const before = await inputCount(s, r);
  if (stalled) {
    s.pause();
    await l.admit(`${r}-other`, limit, 1); // times out: the circuit opens
    expect(l.state).toBe('down');
  }
  settleUsage(admittedContext(6, a1, admittedAt), NO_COUNTER, usage(3), terms);
  await giveBackInput(terms, 4, a2.byFailureMode, admittedAt, a2.lateCharges, a2.windows);
  await landed(50);
  if (stalled) {
    s.resume();
    await untilUp(l);
  }
  await landed();
  return { before, after: await inputCount(s, r) };
}

describe('give-backs after Redis restarted', () => {
  it('a request admitted before the restart gives nothing back to the new instance while it answers', async () => {
    expect(await endedAfterRestart(false)).toEqual({ before: 8, after: 8 });
  });

  it('nor once the new instance, stalled when the request ended, answers again (the give-back held meanwhile is not its own)', async () => {
    expect(await endedAfterRestart(true)).toEqual({ before: 8, after: 8 });
  });

  it('a request admitted by the instance answering now has its give-back and correction taken off there, after a stall too', async () => {
    // A timeout of 1 s, not 100 ms: on a busy machine the circuit's health probes can take over
    // 100 ms to answer (the read of which instance answers is not bound by it).
    const { s, l, r, terms } = await oneRouteUp('1s');
    const { a1, a2, admittedAt } = await stalledOnce(l, s, terms, r);
    await landed();
    settleUsage(admittedContext(6, a1, admittedAt), NO_COUNTER, usage(3), terms);
    await giveBackInput(terms, 4, a2.byFailureMode, admittedAt, a2.lateCharges, a2.windows);
    // Sent at once, or held until the instance is read, then sent.
    expect(await countOnceLanded(s, r, 3)).toBe(3);
  });
});

describe('a give-back waiting in its batch when Redis restarts', () => {
  it('is held for the instance it was made for, not sent to the new one once the limiter reconnected', async () => {
    const s = await RedisServer.start();
    cleanups.push(() => s.stop());
    const settings = parseRedisLimitSettings({ RATE_LIMIT_REDIS_FAILURE_MODE: 'local', RATE_LIMIT_REDIS_TIMEOUT: '100ms', RATE_LIMIT_REDIS_LEASES: 'false' });
    // A settle waits longer for an admission to ride along with than a reconnection takes.
    const l = new RedisLimiter(s.address, settings, new CounterStore(clock), { clock, log: () => {}, settleWaitMs: 2000, probeIntervalMs: 50, reconnectCapMs: 1 });
    cleanups.push(() => l.close());
    await untilUp(l);
    await landed(); // which instance answers is read
    const r = route();
    const terms: ScopedTerm[] = [{ key: r, limit, limiter: l, scope: 'route' }];
    const admittedAt = Date.now();
    while (Date.now() === admittedAt); // the circuit closed before; the admission begins after
    const a = await admitRequest(terms, 4);
    expect([a.admitted, a.byFailureMode]).toEqual([true, 0]);
    const given = giveBackInput(terms, 4, a.byFailureMode, admittedAt, a.lateCharges, a.windows); // waits in its batch
    await s.restart();
    await s.cli('set', `ir:{${r}}:in:minute:${MINUTE_START}`, '8'); // other routers' requests
    await untilUp(l);
    await given;
    await landed(2300); // past the settle wait: a batch still waiting would have gone out
    expect(await inputCount(s, r)).toBe(8);
  });
});

describe('give-backs of admissions that began before the first connection', () => {
  it('one the first instance charged (the store was starting when it began) is taken off there', async () => {
    const s = await RedisServer.start();
    cleanups.push(() => s.stop());
    const settings = parseRedisLimitSettings({ RATE_LIMIT_REDIS_FAILURE_MODE: 'local', RATE_LIMIT_REDIS_TIMEOUT: '2s', RATE_LIMIT_REDIS_LEASES: 'false' });
    const l = new RedisLimiter(s.address, settings, new CounterStore(clock), { clock, log: () => {}, settleWaitMs: SETTLE_WAIT, probeIntervalMs: 50, reconnectCapMs: 100 });
    cleanups.push(() => l.close());
    expect(l.state).toBe('starting');
    const r = route();
    const terms: ScopedTerm[] = [{ key: r, limit, limiter: l, scope: 'route' }];
    // The pipeline's admission time: taken before the store is asked, a millisecond before the
    // first connection can answer (no I/O runs during this synchronous wait).
    const admittedAt = Date.now();
    while (Date.now() === admittedAt);
    const a = await admitRequest(terms, 4);
    expect([a.admitted, a.byFailureMode]).toEqual([true, 0]);
    expect(await inputCount(s, r)).toBe(4);
    await landed(); // which instance answers is read
    await giveBackInput(terms, 4, a.byFailureMode, admittedAt, a.lateCharges, a.windows);
    await landed();
    expect(await inputCount(s, r)).toBe(0);
  });
});

/**
 * A TCP proxy to `port` that, once armed, holds every reply of the connection that sends
 * `INFO server` (what the store reads when the circuit closes) until released.
 */
async function replyHoldingProxy(port: number): Promise<{ port: number; arm(): void; release(): void }> {
  let armed = false;
  /** The connection whose replies are held, and them. */
  let held: { to: net.Socket; holding: Buffer[] | null } | null = null;
  const sockets: net.Socket[] = [];
  const srv = net.createServer((c) => {
    const u = net.connect(port, '127.0.0.1');
    sockets.push(c, u);
    const conn: { to: net.Socket; holding: Buffer[] | null } = { to: c, holding: null };
    c.on('data', (d) => {
      if (armed && d.toString('latin1').toLowerCase().includes('server\r\n')) {
        armed = false;
        conn.holding = [];
        held = conn;
      }
      u.write(d);
    });
    u.on('data', (d) => (conn.holding !== null ? conn.holding.push(d) : c.write(d)));
    c.on('close', () => u.destroy());
    u.on('close', () => c.destroy());
    c.on('error', () => {});
    u.on('error', () => {});
  });
  const proxyPort = await serverPort();
  await new Promise<void>((r) => srv.listen(proxyPort, '127.0.0.1', () => r()));
  cleanups.push(async () => {
    for (const x of sockets) x.destroy();
    await new Promise<void>((r) => srv.close(() => r()));
  });
  return {
    port: proxyPort,
    arm: () => (armed = true),
    release: () => {
      if (held === null || held.holding === null) return;
      for (const d of held.holding) held.to.write(d);
      held.holding = null;
      held = null;
    },
  };
}

/**
 * A redis-server, a reply-holding proxy in front of it and a limiter connected through the proxy
 * (`local` failure mode, store timeout `timeout`, leases off) whose first INFO answered; route `r`'s `terms`.
 */
async function behindReplyHoldingProxy(timeout: string): Promise<{ s: RedisServer; proxy: Awaited<ReturnType<typeof replyHoldingProxy>>; l: RedisLimiter; r: string; terms: ScopedTerm[] }> {
  const s = await redisServer();
  const proxy = await replyHoldingProxy(s.port);
  const up = await routeLimiter(`127.0.0.1:${proxy.port}`, timeout);
  await landed(); // the first INFO answered
  return { s, proxy, ...up };
}

describe('give-backs while the router reads which instance answers', () => {
  it('one that comes before the new instance is known is held, then dropped when it turns out to be another', async () => {
    const { s, proxy, l, r, terms } = await behindReplyHoldingProxy('1s');
    const a = await admitRequest(terms, 4);
    const admittedAt = Date.now();
    expect([a.admitted, a.byFailureMode]).toEqual([true, 0]);
    proxy.arm();
    await s.restart();
    await s.cli('set', `ir:{${r}}:in:minute:${MINUTE_START}`, '8'); // other routers' requests
    await untilUp(l); // reconnected; the store's INFO goes out, its reply held
    await giveBackInput(terms, 4, a.byFailureMode, admittedAt, a.lateCharges, a.windows);
    await landed();
    proxy.release();
    await landed();
    expect(await inputCount(s, r)).toBe(8);
  });
});

describe('the read of which instance answers, slower than the store timeout or refused', () => {
  it('a reply that comes after the timeout still says the same instance answers: the give-backs held meanwhile are taken off', async () => {
    const { s, proxy, l, r, terms } = await behindReplyHoldingProxy('100ms');
    const { a1, a2, admittedAt } = await stalledOnce(l, s, terms, r, () => proxy.arm());
    settleUsage(admittedContext(6, a1, admittedAt), NO_COUNTER, usage(3), terms);
    await giveBackInput(terms, 4, a2.byFailureMode, admittedAt, a2.lateCharges, a2.windows);
    await landed(400); // four timeouts: the INFO's reply is still held
    expect(await inputCount(s, r)).toBe(10);
    proxy.release();
    expect(await countOnceLanded(s, r, 3)).toBe(3);
  });

  it('INFO refused (an ACL without it): one warn line says so, and the give-backs of requests admitted before are dropped', async () => {
    const s = await redisServer();
    const lines: string[] = [];
    const { l, r, terms } = await routeLimiter(s.address, '1s', (m, level) => lines.push(`${level ?? 'info'} ${m}`));
    await landed();
    await s.cli('acl', 'setuser', 'default', '-info'); // the user the store connects as
    const { a1, a2, admittedAt } = await stalledOnce(l, s, terms, r);
    await landed();
    settleUsage(admittedContext(6, a1, admittedAt), NO_COUNTER, usage(3), terms);
    await giveBackInput(terms, 4, a2.byFailureMode, admittedAt, a2.lateCharges, a2.windows);
    await landed();
    expect(await inputCount(s, r)).toBe(10);
    const refused = lines.filter((x) => x.includes('could not be read'));
    expect(refused).toHaveLength(1);
    expect(refused[0]).toMatch(/^warn rate limit store .*: which Redis process answers could not be read \(INFO server: NOPERM/);
  });
});
