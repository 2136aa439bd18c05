/**
 * A worker that fails (an exception nothing caught, a rejection nothing handled) or is orphaned
 * (its primary killed, or failed) must not take the access-log records of requests it already
 * answered with it, ends those in flight with an answer and a record, and its failure must reach
 * the operational log as a line of its format, not as Node's own text on stderr. Built router,
 * 1 worker, a real mock pod; the failure is made inside the real worker or primary by a module
 * preloaded with `node --require` (a signal makes it throw or reject), as a bug would.
 */
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { accessLogRecords, childPids, postFresh, processAlive, resourcesFor, startLoggedRouter, startMock, tempDir, waitFor, writeFile, type LoggedRouter, type MockBackend } from '../helpers/processes.js';
import { RedisServer } from '../helpers/redis-server.js';

/** In a worker: SIGUSR2 throws an Error, SIGWINCH rejects a Promise nothing handles; in the primary SIGUSR2 throws. */
const PRELOAD = `
const cluster = require('node:cluster');
if (cluster.isWorker) {
  process.on('SIGUSR2', () => setImmediate(() => { throw new Error('thrown by the test'); }));
  process.on('SIGWINCH', () => { Promise.reject(new Error('rejected by the test')); });
} else {
  process.on('SIGUSR2', () => setImmediate(() => { throw new Error('thrown in the primary by the test'); }));
}
`;

let router: LoggedRouter | null = null;
let mock: MockBackend | null = null;
let redis: RedisServer | null = null;
afterEach(async () => {
  await router?.kill('SIGKILL');
  await mock?.kill();
  redis?.resume();
  await redis?.stop();
  router = null;
  mock = null;
  redis = null;
});

/**
 * The router with one worker, its access log batched for 10 s (records stay queued unless
 * flushed); with `rateLimit`, the route has that limit and `env` is added.
 */
async function start(rateLimit?: string, env: Record<string, string> = {}): Promise<{ file: string; worker: number }> {
  mock = await startMock('pod-a');
  const dir = tempDir();
  const preload = join(dir, 'fail-on-signal.cjs');
  writeFile(preload, PRELOAD);
  router = await startLoggedRouter(resourcesFor([{ name: 'pod-a', port: mock.port }], { rateLimit }), {
    dir,
    nodeArgs: ['--require', preload],
    env: { ACCESS_LOG_FLUSH_INTERVAL: '10s', ROUTER_LOG_FORMAT: 'json', ...env },
  });
  const pids = childPids(router.pid);
  expect(pids).toHaveLength(1);
  return { file: router.logFile, worker: pids[0] };
}

async function answered(n: number, tag: string): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    const id = `${tag}-${i}`;
    const r = await postFresh(`${router!.url}/v1/completions`, { model: 'sf-model', prompt: 'hello' }, { 'x-request-id': id });
    expect(r.status).toBe(200);
    ids.push(id);
  }
  return ids;
}

/** A request the pod accepts and never answers (the mock's x-mock-hang), in flight once this resolves; its answer or the error that ended it. */
async function inFlight(id: string): Promise<{ answer: Promise<{ status: number } | Error> }> {
  const before = (await mock!.stats()).requests;
  const answer = postFresh(`${router!.url}/v1/completions`, { model: 'sf-model', prompt: 'hello' }, { 'x-request-id': id, 'x-mock-hang': 'true' })
    .then((r) => ({ status: r.status }), (err: Error) => err);
  await waitFor('the request at the pod', async () => (await mock!.stats()).requests > before);
  return { answer };
}

/** Every stderr line of the router is a JSON line of the operational log. */
function opsLines(): Record<string, unknown>[] {
  const lines = router!.stderr().split('\n').filter((l) => l.length > 0);
  for (const l of lines) expect(() => JSON.parse(l), `not a JSON line: ${l}`).not.toThrow();
  return lines.map((l) => JSON.parse(l));
}

