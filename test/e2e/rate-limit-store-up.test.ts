/**
 * inference_router_ratelimit_store_up over the built router (2 workers): 1 while Redis decides the
 * global limit in every worker, 0 once Redis is gone (with no traffic at all: the failure-mode
 * decisions' rate, which an alert could read instead, needs requests to move), 1 again once it is
 * back. A real redis-server, killed and started again on its port.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resourcesFor, startRouter, unusedPort, waitFor, type Router } from '../helpers/processes.js';
import { RedisServer } from '../helpers/redis-server.js';
import { sample } from '../helpers/metrics-text.js';

describe('inference_router_ratelimit_store_up', () => {
  let redis: RedisServer;
  let router: Router;
  let series: string;
  beforeAll(async () => {
    redis = await RedisServer.start();
    const rateLimit = `    inputTokensPerUnit: 1000\n    unit: minute\n    global:\n      redis:\n        address: "${redis.address}"`;
    router = await startRouter(resourcesFor([{ name: 'pod-a', port: await unusedPort() }], { rateLimit }), {
      workers: 2, env: { RATE_LIMIT_REDIS_TIMEOUT: '500ms', RATE_LIMIT_REDIS_FAILURE_MODE: 'local' },
    });
    series = `inference_router_ratelimit_store_up{store="${redis.address}"}`;
  });
  afterAll(async () => {
    await Promise.all([router?.kill(), redis?.stop()]);
  });

  const storeUp = async (): Promise<number | undefined> => sample(await (await fetch(`${router.url}/metrics`)).text(), series);

  it('is 1 while Redis decides, 0 while it is gone, 1 again once it is back', async () => {
    await waitFor('the store up in every worker', async () => (await storeUp()) === 1, 10_000);
    const text = await (await fetch(`${router.url}/metrics`)).text();
    expect(text).toContain('# TYPE inference_router_ratelimit_store_up gauge');
    await redis.kill();
    await waitFor('the store down', async () => (await storeUp()) === 0, 10_000);
    await redis.restart();
    await waitFor('the store up again in every worker', async () => (await storeUp()) === 1, 15_000);
  }, 60_000);
});
