/**
 * A request decided across two Redis stores (its route limit on one address, its tenant's on
 * another: asked one after the other) whose route store restarts between the two calls, over the
 * built router: the route's charge was made by the Redis process that restarted, so the give-back
 * (the tenant limit refused, or the request never reached a pod) must not be taken off the new
 * process's counts, which other routers' requests filled meanwhile.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { awayFromMinuteBoundary, postFresh, resourcesFor, startRouter, tempDir, unusedPort, waitFor, writeFile, type Router } from '../helpers/processes.js';
import { RedisServer } from '../helpers/redis-server.js';
import { sha256Hex } from '../unit/auth/jwks-server.js';

/** 'San Francisco is a' is 4 prompt tokens. */
const PROMPT4 = { model: 'sf-model', prompt: 'San Francisco is a', temperature: 0 };

function globalLimit(indent: string, input: number, address: string): string {
  return `${indent}inputTokensPerUnit: ${input}\n${indent}unit: minute\n${indent}global:\n${indent}  redis:\n${indent}    address: "${address}"\n`;
}

function apiKey(name: string, input: number, address: string): string {
  return `  - name: ${name}\n    sha256: "${sha256Hex(`sk-${name}-0123456789`)}"\n    rateLimit:\n${globalLimit('      ', input, address)}`;
}

const bearer = (name: string): Record<string, string> => ({ authorization: `Bearer sk-${name}-0123456789` });

/** The route store's input counter keys (`ir:{<route key>}:in:minute:<start>`) and their values. */
async function routeCounts(s: RedisServer): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const k of (await s.cli('--scan', '--pattern', '*:in:*')).split('\n').filter(Boolean)) out[k] = Number(await s.cli('GET', k));
  return out;
}

const availableAgain = (router: Router, name: string): number => router.stderr().split(`rate limit store ${name} is available again`).length - 1;

describe('a request decided across two Redis stores whose route store restarts between the two calls', () => {
  let routeRedis: RedisServer;
  let tenantRedis: RedisServer;
  let router: Router;
  beforeAll(async () => {
    [routeRedis, tenantRedis] = await Promise.all([RedisServer.start(), RedisServer.start()]);
    const dir = tempDir();
    const auth = join(dir, 'auth.yaml');
    writeFile(auth, `apiKeys:\n${apiKey('big', 100, tenantRedis.address)}${apiKey('tiny', 3, tenantRedis.address)}`);
    // The one pod listens nowhere: an admitted request never reaches a pod, and its input is given back.
    const res = resourcesFor([{ name: 'gone', port: await unusedPort() }], { rateLimit: globalLimit('    ', 1000, routeRedis.address).trimEnd() });
    router = await startRouter(res, {
      dir, workers: 1,
      env: { ROUTER_AUTH_CONFIG: auth, RATE_LIMIT_REDIS_TIMEOUT: '8s', RATE_LIMIT_REDIS_LEASES: 'false', RATE_LIMIT_REDIS_FAILURE_MODE: 'local' },
    });
  });
  afterAll(async () => {
    tenantRedis?.resume();
    await Promise.all([router?.kill(), routeRedis?.stop(), tenantRedis?.stop()]);
  });

  /**
   * The tenant store stalls; a request of `who` is charged 4 by the route store, then waits for the
   * tenant store; with `restart`, the route store restarts empty, the router reconnects and reads
   * which process answers, and other routers' requests charge it 50; the tenant store goes on and
   * decides. The request's status, and the route store's count once everything landed.
   */
  async function restartBetweenTheCalls(who: string, restart = true): Promise<{ status: number; after: number }> {
    await awayFromMinuteBoundary(15);
    await routeRedis.cli('FLUSHALL');
    await tenantRedis.cli('FLUSHALL');
    tenantRedis.pause();
    const seen = availableAgain(router, routeRedis.address);
    const answer = postFresh(`${router.url}/v1/completions`, PROMPT4, bearer(who));
    let key = '';
    await waitFor('the route store charged the request', async () => {
      const counts = await routeCounts(routeRedis);
      key = Object.keys(counts)[0] ?? '';
      return key !== '' && counts[key] === 4;
    }, 5000);
    if (restart) {
      await routeRedis.restart();
      await waitFor('the router reconnected to the route store', async () => availableAgain(router, routeRedis.address) > seen, 5000);
      await new Promise((r) => setTimeout(r, 300)); // which process answers is read
      await routeRedis.cli('SET', key, '50');
    }
    tenantRedis.resume();
    const r = await answer;
    await new Promise((r) => setTimeout(r, 500)); // the give-back, had it gone out, landed
    return { status: r.status, after: Number(await routeRedis.cli('GET', key)) };
  }

  it('without a restart, the route\'s charge is given back (the tenant limit refused, or no pod was reached)', async () => {
    expect(await restartBetweenTheCalls('tiny', false)).toEqual({ status: 429, after: 0 });
    expect(await restartBetweenTheCalls('big', false)).toEqual({ status: 502, after: 0 });
  });

  it('the tenant limit refuses: the route\'s charge is not given back to the new process', async () => {
    expect(await restartBetweenTheCalls('tiny')).toEqual({ status: 429, after: 50 });
  });

  it('both admit, the request never reaches a pod: its input is not given back to the new process', async () => {
    expect(await restartBetweenTheCalls('big')).toEqual({ status: 502, after: 50 });
  });
});
