import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postJson, resourcesFor, startMock, startRouterWith, tempDir, writeFile, type MockBackend } from '../helpers/processes.js';
import { readUnit, timeSpanMs, UNIT_CHECKOUT } from '../helpers/systemd-unit.js';
import { join } from 'node:path';

/**
 * deploy/systemd/inference-router.service's command line and environment, run as the unit runs
 * them (its resources file and port swapped for the test's; the built CLI of this checkout), and
 * stopped as it stops (SIGTERM to the primary alone, KillMode=mixed) within its TimeoutStopSec.
 */
describe('the systemd unit\'s command line, run', () => {
  let mock: MockBackend;
  beforeAll(async () => {
    mock = await startMock('pod-a');
  });
  afterAll(async () => {
    await mock?.kill();
  });

  it('serves a completion, logs it as JSON on stdout, and on SIGTERM to the primary exits 0 within TimeoutStopSec', async () => {
    const unit = readUnit();
    const dir = tempDir();
    const resources = join(dir, 'resources.yaml');
    writeFile(resources, resourcesFor([{ name: 'pod-a', port: mock.port }]));
    const [node, cli, ...args] = unit.execStart;
    expect([node, cli]).toEqual(['/usr/bin/node', `${UNIT_CHECKOUT}/dist/cli.js`]);
    const at = args.indexOf('--resources');
    args[at + 1] = resources;
    // The unit's own settings, with a drain delay of none (no load balancer here to see /readyz go
    // 503) and the access log on, the router's default, which the tests' helper turns off.
    const router = await startRouterWith(args, { workers: 2, env: { ACCESS_LOG_ENABLED: 'true', ...unit.env, ROUTER_DRAIN_DELAY: '0' } });
    const r = await postJson(`${router.url}/v1/completions`, { model: 'sf-model', prompt: 'x' }, { 'x-request-id': 'from-unit' });
    expect(r.status).toBe(200);
    await r.text();
    const t0 = performance.now();
    router.child.kill('SIGTERM');
    expect(await router.exited).toBe(0);
    expect(performance.now() - t0).toBeLessThan(timeSpanMs(unit.service('TimeoutStopSec')!));
    const record = router.stdout().split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as { request_id: string; status_code: number });
    expect(record.filter((x) => x.request_id === 'from-unit').map((x) => x.status_code)).toEqual([200]);
  });
});
