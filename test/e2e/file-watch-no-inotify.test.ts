/**
 * The resources and auth files when inotify watches are used up (ENOSPC from inotify_add_watch):
 * the limit, `fs.inotify.max_user_watches`, is shared by every process of the user, so another one
 * can take the last watch while the router runs. The router runs in a user namespace of its own,
 * whose limit (/proc/sys/user/max_inotify_watches, that namespace's only) is lowered to 0 once it
 * watches its files: a file removed and written back (as `kubectl cp` or an editor may) must still
 * apply, through a poll, told once in the log. Where user namespaces cannot be made, shown as
 * skipped with the reason; test/unit/config/file-watch.test.ts covers the same with a watch
 * function throwing ENOSPC.
 */
import { spawnSync } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { postJson, resourcesFor, startMock, startRouter, tempDir, waitFor, type MockBackend, type Router } from '../helpers/processes.js';
import { sha256Hex } from '../unit/auth/jwks-server.js';

/** Whether a user namespace can be made, its inotify watch limit set, and a process entered to set it. */
const namespaces = spawnSync('unshare', ['-Ur', 'sh', '-c', 'echo 1 > /proc/sys/user/max_inotify_watches']).status === 0
  && spawnSync('nsenter', ['--version']).status === 0;

async function status(router: Router, model: string, headers: Record<string, string> = {}): Promise<number> {
  const r = await postJson(`${router.url}/v1/completions`, { model, prompt: 'x' }, headers);
  await r.text();
  return r.status;
}

/** Sets the inotify watch limit of the user namespace `pid` runs in (not the machine's). */
function setWatchLimit(pid: number, limit: number): void {
  const r = spawnSync('nsenter', ['-t', String(pid), '-U', '--preserve-credentials', '--', 'sh', '-c', `echo ${limit} > /proc/sys/user/max_inotify_watches`],
    { encoding: 'utf8', timeout: 10_000 });
  if (r.status !== 0) throw new Error(`could not set the inotify watch limit of ${pid}'s user namespace: ${r.stderr}`);
}

/** The router started in a user namespace of its own (`unshare -Ur node cli.js …`: the router is that process). */
const IN_NAMESPACE = { workers: 1, node: 'unshare', nodeArgs: ['-Ur', process.execPath] };

function usedUp(file: string): RegExp {
  return new RegExp(`${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}: cannot watch the file, inotify watches are used up \\(ENOSPC, fs\\.inotify\\.max_user_watches\\); checking it for changes every 250 ms instead`, 'g');
}

if (!namespaces) it.skip('files watched with inotify watches used up: no user namespace can be made here (unshare -Ur, nsenter)', () => {});

describe.skipIf(!namespaces)('files the router watches, when inotify watches are used up', () => {
  let mock: MockBackend | undefined;
  let router: Router | undefined;
  afterEach(async () => {
    await router?.kill();
    await mock?.kill();
  });

  it('the resources file removed, then written back once no watch is left, applies; the poll is told once', async () => {
    mock = await startMock('pod-a');
    const r = router = await startRouter(resourcesFor([{ name: 'pod-a', port: mock.port }]), IN_NAMESPACE);
    expect(await status(r, 'sf-model')).toBe(200);
    setWatchLimit(r.pid, 0); // the router's watches stay; no new one can be added
    rmSync(r.resourcesFile);
    await waitFor('the removal to be told', () => r.stderr().includes('it was removed or renamed'), 5000);
    writeFileSync(r.resourcesFile, resourcesFor([{ name: 'pod-a', port: mock.port }], { model: 'written-back' }));
    await waitFor('the file written back to apply', async () => (await status(r, 'written-back')) === 200, 5000);
    expect(await status(r, 'sf-model')).toBe(404);
    // Polled from now on: a later change applies too.
    writeFileSync(r.resourcesFile, resourcesFor([{ name: 'pod-a', port: mock.port }], { model: 'after-that' }));
    await waitFor('a later change to apply', async () => (await status(r, 'after-that')) === 200, 5000);
    expect(r.stderr().match(usedUp(r.resourcesFile))).toHaveLength(1);
  }, 30_000);

  it('the auth file removed, then written back once no watch is left, applies in the worker; the poll is told once, by the primary', async () => {
    mock = await startMock('pod-a');
    const dir = tempDir();
    const authFile = join(dir, 'auth.yaml');
    const authWith = (key: string): string => `apiKeys:\n  - name: team\n    sha256: "${sha256Hex(key)}"\n`;
    writeFileSync(authFile, authWith('sk-before-0123456789'));
    const r = router = await startRouter(resourcesFor([{ name: 'pod-a', port: mock.port }]), { ...IN_NAMESPACE, dir, env: { ROUTER_AUTH_CONFIG: authFile } });
    expect(await status(r, 'sf-model', { authorization: 'Bearer sk-before-0123456789' })).toBe(200);
    setWatchLimit(r.pid, 0);
    rmSync(authFile);
    await waitFor('the removal to be told', () => r.stderr().includes('auth reload failed, keeping the last good config'), 5000);
    writeFileSync(authFile, authWith('sk-after-0123456789'));
    await waitFor('the auth file written back to apply', async () => (await status(r, 'sf-model', { authorization: 'Bearer sk-after-0123456789' })) === 200, 5000);
    expect(await status(r, 'sf-model', { authorization: 'Bearer sk-before-0123456789' })).toBe(401);
    expect(r.stderr().match(usedUp(authFile))).toHaveLength(1); // the primary's, which alone follows the file
  }, 30_000);
});
