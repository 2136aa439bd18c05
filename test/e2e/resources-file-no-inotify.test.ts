/**
 * The resources file when inotify watches are used up (ENOSPC from inotify_add_watch): the limit,
 * `fs.inotify.max_user_watches`, is shared by every process of the user, so another one can take
 * the last watch while the router runs. The router runs in a user namespace of its own, whose
 * limit (/proc/sys/user/max_inotify_watches, that namespace's only) is lowered to 0 once it
 * watches the file: the file removed and written back (as `kubectl cp` or an editor may) must
 * still apply, through a poll, told once in the log. Where user namespaces cannot be made, shown
 * as skipped with the reason; test/unit/config/file-watch.test.ts covers the same with a watch
 * function throwing ENOSPC.
 */
import { spawnSync } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postJson, resourcesFor, startMock, startRouter, waitFor, type MockBackend, type Router } from '../helpers/processes.js';

/** Whether a user namespace can be made, its inotify watch limit set, and a process entered to set it. */
const namespaces = spawnSync('unshare', ['-Ur', 'sh', '-c', 'echo 1 > /proc/sys/user/max_inotify_watches']).status === 0
  && spawnSync('nsenter', ['--version']).status === 0;

async function status(router: Router, model: string): Promise<number> {
  const r = await postJson(`${router.url}/v1/completions`, { model, prompt: 'x' });
  await r.text();
  return r.status;
}

/** Sets the inotify watch limit of the user namespace `pid` runs in (not the machine's). */
function setWatchLimit(pid: number, limit: number): void {
  const r = spawnSync('nsenter', ['-t', String(pid), '-U', '--preserve-credentials', '--', 'sh', '-c', `echo ${limit} > /proc/sys/user/max_inotify_watches`],
    { encoding: 'utf8', timeout: 10_000 });
  if (r.status !== 0) throw new Error(`could not set the inotify watch limit of ${pid}'s user namespace: ${r.stderr}`);
}

const USED_UP = /resources\.yaml: cannot watch the file, inotify watches are used up \(ENOSPC, fs\.inotify\.max_user_watches\); checking it for changes every 250 ms instead/g;

if (!namespaces) it.skip('resources file with inotify watches used up: no user namespace can be made here (unshare -Ur, nsenter)', () => {});

describe.skipIf(!namespaces)('the resources file when inotify watches are used up', () => {
  let mock: MockBackend;
  let router: Router;
  beforeAll(async () => {
    mock = await startMock('pod-a');
    router = await startRouter(resourcesFor([{ name: 'pod-a', port: mock.port }]), { workers: 1, node: 'unshare', nodeArgs: ['-Ur', process.execPath] });
  });
  afterAll(async () => {
    await router?.kill();
    await mock?.kill();
  });

  it('a file removed, then written back once no watch is left, applies; the poll is told once', async () => {
    expect(await status(router, 'sf-model')).toBe(200);
    setWatchLimit(router.pid, 0); // the router's watch stays; no new one can be added
    rmSync(router.resourcesFile);
    await waitFor('the removal to be told', () => router.stderr().includes('it was removed or renamed'), 5000);
    writeFileSync(router.resourcesFile, resourcesFor([{ name: 'pod-a', port: mock.port }], { model: 'written-back' }));
    await waitFor('the file written back to apply', async () => (await status(router, 'written-back')) === 200, 5000);
    expect(await status(router, 'sf-model')).toBe(404);
    // Polled from now on: a later change applies too.
    writeFileSync(router.resourcesFile, resourcesFor([{ name: 'pod-a', port: mock.port }], { model: 'after-that' }));
    await waitFor('a later change to apply', async () => (await status(router, 'after-that')) === 200, 5000);
    expect(router.stderr().match(USED_UP)).toHaveLength(1);
  }, 30_000);
});
