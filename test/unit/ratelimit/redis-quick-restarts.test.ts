/**
 * Two restarts of a real redis-server in quick succession on the same address (the second before
 * or soon after the limiter reconnected to the first new process, whose `run_id` may still be
 * being read), while the limiter gives back, all along, input that the first process charged:
 * none of it may be taken off the last process's counts, which other routers' requests filled.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { RateLimitSpec } from '../../../src/config/resource-types.js';
import { giveBackInput } from '../../../src/ratelimit/admit-all.js';
import { CounterStore } from '../../../src/ratelimit/local/counter-store.js';
import { RedisLimiter } from '../../../src/ratelimit/redis/limiter.js';
import { parseRedisLimitSettings } from '../../../src/ratelimit/redis/settings.js';
import { admitRequest, type ScopedTerm } from '../../../src/ratelimit/request-admission.js';
import { RedisServer } from '../../helpers/redis-server.js';
import { untilUp } from './until-up.js';

const T0 = Date.UTC(2025, 0, 15, 10, 30, 20);
const MINUTE_START = (T0 - (T0 % 60_000)) / 1000;
const clock = (): number => T0;
const limit: RateLimitSpec = { inputTokensPerUnit: 100_000, outputTokensPerUnit: null, unit: 'minute', global: null, mode: 'enforce' };

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const pause = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

describe('give-backs across two quick Redis restarts', () => {
  const cases = [
    { second: 'as soon as the first new process answers', reconnected: false, gapMs: 0 },
    { second: 'right after the limiter reconnected', reconnected: true, gapMs: 0 },
    { second: '20 ms after the limiter reconnected', reconnected: true, gapMs: 20 },
  ];
  for (const c of cases) {
    it(`the second restart ${c.second}: nothing of the first process's charge is taken off the last one`, async () => {
      const s = await RedisServer.start();
      cleanups.push(() => s.stop());
      const settings = parseRedisLimitSettings({ RATE_LIMIT_REDIS_FAILURE_MODE: 'local', RATE_LIMIT_REDIS_TIMEOUT: '100ms', RATE_LIMIT_REDIS_LEASES: 'false' });
      // Reconnects as fast as it can: the restarts come while it reads which process answers.
      const l = new RedisLimiter(s.address, settings, new CounterStore(clock), { clock, log: () => {}, settleWaitMs: 5, probeIntervalMs: 5, reconnectCapMs: 1 });
      cleanups.push(() => l.close());
      await untilUp(l);
      await pause(100); // which process answers is read
      const r = `quick-${process.pid}-${c.reconnected ? 1 : 0}-${c.gapMs}`;
      const terms: ScopedTerm[] = [{ key: r, limit, limiter: l, scope: 'route' }];
      const admittedAt = Date.now();
      while (Date.now() === admittedAt); // the admission begins after the circuit closed
      const a = await admitRequest(terms, 5000);
      expect([a.admitted, a.byFailureMode]).toEqual([true, 0]);
      let stop = false;
      let gaveBack = 0;
      const giving = (async () => {
        while (!stop) {
          await giveBackInput(terms, 1, a.byFailureMode, admittedAt, a.lateCharges, a.windows);
          gaveBack++;
          await new Promise((res) => setImmediate(res));
        }
      })();
      await s.restart();
      if (c.reconnected) await untilUp(l);
      await pause(c.gapMs);
      await s.restart();
      await s.cli('SET', `ir:{${r}}:in:minute:${MINUTE_START}`, '1000'); // other routers' requests
      await untilUp(l);
      await pause(300);
      stop = true;
      await giving;
      await pause(50);
      expect(gaveBack).toBeGreaterThan(0);
      expect(Number(await s.cli('GET', `ir:{${r}}:in:minute:${MINUTE_START}`))).toBe(1000);
    });
  }
});
