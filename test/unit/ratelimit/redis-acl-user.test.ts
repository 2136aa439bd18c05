/**
 * The Redis ACL that docs/rate-limiting.md gives the router's user is enough: a real redis-server
 * with a user allowed only those commands and the `ir:*` keys runs the limiter's conformance
 * suite, leased admissions, and a give-back after a stall (the read of which instance answers,
 * INFO), with no permission error logged; without INFO the read fails and says so. A user without
 * a command the scripts call is found by the check at each connection, before any script runs:
 * one error line, the failure mode decides, no key is left without its expiry, and granting the
 * command at runtime brings the store back.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { RateLimitSpec } from '../../../src/config/resource-types.js';
import { CounterStore } from '../../../src/ratelimit/local/counter-store.js';
import { RedisLimiter } from '../../../src/ratelimit/redis/limiter.js';
import { parseRedisLimitSettings } from '../../../src/ratelimit/redis/settings.js';
import { awayFromMinuteBoundary } from '../../helpers/processes.js';
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
    // Redis's clock, per-minute window: the admits and the give-back must land in one minute.
    await awayFromMinuteBoundary(5);
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
      expect(lines.filter((x) => x.startsWith('warn') || x.startsWith('error'))).toEqual([]);
      expect(await keysWithoutExpiry(r)).toEqual([]);
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

async function until(what: string, cond: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await landed(10);
  }
}

/** The keys of route `r` in `node` (the shared server by default), and those of them with no expiry. */
async function keysOf(r: string, node: RedisServer = server): Promise<string[]> {
  return (await node.cli('--scan', '--pattern', `ir:{${r}}*`)).split('\n').filter((k) => k !== '');
}
async function keysWithoutExpiry(r: string, node: RedisServer = server): Promise<string[]> {
  const out: string[] = [];
  for (const k of await keysOf(r, node)) if (Number(await node.cli('pttl', k)) === -1) out.push(k); // -2: gone since the scan
  return out;
}

/** A limiter as `user` (a user made with the documented rules but `without`), `local` failure mode, leases on, probing every 50 ms. */
async function limiterWithout(user: string, without: string) {
  await server.cli('acl', 'setuser', user, 'reset', 'on', `>${PASSWORD}`, ...DOCUMENTED_RULES.filter((r) => r !== without));
  const lines: string[] = [];
  let errors = 0;
  const l = new RedisLimiter(server.address, userSettings(user), new CounterStore(), {
    log: (m, level) => lines.push(`${level ?? 'info'} ${m}`), probeIntervalMs: 50, onStoreError: () => errors++,
  });
  return { l, lines, errors: () => errors };
}

