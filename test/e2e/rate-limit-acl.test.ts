/**
 * The built router (1 worker) as a Redis user without PEXPIRE (docs/rate-limiting.md, The Redis
 * user): the operational log's `error` line of event `limits` names the user and the rule to add,
 * requests are served by the `local` failure mode, the store counts as down with its errors
 * counted, and no key is written; granting PEXPIRE at runtime brings the store back. A real
 * redis-server.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postFresh, resourcesFor, startMock, startRouter, waitFor, type MockBackend, type Router } from '../helpers/processes.js';
import { RedisServer } from '../helpers/redis-server.js';
import { sample } from '../helpers/metrics-text.js';

const RULES_BUT_PEXPIRE = ['resetkeys', '~ir:*', 'resetchannels', '-@all', '+evalsha', '+eval', '+ping', '+info', '+quit', '+client|setname', '+select', '+time', '+get', '+mget', '+set', '+del', '+incrby', '+decrby'];

describe('a Redis user without PEXPIRE', () => {
  let redis: RedisServer;
  let mock: MockBackend;
  let router: Router;
  beforeAll(async () => {
    redis = await RedisServer.start();
    await redis.cli('acl', 'setuser', 'router', 'on', '>secret', ...RULES_BUT_PEXPIRE);
    mock = await startMock('pod-a');
    const rateLimit = `    inputTokensPerUnit: 100000\n    unit: minute\n    global:\n      redis:\n        address: "${redis.address}"`;
    router = await startRouter(resourcesFor([{ name: 'pod-a', port: mock.port }], { rateLimit }), {
      workers: 1,
      env: { ROUTER_LOG_FORMAT: 'json', REDIS_USERNAME: 'router', REDIS_PASSWORD: 'secret', RATE_LIMIT_REDIS_FAILURE_MODE: 'local' },
    });
  });
  afterAll(async () => {
    await Promise.all([router?.kill(), mock?.kill(), redis?.stop()]);
  });

  const opsLines = (): Record<string, unknown>[] => router.stderr().split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as Record<string, unknown>);
  const metric = async (name: string): Promise<number | undefined> => sample(await (await fetch(`${router.url}/metrics`)).text(), `${name}{store="${redis.address}"}`);
  const complete = async (): Promise<number> => (await postFresh(`${router.url}/v1/completions`, { model: 'sf-model', prompt: 'San Francisco is a' })).status;

  it('one error line with the rule to add; served by the failure mode, no key written; back once PEXPIRE is granted', async () => {
    const line = await waitFor('the error line', () => opsLines().find((l) => l.level === 'error'));
    expect(line).toMatchObject({ event: 'limits', process: 'worker' });
    expect(line.message).toBe(`rate limit store ${redis.address}: the Redis user router may not run PEXPIRE on the limiter's keys (ir:*), which its scripts call; ` +
      'failure mode "local" applies, and no script runs, until it may: grant it with ACL SETUSER router +pexpire');
    for (let i = 0; i < 3; i++) expect(await complete()).toBe(200);
    expect(await metric('inference_router_ratelimit_store_up')).toBe(0);
    expect(await metric('inference_router_ratelimit_store_errors_total')).toBeGreaterThan(0);
    expect(await redis.cli('dbsize')).toBe('0');
    expect(opsLines().filter((l) => l.level === 'error')).toHaveLength(1);

    await redis.cli('acl', 'setuser', 'router', '+pexpire');
    await waitFor('the store up', async () => (await metric('inference_router_ratelimit_store_up')) === 1, 10_000);
    expect(await complete()).toBe(200);
    const keys = await waitFor('the request counted in Redis', async () => {
      const ks = (await redis.cli('--scan', '--pattern', 'ir:*')).split('\n').filter((k) => k !== '');
      return ks.length > 0 ? ks : null;
    }, 5_000);
    // -1: no expiry; -2: gone since the scan (a lease given back deletes the count of leases out).
    for (const k of keys) expect(Number(await redis.cli('pttl', k)), k).not.toBe(-1);
  }, 60_000);
});
