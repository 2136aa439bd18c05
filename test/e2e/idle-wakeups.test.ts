import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { processTree } from '../../bench/proc-cpu.js';
import { postJson, resourcesFor, startMock, startRouter, tempDir, waitFor, type MockBackend, type Router } from '../helpers/processes.js';

/**
 * Times the main thread of `pid` went to sleep so far (voluntary context switches): one per
 * wake-up. Not the times it was put on a CPU (schedstat), which busy neighbours inflate by
 * preempting it: a worker idle but for its timers was counted 288 times a second so while the
 * rest of the suite ran beside it.
 */
function timesAsleep(pid: number): number {
  return Number(/voluntary_ctxt_switches:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/task/${pid}/status`, 'utf8'))![1]);
}

/** How often a second the main thread of the router's (one) worker woke over `ms`. */
async function workerWakeUpsPerSecond(router: Router, ms: number): Promise<number> {
  // The primary's one child process is its worker.
  const worker = await waitFor('the worker process', () => processTree(router.pid)[1]);
  const before = timesAsleep(worker);
  await new Promise((done) => setTimeout(done, ms));
  return (timesAsleep(worker) - before) / (ms / 1000);
}

// The three routers below are measured side by side (a measurement is mostly waiting, and counts
// the wake-ups of its own process only); each one's tests in order.
//
// An idle router should sleep: every timer that fires on its own is a wake-up of the process, and
// on a virtual machine each costs 100–400 µs of CPU. prom-client samples the event loop's delay
// every 10 ms by default, which alone woke each worker 100 times a second.
describe.skipIf(!existsSync('/proc/self/schedstat'))('an idle worker', { concurrent: true }, () => {
  let mock: MockBackend;
  let router: Router;

  beforeAll(async () => {
    mock = await startMock('pod-a');
    router = await startRouter(resourcesFor([{ name: 'pod-a', port: mock.port }], { rateLimit: '    inputTokensPerUnit: 100000\n    unit: minute' }), { workers: 1 });
  });
  afterAll(async () => {
    await router?.kill();
    await mock?.kill();
  });

  it.sequential('wakes fewer than 40 times a second once its traffic has stopped', async () => {
    const r = await postJson(`${router.url}/v1/completions`, { model: 'sf-model', prompt: 'hello idle' });
    expect(r.status).toBe(200);
    await r.text();
    const perSecond = await workerWakeUpsPerSecond(router, 3000);
    // Left: the upstream pool's 100 ms timer while a kept-alive connection is open, the event-loop
    // delay samples every 100 ms, and a few messages a second to and from the primary.
    expect(perSecond).toBeLessThan(40);
  }, 30_000);

  it.sequential('stops sampling its event loop once idle: fewer than 12 wake-ups a second', async () => {
    const r = await postJson(`${router.url}/v1/completions`, { model: 'sf-model', prompt: 'hello idle' });
    expect(r.status).toBe(200);
    await r.text();
    // Past the sampler's stop (2 to 4 s after the last request; EVENT_LOOP_IDLE_AFTER_MS is 2 s) and
    // the kept-alive connection's close (4 s).
    await new Promise((done) => setTimeout(done, 5500));
    // The quietest of three 2 s windows: a neighbour's burst may add to one window, while a
    // sampler left running adds its 10 a second to every one.
    const windows: number[] = [];
    for (let i = 0; i < 3; i++) windows.push(await workerWakeUpsPerSecond(router, 2000));
    // Left: a few messages a second to and from the primary and two 1 s timers (about 6);
    // with the sampler running all the time, 15 or more in every window.
    expect(Math.min(...windows)).toBeLessThan(12);
  }, 30_000);
});

// Each pod has its own keep-alive pool and each pool a coarse clock for its timeouts (100 ms); with
// one timer per pool, a worker that had just served 20 pods woke 20 times per tick until the
// kept-alive connections closed (4 s after their last use).
describe.skipIf(!existsSync('/proc/self/schedstat'))('a worker just after traffic to 20 pods', { concurrent: true }, () => {
  let mock: MockBackend;
  let router: Router;

  beforeAll(async () => {
    mock = await startMock('pod');
    const pods = Array.from({ length: 20 }, (_, i) => ({ name: `pod-${i}`, port: mock.port }));
    router = await startRouter(resourcesFor(pods), { workers: 1 });
  });
  afterAll(async () => {
    await router?.kill();
    await mock?.kill();
  });

  it.sequential('wakes fewer than 45 times a second while its connections to them are kept alive', async () => {
    // In waves 7 ms apart, as traffic arrives, so the pools open (and their clocks start) at
    // different moments of a tick.
    const waves: Promise<number>[] = [];
    for (let w = 0; w < 14; w++) {
      for (let i = 0; i < 8; i++) {
        waves.push(postJson(`${router.url}/v1/completions`, { model: 'sf-model', prompt: 'hello pods' }).then(async (r) => {
          await r.text();
          return r.status;
        }));
      }
      await new Promise((done) => setTimeout(done, 7));
    }
    const statuses = await Promise.all(waves);
    expect(statuses).toEqual(statuses.map(() => 200));
    // Within the 4 s the pools keep idle connections open.
    expect(await workerWakeUpsPerSecond(router, 2000)).toBeLessThan(45);
  }, 30_000);
});

/** The quietest of three 2 s windows of `pid`'s main thread, in times it went to sleep a second. */
async function quietestWakeUps(pid: number): Promise<number> {
  const windows: number[] = [];
  for (let i = 0; i < 3; i++) {
    const before = timesAsleep(pid);
    await new Promise((done) => setTimeout(done, 2000));
    windows.push((timesAsleep(pid) - before) / 2);
  }
  return Math.min(...windows);
}

// The resources file and the auth file (both read by the primary; until 2026-12-07 the auth file by each worker too) were polled
// every 250 ms: a stat on the thread pool and a wake-up of the main thread, 8 a second each. They
// are now watched through inotify, with a poll every 5 s beside the watch.
describe.skipIf(!existsSync('/proc/self/schedstat'))('an idle router with a resources file and an auth file', { concurrent: true }, () => {
  let mock: MockBackend;
  let router: Router;

  beforeAll(async () => {
    mock = await startMock('pod-a');
    const dir = tempDir();
    const authFile = join(dir, 'auth.yaml');
    writeFileSync(authFile, 'apiKeys:\n  - name: team-a\n    sha256: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"\n');
    router = await startRouter(resourcesFor([{ name: 'pod-a', port: mock.port }]), { dir, workers: 1, env: { ROUTER_AUTH_CONFIG: authFile } });
  });
  afterAll(async () => {
    await router?.kill();
    await mock?.kill();
  });

  it.sequential('neither file wakes it: its primary and its worker wake fewer than 10 times a second', async () => {
    const worker = await waitFor('the worker process', () => processTree(router.pid)[1]);
    // Left in the primary: the worker's heartbeat and load report and the load broadcast (about 5
    // a second with one worker; 12 or more with the 250 ms poll); in the worker, about the same.
    expect(await quietestWakeUps(router.pid)).toBeLessThan(10);
    expect(await quietestWakeUps(worker)).toBeLessThan(10);
  }, 30_000);
});
