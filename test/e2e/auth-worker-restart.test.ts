/**
 * A worker restarted while the auth file holds a change the primary rejected (built router, real
 * processes): the new worker starts with the config in use, which the primary sends it, instead of
 * failing at start, so one crash does not become a crash loop that stops the router; it applies the
 * file's next valid change as the others do. The refusal is logged once, by the primary, which
 * alone reads the file.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postFresh, resourcesFor, startMock, startRouter, tempDir, waitFor, writeFile, type MockBackend, type Router, killOneWorker } from '../helpers/processes.js';
import { sha256Hex } from '../unit/auth/jwks-server.js';

const KEY = 'sk-restart-e2e-7777777777';
const KEY_LATER = 'sk-restart-later-e2e-8888888888';

const keys = (...list: [string, string][]): string => `apiKeys:\n${list.map(([name, key]) => `  - name: ${name}\n    sha256: "${sha256Hex(key)}"\n`).join('')}`;

describe('worker restart with an invalid auth file on disk (built router, 2 workers)', () => {
  let mock: MockBackend;
  let router: Router;
  let authFile: string;

  beforeAll(async () => {
    mock = await startMock('pod-a');
    const dir = tempDir();
    authFile = join(dir, 'auth.yaml');
    writeFile(authFile, keys(['team-a', KEY]));
    router = await startRouter(resourcesFor([{ name: 'pod-a', port: mock.port }]), { dir, workers: 2, env: { ROUTER_AUTH_CONFIG: authFile } });
  });
  afterAll(async () => {
    await router?.kill();
    await mock?.kill();
  });

  /** Statuses of `n` requests on fresh connections (spread over the workers by the kernel). */
  async function statuses(key: string, n = 8): Promise<number[]> {
    const out: number[] = [];
    for (let i = 0; i < n; i++) out.push((await postFresh(`${router.url}/v1/completions`, { model: 'sf-model', prompt: 'hi' }, { authorization: `Bearer ${key}` })).status);
    return out;
  }

  it('the replacement worker starts with the last good config; the router keeps serving', async () => {
    writeFile(authFile, 'apiKeys: [{ name: broken }]\n');
    await waitFor('the primary to reject the change', () => /auth reload rejected, keeping the last good config: .*auth\.yaml: apiKeys\[0\]\.sha256/.test(router.stderr()));
    await killOneWorker(router);
    await waitFor('ready again', async () => (await fetch(`${router.url}/readyz`)).status === 200, 10_000);
    expect(router.child.exitCode).toBeNull();
    expect(router.stderr()).not.toContain('crashing in a loop');
    expect(router.stderr().match(/auth reload rejected/g)).toHaveLength(1);
    expect(await statuses(KEY)).toEqual(Array(8).fill(200));

    // The next valid change reaches every worker, the replacement too.
    writeFile(authFile, keys(['later', KEY_LATER]));
    await waitFor('the new key on every worker', async () => (await statuses(KEY_LATER)).every((s) => s === 200));
    expect(await statuses(KEY)).toEqual(Array(8).fill(401));
  });
});
