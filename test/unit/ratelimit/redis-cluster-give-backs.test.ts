/**
 * On a real 3-node Redis Cluster, a give-back goes only to the process that charged it: when the
 * node that owns a limit's slot restarts empty (no persistence) between a request's admission and
 * its give-back, the new process's count (which never held that charge) is not lowered, whether
 * the router has seen the new process answer for that limit or not; a give-back of a request the
 * new process admitted is taken off as usual.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RateLimitSpec } from '../../../src/config/resource-types.js';
import { RedisLimiter } from '../../../src/ratelimit/redis/limiter.js';
import { parseRedisLimitSettings } from '../../../src/ratelimit/redis/settings.js';
import { RedisClusterServers, type RedisServer } from '../../helpers/redis-server.js';
import { NO_FALLBACK } from './no-fallback.js';
import { untilUp } from './until-up.js';

const LIMIT: RateLimitSpec = { inputTokensPerUnit: 100, outputTokensPerUnit: null, unit: 'minute', global: null, mode: 'enforce' };
const T0 = Date.UTC(2025, 0, 15, 10, 30, 20);
const MINUTE_START = (T0 - (T0 % 60_000)) / 1000;
const clock = (): number => T0;

let cluster: RedisClusterServers;
const limiters: RedisLimiter[] = [];
let seq = 0;

beforeAll(async () => {
  cluster = await RedisClusterServers.start(3);
});

afterAll(async () => {
  await Promise.all(limiters.map((l) => l.close()));
  await cluster?.stop();
});

async function clusterLimiter(leases = false): Promise<RedisLimiter> {
  const settings = parseRedisLimitSettings({
    REDIS_CLUSTER: 'true', RATE_LIMIT_REDIS_FAILURE_MODE: 'closed', RATE_LIMIT_REDIS_TIMEOUT: '500ms', RATE_LIMIT_REDIS_LEASES: leases ? 'true' : 'false',
  });
  const l = new RedisLimiter(cluster.address, settings, NO_FALLBACK, { clock, log: () => {}, settleWaitMs: 5, probeIntervalMs: 50, reconnectCapMs: 100 });
  limiters.push(l);
  await untilUp(l, 'cluster limiter');
  return l;
}

const inKey = (r: string): string => `ir:{${r}}:in:minute:${MINUTE_START}`;

/** The node that serves `r`'s slot (the others answer MOVED). */
async function owner(r: string): Promise<RedisServer> {
  for (const n of cluster.nodes) if (!(await n.cli('get', inKey(r))).startsWith('MOVED')) return n;
  throw new Error(`no owner for ${r}`);
}

async function inputCount(r: string): Promise<number> {
  return Number(await (await owner(r)).cli('get', inKey(r)));
}

/** Restarts `node` empty on the same port (its cluster config, and so its slots, stay) and waits until the cluster serves again. */
async function restartEmpty(node: RedisServer): Promise<void> {
  await node.restart();
  for (const n of cluster.nodes) {
    const deadline = Date.now() + 20_000;
    while (!(await n.cli('cluster', 'info')).includes('cluster_state:ok')) {
      if (Date.now() > deadline) throw new Error(`cluster not ok on ${n.address}`);
      await new Promise((res) => setTimeout(res, 25));
    }
  }
}

/** Admits `tokens` on `r` once the limiter reaches the (restarted) node again; the admission must be allowed. */
async function admitWhenServed(l: RedisLimiter, r: string, tokens: number): Promise<void> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    try {
      const d = await l.admit(r, LIMIT, tokens);
      expect(d.allowed).toBe(true);
      return;
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await new Promise((res) => setTimeout(res, 50));
    }
  }
}

const landed = (ms = 200): Promise<void> => new Promise((res) => setTimeout(res, ms));

