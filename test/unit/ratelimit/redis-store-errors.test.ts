/**
 * What inference_router_ratelimit_store_errors_total counts while Redis cannot be reached. Before,
 * only failed calls counted: a Redis unreachable from the start (or refusing the credentials) fails
 * no call, since none goes out, and the counter stayed at 0 throughout. Real redis-server processes.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { CounterStore } from '../../../src/ratelimit/local/counter-store.js';
import { RedisLimiter } from '../../../src/ratelimit/redis/limiter.js';
import { parseRedisLimitSettings } from '../../../src/ratelimit/redis/settings.js';
import { serverPort } from '../../helpers/ports.js';
import { RedisServer } from '../../helpers/redis-server.js';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function errorsAt(address: string, env: NodeJS.ProcessEnv): Promise<{ limiter: RedisLimiter; errors: () => number }> {
  let errors = 0;
  const limiter = new RedisLimiter(address, parseRedisLimitSettings({ RATE_LIMIT_REDIS_TIMEOUT: '1s', ...env }), new CounterStore(() => Date.now()), {
    log: () => {}, reconnectCapMs: 50, onStoreError: () => errors++,
  });
  cleanups.push(() => limiter.close());
  return { limiter, errors: () => errors };
}

async function until(what: string, cond: () => boolean, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe('store errors while Redis cannot be reached', () => {
  it('each failed connection attempt counts: a port nobody listens on', async () => {
    const { limiter, errors } = await errorsAt(`127.0.0.1:${await serverPort()}`, {});
    await until('three attempts counted', () => errors() >= 3);
    expect(limiter.state).toBe('down');
  });

  it('each connection whose credentials Redis refuses counts', async () => {
    const server = await RedisServer.start({ args: ['--requirepass', 'right'] });
    cleanups.push(() => server.stop());
    const { limiter, errors } = await errorsAt(server.address, { REDIS_PASSWORD: 'wrong' });
    await until('three attempts counted', () => errors() >= 3);
    expect(limiter.state).toBe('down');
  });
});
