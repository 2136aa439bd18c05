/**
 * A large auth file (3,000 API keys, over the 256 KiB past which the primary parses it at start in a
 * thread of its own, and over the 32 KiB past which it parses a change in one without waiting:
 * auth/parse-auth-off-thread.ts) over the built router with 2 workers, which take the parsed config
 * from the primary: its keys work at start, a change applies, and a change with one bad key deep in
 * it is refused naming it, the last good config kept.
 */
import { join } from 'node:path';
import { statSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postJson, resourcesFor, startLoggedRouter, startMock, tempDir, waitFor, writeFile, type LoggedRouter, type MockBackend } from '../helpers/processes.js';
import { sha256Hex } from '../unit/auth/jwks-server.js';

const KEYS = 3_000;
const key = (i: number): string => `sk-large-file-${i}-0123456789`;

function authYaml(first: number, count: number, broken: number | null = null): string {
  const lines = ['apiKeys:'];
  for (let i = first; i < first + count; i++) {
    lines.push(`  - name: ${i === broken ? '""' : `tenant-${i}`}\n    sha256: "${sha256Hex(key(i))}"\n    models: ["sf-model", "other-${i}-*"]`);
  }
  return `${lines.join('\n')}\n`;
}

describe('a large auth file (parsed in a thread of its own)', () => {
  let mock: MockBackend;
  let router: LoggedRouter;
  let authFile: string;

  const status = async (k: string): Promise<number> => {
    const r = await postJson(`${router.url}/v1/completions`, { model: 'sf-model', prompt: 'hi' }, { authorization: `Bearer ${k}` });
    await r.text();
    return r.status;
  };

  beforeAll(async () => {
    mock = await startMock('pod-a');
    const dir = tempDir();
    authFile = join(dir, 'auth.yaml');
    writeFile(authFile, authYaml(0, KEYS));
    expect(statSync(authFile).size).toBeGreaterThan(256 * 1024);
    router = await startLoggedRouter(resourcesFor([{ name: 'pod-a', port: mock.port }]), { dir, workers: 2, env: { ROUTER_AUTH_CONFIG: authFile } });
  });
  afterAll(async () => {
    await router?.kill();
    await mock?.kill();
  });

  it('every key of it works at start, in every worker; others are refused', async () => {
    expect(await Promise.all([0, 1_500, KEYS - 1, KEYS - 1, 7, 7].map((i) => status(key(i))))).toEqual([200, 200, 200, 200, 200, 200]);
    expect(await status(key(KEYS))).toBe(401);
  });

  it('a change applies; one with a bad key deep in it is refused naming it, the last good config kept', async () => {
    writeFile(authFile, authYaml(1, KEYS));
    await waitFor('the new key accepted and the dropped one refused', async () => {
      const [added, dropped] = await Promise.all([status(key(KEYS)), status(key(0))]);
      return added === 200 && dropped === 401;
    }, 30_000);
    writeFile(authFile, authYaml(2, KEYS, 2_500));
    await waitFor('the refused reload to be logged', () => /auth reload rejected/.test(router.stderr()), 30_000);
    expect(router.stderr()).toMatch(/auth reload rejected, keeping the last good config: \S*auth\.yaml: apiKeys\[2498\]\.name: /);
    expect(await Promise.all([status(key(1)), status(key(KEYS))])).toEqual([200, 200]);
    expect(router.stderr()).not.toMatch(/parser thread|cannot load the auth file parser/);
  });
});