describe('give-backs on a Redis Cluster whose slot owner restarts', () => {
  it('a request admitted before the restart gives nothing back to the new process, also when the same router saw it answer', async () => {
    const l = await clusterLimiter();
    const r = `ns/cgb-${process.pid}-${++seq}`;
    const admittedAt = Date.now();
    expect((await l.admit(r, LIMIT, 30)).allowed).toBe(true);
    expect(await inputCount(r)).toBe(30);
    await restartEmpty(await owner(r));
    expect(await inputCount(r)).toBe(0);
    await admitWhenServed(l, r, 8); // the new process's own charge
    expect(await inputCount(r)).toBe(8);
    await l.adjustInput(r, LIMIT, -30, false, admittedAt); // never reached a pod
    await landed();
    expect(await inputCount(r)).toBe(8);
  });

  it('a router that has not seen the new process answer gives nothing back to it either', async () => {
    const a = await clusterLimiter();
    const b = await clusterLimiter();
    const r = `ns/cgb-${process.pid}-${++seq}`;
    const admittedAt = Date.now();
    expect((await a.admit(r, LIMIT, 30)).allowed).toBe(true);
    await restartEmpty(await owner(r));
    await admitWhenServed(b, r, 8);
    expect(await inputCount(r)).toBe(8);
    // `a` first reaches the new process with this give-back (a settle-only call), then its correction.
    let given = false;
    const deadline = Date.now() + 10_000;
    while (!given) {
      try {
        await a.adjustInput(r, LIMIT, -30, false, admittedAt);
        given = true;
      } catch (err) {
        if (Date.now() > deadline) throw err;
        await landed(50);
      }
    }
    await landed();
    expect(await inputCount(r)).toBe(8);
  });

  it('a give-back of a request the new process admitted is taken off', async () => {
    const a = await clusterLimiter();
    const b = await clusterLimiter();
    const r = `ns/cgb-${process.pid}-${++seq}`;
    expect((await a.admit(r, LIMIT, 30)).allowed).toBe(true);
    await restartEmpty(await owner(r));
    await admitWhenServed(b, r, 8);
    await admitWhenServed(a, r, 1); // `a` sees the new process answer
    const admittedAt = Date.now();
    await admitWhenServed(a, r, 20);
    await admitWhenServed(b, r, 5);
    expect(await inputCount(r)).toBe(34);
    await a.adjustInput(r, LIMIT, -20, false, admittedAt);
    await b.adjustInput(r, LIMIT, -5, false, admittedAt);
    await landed();
    expect(await inputCount(r)).toBe(9);
  });

  it.each([
    ['a positive correction made in the same turn is still charged', -30, 20, 28],
    ['a larger positive correction in the same turn does not carry it to the new process', -10, 30, 38],
  ])('a give-back the new process never held, summed with another request\'s correction: %s', async (_what, back, more, count) => {
    const l = await clusterLimiter();
    const b = await clusterLimiter();
    const r = `ns/cgb-${process.pid}-${++seq}`;
    const node = await owner(r);
    let other = '';
    for (let i = 0; other === '' || (await owner(other)) !== node; i++) other = `ns/cgb-other-${process.pid}-${seq}-${i}`;
    const admittedAt = Date.now();
    expect((await l.admit(r, LIMIT, -back)).allowed).toBe(true);
    expect((await l.admit(r, LIMIT, 10)).allowed).toBe(true);
    await restartEmpty(node);
    await admitWhenServed(b, r, 8);
    // `l` reaches the new process through another limit of that node: it has not seen `r`'s new incarnation.
    const deadline = Date.now() + 10_000;
    for (;;) {
      try {
        await l.chargeOutput(other, LIMIT, 1);
        break;
      } catch (err) {
        if (Date.now() > deadline) throw err;
        await landed(50);
      }
    }
    // In one turn: the first request never reached a pod (its input goes back), the second one's
    // backend counted more prompt tokens than estimated (charged whatever the incarnation).
    await Promise.all([l.adjustInput(r, LIMIT, back, false, admittedAt), l.adjustInput(r, LIMIT, more, false, admittedAt)]);
    await landed();
    expect(await inputCount(r)).toBe(count);
  });

  it('a give-back made while another node stalled (the circuit open) is held and given back to its node once the store answers', async () => {
    const settings = parseRedisLimitSettings({ REDIS_CLUSTER: 'true', RATE_LIMIT_REDIS_FAILURE_MODE: 'closed', RATE_LIMIT_REDIS_TIMEOUT: '200ms', RATE_LIMIT_REDIS_LEASES: 'false' });
    const l = new RedisLimiter(cluster.address, settings, NO_FALLBACK, { clock, log: () => {}, settleWaitMs: 5, probeIntervalMs: 50, reconnectCapMs: 100 });
    limiters.push(l);
    await untilUp(l, 'cluster limiter');
    const r = `ns/cgb-${process.pid}-${++seq}`;
    const node = await owner(r);
    let stalled = '';
    for (let i = 0; stalled === '' || (await owner(stalled)) === node; i++) stalled = `ns/cgb-stall-${process.pid}-${seq}-${i}`;
    const stalledNode = await owner(stalled);
    const admittedAt = Date.now();
    expect((await l.admit(r, LIMIT, 30)).allowed).toBe(true);
    stalledNode.pause();
    try {
      await expect(Promise.resolve(l.admit(stalled, LIMIT, 4))).rejects.toThrow(); // the circuit opens
      expect(l.state).toBe('down');
      await l.adjustInput(r, LIMIT, -30, false, admittedAt); // never reached a pod
    } finally {
      stalledNode.resume();
    }
    await untilUp(l, 'cluster limiter');
    await landed();
    expect(await inputCount(r)).toBe(0);
  });

  it('a give-back collected with a larger positive correction when the circuit opens is held in full (the correction is dropped)', async () => {
    const settings = parseRedisLimitSettings({ REDIS_CLUSTER: 'true', RATE_LIMIT_REDIS_FAILURE_MODE: 'closed', RATE_LIMIT_REDIS_TIMEOUT: '200ms', RATE_LIMIT_REDIS_LEASES: 'false' });
    // Settles alone wait this long for an admission to ride along with: still collected when the circuit opens.
    const l = new RedisLimiter(cluster.address, settings, NO_FALLBACK, { clock, log: () => {}, settleWaitMs: 5_000, probeIntervalMs: 50, reconnectCapMs: 100 });
    limiters.push(l);
    await untilUp(l, 'cluster limiter');
    const r = `ns/cgb-${process.pid}-${++seq}`;
    const node = await owner(r);
    let stalled = '';
    for (let i = 0; stalled === '' || (await owner(stalled)) === node; i++) stalled = `ns/cgb-stall-${process.pid}-${seq}-${i}`;
    const stalledNode = await owner(stalled);
    const admittedAt = Date.now();
    expect((await l.admit(r, LIMIT, 30)).allowed).toBe(true);
    expect((await l.admit(r, LIMIT, 10)).allowed).toBe(true);
    // One request never reached a pod (30 back), another's backend counted 40 more prompt tokens.
    const settled = Promise.allSettled([l.adjustInput(r, LIMIT, -30, false, admittedAt), l.adjustInput(r, LIMIT, 40, false, admittedAt)]);
    stalledNode.pause();
    try {
      await expect(Promise.resolve(l.admit(stalled, LIMIT, 4))).rejects.toThrow(); // the circuit opens
      expect(l.state).toBe('down');
      await settled;
    } finally {
      stalledNode.resume();
    }
    await untilUp(l, 'cluster limiter');
    await landed();
    expect(await inputCount(r)).toBe(10);
  });

  it('with leases: a lease lent by the process before the restart is not taken off the new process\'s count', async () => {
    const l = await clusterLimiter(true);
    const other = await clusterLimiter(true);
    const r = `ns/cgb-${process.pid}-${++seq}`;
    const admittedAt = Date.now();
    expect((await l.admit(r, LIMIT, 2)).allowed).toBe(true);
    const lent = await inputCount(r); // the admission and the lease lent with it
    expect(lent).toBeGreaterThan(2);
    await restartEmpty(await owner(r));
    await admitWhenServed(other, r, 8);
    const before = await inputCount(r);
    expect(before).toBeGreaterThanOrEqual(8);
    // The limiter gives its request's input back, and its lease with its next call of the key.
    await l.adjustInput(r, LIMIT, -2, false, admittedAt);
    await l.close();
    await landed();
    expect(await inputCount(r)).toBe(before);
  });
});