describe('a Redis user without a command the scripts call', () => {
  it('without PEXPIRE: one error line naming the user, the command and the rule to add; the failure mode decides, and no script runs, so no key is left without expiry', async () => {
    const { l, lines, errors } = await limiterWithout('router-no-pexpire', '+pexpire');
    try {
      await until('the error line', () => lines.some((x) => x.startsWith('error')));
      const r = route();
      for (let i = 0; i < 5; i++) {
        const d = await l.admit(r, limit, 3);
        expect(d.allowed).toBe(true);
        expect(d.byFailureMode).toBe(true);
        await l.chargeOutput(r, limit, 5);
        await landed(40);
      }
      expect(l.state).toBe('down');
      expect(lines.filter((x) => !x.startsWith('info'))).toEqual([
        `error rate limit store ${l.name}: the Redis user router-no-pexpire may not run PEXPIRE on the limiter's keys (ir:*), which its scripts call; ` +
        'failure mode "local" applies, and no script runs, until it may: grant it with ACL SETUSER router-no-pexpire +pexpire',
      ]);
      // Checked again at every probe (50 ms), each refusal counted as a store error.
      expect(errors()).toBeGreaterThan(1);
      expect(await keysOf(r)).toEqual([]);
    } finally {
      await l.close();
    }
  });

  it('granting PEXPIRE at runtime brings the store back without a restart: Redis decides again, and its keys expire', async () => {
    const { l, lines } = await limiterWithout('router-fixed', '+pexpire');
    try {
      await until('the error line', () => lines.some((x) => x.startsWith('error')));
      const r = route();
      expect((await l.admit(r, limit, 3)).byFailureMode).toBe(true);
      await server.cli('acl', 'setuser', 'router-fixed', '+pexpire');
      await untilUp(l);
      const d = await l.admit(r, limit, 7);
      expect(d.byFailureMode).toBeUndefined();
      expect(d.input?.remaining).toBe(93);
      await until('the line saying it is back', () => lines.some((x) => x.includes('is available again')));
      expect(lines.filter((x) => x.startsWith('error'))).toHaveLength(1);
      expect((await keysOf(r)).length).toBeGreaterThan(0);
      expect(await keysWithoutExpiry(r)).toEqual([]);
    } finally {
      await l.close();
    }
  });

  it('without every command on the limiter\'s keys (other key patterns): the rule names the key pattern too', async () => {
    await server.cli('acl', 'setuser', 'router-other-keys', 'reset', 'on', `>${PASSWORD}`, ...DOCUMENTED_RULES.map((r) => (r === '~ir:*' ? '~other:*' : r)));
    const lines: string[] = [];
    const l = new RedisLimiter(server.address, userSettings('router-other-keys'), new CounterStore(), { log: (m, level) => lines.push(`${level ?? 'info'} ${m}`) });
    try {
      await until('the error line', () => lines.some((x) => x.startsWith('error')));
      expect(lines.filter((x) => x.startsWith('error'))[0]).toMatch(
        /may not run GET, MGET, SET, DEL, INCRBY, DECRBY, PEXPIRE on the limiter's keys \(ir:\*\).*: grant them with ACL SETUSER router-other-keys ~ir:\* \+get \+mget \+set \+del \+incrby \+decrby \+pexpire$/,
      );
    } finally {
      await l.close();
    }
  });

  it('PEXPIRE taken away while connected: the call it refuses opens the circuit, and the check at the next probe keeps the scripts from running until it is granted again', async () => {
    await server.cli('acl', 'setuser', 'router-revoked', 'reset', 'on', `>${PASSWORD}`, ...DOCUMENTED_RULES);
    const lines: string[] = [];
    const l = new RedisLimiter(server.address, userSettings('router-revoked', { RATE_LIMIT_REDIS_LEASES: 'false' }), new CounterStore(), {
      log: (m, level) => lines.push(`${level ?? 'info'} ${m}`), probeIntervalMs: 50,
    });
    try {
      await untilUp(l);
      await server.cli('acl', 'setuser', 'router-revoked', '-pexpire');
      const first = route();
      expect((await l.admit(first, limit, 3)).byFailureMode).toBe(true); // its script is refused at PEXPIRE
      await until('the error line', () => lines.some((x) => x.startsWith('error')));
      const later = [route(), route(), route()];
      for (const r of later) {
        expect((await l.admit(r, limit, 3)).byFailureMode).toBe(true);
        await landed(60);
      }
      // The refused call kept what it wrote before PEXPIRE (Redis does not undo it); no call ran since.
      expect(await keysWithoutExpiry(first)).toHaveLength(1);
      for (const r of later) expect(await keysOf(r)).toEqual([]);
      expect(lines.filter((x) => x.startsWith('warn'))).toEqual([expect.stringMatching(/is unavailable \(ERR The user executing the script can't run this command.*: grant those docs\/rate-limiting\.md lists \(The Redis user\)$/)]);
      expect(lines.filter((x) => x.startsWith('error'))).toEqual([expect.stringContaining('grant it with ACL SETUSER router-revoked +pexpire')]);
      await server.cli('del', ...(await keysOf(first)));
      await server.cli('acl', 'setuser', 'router-revoked', '+pexpire');
      await untilUp(l);
      expect((await l.admit(first, limit, 3)).byFailureMode).toBeUndefined();
      expect(await keysWithoutExpiry(first)).toEqual([]);
    } finally {
      await l.close();
    }
  });
});

describe('a Redis Cluster whose user lacks a command on one node', () => {
  it('the check asks every primary: one error line, the rule to add on every node; granting it there brings the store back', async () => {
    const cluster = await RedisClusterServers.start(3);
    const lines: string[] = [];
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
    let l: RedisLimiter | null = null;
    try {
      for (const n of cluster.nodes) await n.cli('acl', 'setuser', 'router', 'on', `>${PASSWORD}`, ...DOCUMENTED_RULES, ...CLUSTER_RULES);
      await cluster.nodes[2].cli('acl', 'setuser', 'router', '-pexpire');
      const settings = userSettings('router', { REDIS_CLUSTER: 'true' });
      l = new RedisLimiter(cluster.address, settings, new CounterStore(), { log: (m, level) => lines.push(`${level ?? 'info'} ${m}`), probeIntervalMs: 50 });
      await until('the error line', () => lines.some((x) => x.startsWith('error')));
      expect(lines.filter((x) => x.startsWith('error'))).toEqual([
        `error rate limit store ${l.name}: the Redis user router may not run PEXPIRE on the limiter's keys (ir:*), which its scripts call; ` +
        'failure mode "local" applies, and no script runs, until it may: grant it with ACL SETUSER router +pexpire on every node',
      ]);
      const routes = Array.from({ length: 6 }, (_, i) => `acl-${i}/c-${process.pid}`);
      for (const r of routes) expect((await l.admit(r, limit, 3)).byFailureMode).toBe(true);
      for (const n of cluster.nodes) for (const r of routes) expect(await keysOf(r, n)).toEqual([]);
      await cluster.nodes[2].cli('acl', 'setuser', 'router', '+pexpire');
      await untilUp(l, 'cluster limiter');
      for (const r of routes) expect((await l.admit(r, limit, 3)).byFailureMode).toBeUndefined();
      for (const n of cluster.nodes) for (const r of routes) expect(await keysWithoutExpiry(r, n)).toEqual([]);
    } finally {
      warn.mockRestore();
      await l?.close();
      await cluster.stop();
    }
  });
});

describe('a database the connection cannot select (redis://host:port/N)', () => {
  /** A limiter on database `db` of the shared server as `user` (the default user when null), `local` failure mode; its lines. */
  function onDatabase(db: number, user: string | null) {
    const lines: string[] = [];
    const settings = parseRedisLimitSettings(user === null
      ? { RATE_LIMIT_REDIS_FAILURE_MODE: 'local', RATE_LIMIT_REDIS_TIMEOUT: '2s' }
      : { REDIS_USERNAME: user, REDIS_PASSWORD: PASSWORD, RATE_LIMIT_REDIS_FAILURE_MODE: 'local', RATE_LIMIT_REDIS_TIMEOUT: '2s' });
    const l = new RedisLimiter(`redis://${server.address}/${db}`, settings, new CounterStore(), {
      log: (m, level) => lines.push(`${level ?? 'info'} ${m}`), probeIntervalMs: 50,
    });
    return { l, lines };
  }

  for (const [what, db, user, reason] of [
    ['a database past the server\'s `databases`', 50, null, 'ERR DB index is out of range'],
    ['a user whose ACL refuses SELECT', 3, 'router-no-select', 'NOPERM'],
  ] as const) {
    it(`${what}: never counted in database 0; one error line, the failure mode decides`, async () => {
      if (user !== null) await server.cli('acl', 'setuser', user, 'reset', 'on', `>${PASSWORD}`, ...DOCUMENTED_RULES.filter((r) => r !== '+select'));
      const { l, lines } = onDatabase(db, user);
      try {
        await until('the error line', () => lines.some((x) => x.startsWith('error')));
        const r = route();
        for (let i = 0; i < 3; i++) {
          const d = await l.admit(r, limit, 3);
          expect(d.allowed).toBe(true);
          expect(d.byFailureMode).toBe(true);
          await landed(40);
        }
        expect(l.state).not.toBe('up');
        expect(await keysOf(r)).toEqual([]);
        const errors = lines.filter((x) => x.startsWith('error'));
        expect(errors).toHaveLength(1);
        expect(errors[0]).toContain(`cannot use database ${db} (${reason}`);
        expect(lines.some((x) => x.includes('available again'))).toBe(false);
      } finally {
        await l.close();
      }
    });
  }
});
