/**
 * A worker that stops (SIGSTOP, as a blocked event loop looks from outside) keeps its share of the
 * port and answers nothing; the primary's watchdog (ROUTER_WORKER_WATCHDOG) kills it and starts
 * another. A blocked event loop inside the real worker too (a preloaded module spins on SIGUSR2).
 * Real processes: the built router with two workers, a mock pod.
 */
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { childPids, postFresh, resourcesFor, startMock, startRouter, tempDir, waitFor, writeFile, type MockBackend, type Router } from '../helpers/processes.js';

/** In a worker, SIGUSR2 blocks its event loop for good, as a synchronous loop that never ends does. */
const PRELOAD = `
const cluster = require('node:cluster');
if (cluster.isWorker) process.on('SIGUSR2', () => setImmediate(() => { for (;;) {} }));
`;

let router: Router | null = null;
let mock: MockBackend | null = null;
afterEach(async () => {
  for (const pid of router === null ? [] : childPids(router.pid)) {
    try { process.kill(pid, 'SIGCONT'); } catch { /* gone */ }
  }
  await router?.kill('SIGKILL');
  await mock?.kill();
  router = null;
  mock = null;
});

async function twoWorkers(env: Record<string, string>): Promise<number[]> {
  mock = await startMock('pod-a');
  const preload = join(tempDir(), 'block.cjs');
  writeFile(preload, PRELOAD);
  router = await startRouter(resourcesFor([{ name: 'pod-a', port: mock.port }]), { workers: 2, env, nodeArgs: ['--require', preload] });
  return waitFor('two workers', () => { const p = childPids(router!.pid); return p.length === 2 ? p : null; });
}

describe('the worker watchdog', () => {
  for (const [how, stop] of [
    ['stopped (SIGSTOP)', (pid: number) => process.kill(pid, 'SIGSTOP')],
    ['whose event loop is blocked', (pid: number) => process.kill(pid, 'SIGUSR2')],
  ] as const) {
    it(`a worker ${how} is killed after ROUTER_WORKER_WATCHDOG and replaced; new connections are answered again`, async () => {
      const [stuck, other] = await twoWorkers({ ROUTER_WORKER_WATCHDOG: '3s' });
      stop(stuck);
      await waitFor('the watchdog line', () => router!.stderr().includes(`worker ${stuck} has said nothing for`), 15_000);
      expect(router!.stderr()).toMatch(new RegExp(`worker ${stuck} has said nothing for \\d+\\.\\d s \\(ROUTER_WORKER_WATCHDOG\\): its event loop is blocked or its process stopped; killing it \\(SIGKILL\\)`));
      const now = await waitFor('a replacement', () => { const p = childPids(router!.pid); return p.length === 2 && !p.includes(stuck) ? p : null; }, 10_000);
      expect(now).toContain(other);
      await waitFor('its exit line', () => router!.stderr().includes(`worker ${stuck} exited (SIGKILL)`), 5_000);
      // Every new connection is answered (none lands on a worker that answers nothing).
      const statuses = await Promise.all(Array.from({ length: 20 }, () => postFresh(`${router!.url}/v1/completions`, { model: 'sf-model', prompt: 'hi' }).then((r) => r.status)));
      expect(statuses).toEqual(Array(20).fill(200));
    });
  }

  it('a worker draining after a SIGTERM of its own is not taken for stuck (it says it is alive while it drains)', async () => {
    const [worker] = await twoWorkers({ ROUTER_WORKER_WATCHDOG: '3s', ROUTER_DRAIN_DELAY: '6s' });
    process.kill(worker, 'SIGTERM');
    await new Promise((r) => setTimeout(r, 5000));
    expect(router!.stderr()).not.toContain('has said nothing');
  });

  it('with ROUTER_WORKER_WATCHDOG=0 a stopped worker is left alone', async () => {
    const [stuck] = await twoWorkers({ ROUTER_WORKER_WATCHDOG: '0' });
    process.kill(stuck, 'SIGSTOP');
    await new Promise((r) => setTimeout(r, 5000));
    expect(childPids(router!.pid)).toContain(stuck);
    expect(router!.stderr()).not.toContain('has said nothing');
  });
});