describe('a worker that fails', () => {
  it.each([
    ['an exception nothing caught', 'SIGUSR2', 'uncaughtException', 'thrown by the test'],
    ['a rejection nothing handled', 'SIGWINCH', 'unhandledRejection', 'rejected by the test'],
  ])('on %s: the records of the requests it answered are written, one in flight is ended and recorded, the failure is one error line of the ops log with its stack, and a new worker serves', async (_what, signal, origin, text) => {
    const { file, worker } = await start();
    const ids = await answered(5, origin);
    expect(accessLogRecords(file)).toEqual([]); // still queued: the flush interval is 10 s
    const hung = await inFlight(`${origin}-in-flight`);
    process.kill(worker, signal);
    await waitFor('the failed worker replaced', () => {
      const now = childPids(router!.pid);
      return now.length === 1 && now[0] !== worker;
    }, 15_000);
    // The request in flight at the pod was ended and recorded, its client answered (503 router_stopping: the router cut the pod's exchange, as at the drain timeout).
    expect(await hung.answer).toMatchObject({ status: 503 });
    expect(accessLogRecords(file).map((r) => r.request_id)).toEqual([...ids, `${origin}-in-flight`]);
    expect(accessLogRecords(file)[5]).toMatchObject({ status_code: 503, error: { type: 'upstream_error', message: 'the router\'s worker failed; the router cut its exchange with pod pod-a' } });
    const crash = await waitFor('the failure in the ops log', () => opsLines().find((l) => l.event === 'crash'));
    expect(crash).toMatchObject({ level: 'error', process: 'worker', pid: worker, origin });
    expect(crash.message).toContain(text);
    expect(crash.message).toMatch(/\n\s+at /); // its stack
    const exit = await waitFor('the worker\'s exit in the ops log', () => opsLines().find((l) => l.event === 'worker' && String(l.message).includes(String(worker))));
    expect(exit).toMatchObject({ code: 1 });
    await waitFor('ready again', async () => (await fetch(`${router!.url}/readyz`)).status === 200, 15_000);
    await answered(1, `${origin}-after`);
  }, 60_000);

  it.each([
    ['killed', 'SIGKILL'],
    ['failed', 'SIGUSR2'],
  ])('orphaned (its primary %s): it ends the request in flight and writes the records it holds before it exits', async (what, signal) => {
    const { file, worker } = await start();
    const ids = await answered(5, `orphan-${what}`);
    expect(accessLogRecords(file)).toEqual([]);
    const hung = await inFlight(`orphan-${what}-in-flight`);
    process.kill(router!.pid, signal);
    await waitFor('the orphaned worker gone', () => !processAlive(worker), 15_000);
    expect(await hung.answer).toMatchObject({ status: 503 });
    expect(accessLogRecords(file).map((r) => r.request_id)).toEqual([...ids, `orphan-${what}-in-flight`]);
    expect(accessLogRecords(file)[5]).toMatchObject({ status_code: 503, error: { type: 'upstream_error', message: 'the router\'s primary process is gone; the router cut its exchange with pod pod-a' } });
    expect(opsLines().find((l) => l.event === 'worker' && l.pid === worker)).toMatchObject({ level: 'warn', message: expect.stringContaining('the primary is gone') });
    if (signal === 'SIGUSR2') {
      expect(opsLines().find((l) => l.event === 'crash')).toMatchObject({ level: 'error', process: 'primary', pid: router!.pid, message: expect.stringContaining('thrown in the primary by the test') });
      await waitFor('the primary\'s exit', () => router!.child.exitCode);
      expect(router!.child.exitCode).toBe(1);
    }
  }, 60_000);
});

describe('a request waiting on a global limit\'s store when its worker fails', () => {
  it('is ended once the store\'s timeout passes (within the cleanup): answered 503, nothing sent to a pod, and recorded', async () => {
    redis = await RedisServer.start();
    const limit = `    inputTokensPerUnit: 100000\n    unit: minute\n    global:\n      redis:\n        address: "${redis.address}"`;
    const { file, worker } = await start(limit, { RATE_LIMIT_REDIS_TIMEOUT: '300ms', RATE_LIMIT_REDIS_LEASES: 'false' });
    const ids = await answered(3, 'limited');
    redis.pause(); // the next admission waits for Redis
    const waiting = postFresh(`${router!.url}/v1/completions`, { model: 'sf-model', prompt: 'hello' }, { 'x-request-id': 'limited-waiting' })
      .then((r) => ({ status: r.status }), (err: Error) => err);
    await new Promise((r) => setTimeout(r, 100)); // at the limiter, not yet at its timeout
    process.kill(worker, 'SIGUSR2');
    await waitFor('the failed worker replaced', () => {
      const now = childPids(router!.pid);
      return now.length === 1 && now[0] !== worker;
    }, 15_000);
    // Admitted by the failure mode once the store's timeout passed, then refused at the pod's
    // closed pool: nothing was sent to a pod, so 503 (safe to retry elsewhere).
    expect(await waiting).toMatchObject({ status: 503 });
    expect(accessLogRecords(file).map((r) => r.request_id)).toEqual([...ids, 'limited-waiting']);
    expect(accessLogRecords(file)[3]).toMatchObject({ status_code: 503, error: { type: 'upstream_error', message: expect.stringMatching(/nothing was sent to pod pod-a .*the router's worker failed/) } });
  }, 60_000);
});
