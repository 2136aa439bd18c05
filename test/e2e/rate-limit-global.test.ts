import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { countTokens } from 'gpt-tokenizer/encoding/o200k_base';
import { existsSync, readFileSync } from 'node:fs';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { awayFromMinuteBoundary, awayFromWindowEnd, postFresh, postJson, resourcesFor, startLoggedRouter, startMock, startRouter, tempDir, unusedPort, waitFor, type MockBackend, type Router } from '../helpers/processes.js';
import { serverPort } from '../helpers/ports.js';
import { RedisClusterServers, RedisServer } from '../helpers/redis-server.js';

const execFileP = promisify(execFile);

function globalLimit(address: string, input: number, unit = 'minute', output?: number): string {
  return `    inputTokensPerUnit: ${input}\n${output ? `    outputTokensPerUnit: ${output}\n` : ''}    unit: ${unit}\n    global:\n      redis:\n        address: "${address}"`;
}

describe('global token limits on a real Redis, several router instances', () => {
  let mock: MockBackend;
  let noUsage: MockBackend;
  let redis: RedisServer;
  beforeAll(async () => {
    [mock, noUsage, redis] = await Promise.all([startMock('pod-a'), startMock('pod-n', ['--no-usage']), RedisServer.start()]);
  });
  afterAll(async () => {
    await Promise.all([mock?.kill(), noUsage?.kill(), redis?.stop()]);
  });

  it('the documented global example: two instances, alternating requests, the third overall is 429 on either', async () => {
    const res = resourcesFor([{ name: 'pod-a', port: mock.port }], { rateLimit: globalLimit(redis.address, 10, 'minute', 5000) });
    for (const thirdOn of [1, 0]) {
      await redis.cli('FLUSHALL');
      // A generous store timeout: on a loaded test machine a slow answer must not fall back to
      // per-instance counters (the failure-mode test below covers the 50 ms default).
      const env = { RATE_LIMIT_REDIS_TIMEOUT: '5s', RATE_LIMIT_REDIS_FAILURE_MODE: 'closed' };
      const routers = await Promise.all([startRouter(res, { workers: 2, env, dir: tempDir() }), startRouter(res, { workers: 2, env, dir: tempDir() })]);
      try {
        await awayFromMinuteBoundary();
        const order = thirdOn === 1 ? [0, 1, 1] : [1, 0, 0];
        const statuses: number[] = [];
        let lastText = '';
        for (const i of order) {
          const r = await postFresh(`${routers[i].url}/v1/completions`, { model: 'sf-model', prompt: 'San Francisco is a', temperature: 0 });
          statuses.push(r.status);
          lastText = r.text;
        }
        expect(statuses).toEqual([200, 200, 429]);
        expect(lastText).toBe('input token rate limit exceeded');
      } finally {
        await Promise.all(routers.map((r) => r.kill()));
      }
    }
  });

  it('leases off: three instances × 2 workers and hundreds of concurrent requests: admitted input never exceeds the limit; output charged exactly', async () => {
    await redis.cli('FLUSHALL');
    const res = resourcesFor([{ name: 'pod-n', port: noUsage.port }], { rateLimit: globalLimit(redis.address, 301, 'day') });
    // `closed` and a generous timeout: on a loaded 2-core machine a slow Redis answer must not
    // fall back to per-instance counters, which would make exactness untestable.
    const env = { RATE_LIMIT_REDIS_FAILURE_MODE: 'closed', RATE_LIMIT_REDIS_TIMEOUT: '5s', RATE_LIMIT_REDIS_LEASES: 'false' };
    const routers: Router[] = await Promise.all([0, 1, 2].map(() => startRouter(res, { workers: 2, env, dir: tempDir() })));
    try {
      // The limit is a day's, its admissions counted in one key: all of them within one UTC day.
      await awayFromWindowEnd(86_400, 20);
      await fetch(`${noUsage.url}/stats/reset`, { method: 'POST' });
      const results = await Promise.all(Array.from({ length: 450 }, (_, i) =>
        postJson(`${routers[i % 3].url}/v1/completions`, { model: 'sf-model', prompt: 'hello world' }).then(async (r) => { await r.text(); return r.status; })));
      const ok = results.filter((s) => s === 200).length;
      expect(ok).toBe(150); // floor(301 / 2 tokens)
      expect(results.filter((s) => s === 429).length).toBe(300);
      expect((await noUsage.stats()).requests).toBe(150);
      // Output: the answer's text counted with the router's tokenizer (no usage reported), charged in full.
      const keys = (await redis.cli('--scan', '--pattern', '*')).split('\n').filter(Boolean);
      const outKey = keys.find((k) => k.includes(':out:'));
      const inKey = keys.find((k) => k.includes(':in:'));
      expect(outKey, `keys: ${keys.join(' ')}`).toBeTruthy();
      await new Promise((r) => setTimeout(r, 300));
      expect(Number(await redis.cli('GET', outKey!))).toBe(150 * countTokens('tok '.repeat(16)));
      expect(Number(await redis.cli('GET', inKey!))).toBe(300);
    } finally {
      await Promise.all(routers.map((r) => r.kill()));
    }
  });

  // One retry: a clean-clone CI run failed this test once, at the moment a parallel stress test
  // failed too (494 of 499 refused; not reproduced in 8 runs here, alone or beside stress tests),
  // so a stall of the machine is the suspect. The message now names the counts and the answers.
  it('with leases (the default): a request that fits once another instance\'s lease comes back waits for it; exactly what fits is admitted, and every lease comes back', { retry: 1, timeout: 60_000 + 40_000 }, async () => {
    await redis.cli('FLUSHALL');
    const res = resourcesFor([{ name: 'pod-n', port: noUsage.port }], { rateLimit: globalLimit(redis.address, 1001, 'day') });
    // A waiting request gives up after RATE_LIMIT_REDIS_RECALL_WAIT (500 ms by default): a loaded
    // machine ran the continued holder later than that (a clean-clone CI run refused exactly the
    // 31 that had to wait), so the wait here is the longest allowed (the leases are forfeit after it).
    const env = { RATE_LIMIT_REDIS_FAILURE_MODE: 'closed', RATE_LIMIT_REDIS_TIMEOUT: '5s', RATE_LIMIT_REDIS_RECALL_WAIT: '2s' };
    const [holder, busy] = await Promise.all([startRouter(res, { workers: 1, env, dir: tempDir() }), startRouter(res, { workers: 2, env, dir: tempDir() })]);
    const refusals: string[] = [];
    const post = (r: Router): Promise<number> => postJson(`${r.url}/v1/completions`, { model: 'sf-model', prompt: 'hello world' })
      .then(async (x) => { const text = await x.text(); if (x.status !== 200 && refusals.length < 3) refusals.push(`${x.status} ${text}`); return x.status; });
    const holderWorker = Number((await execFileP('pgrep', ['-P', String(holder.child.pid)])).stdout.trim().split('\n')[0]);
    try {
      // 2 input tokens each. The holder's worker takes a lease (1/16 of what is free) and is
      // frozen with it, as a worker stalled by a long collection or a busy host would be. (Should
      // the lease have gone back before the freeze — its view is stale after 50 ms — again.)
      // The day's key is fixed here and the rest runs 5-25 s: all of it within one UTC day.
      await awayFromWindowEnd(86_400, 40);
      const inKey = `ir:{default/sf-route}:in:day:${Math.floor(Date.now() / 86_400_000) * 86_400}`;
      let holderAdmitted = 0;
      let counted = 0;
      for (let attempt = 0; attempt < 5 && counted <= 2 * holderAdmitted; attempt++) {
        expect(await post(holder)).toBe(200);
        holderAdmitted++;
        process.kill(holderWorker, 'SIGSTOP');
        counted = Number(await redis.cli('GET', inKey));
        if (counted <= 2 * holderAdmitted) process.kill(holderWorker, 'SIGCONT');
      }
      expect(counted, 'the holder holds a lease').toBeGreaterThan(2 * holderAdmitted);
      // The other instance uses up the rest: what Redis has free holds `fits` requests; the others
      // fit only with the lease back, so they wait (the script answers "recalling") instead of
      // being refused...
      const fits = Math.floor((1001 - counted) / 2);
      const total = 500 - holderAdmitted; // floor(1001 / 2 tokens) in all
      expect(fits).toBeLessThan(total);
      const burst = Promise.all(Array.from({ length: total }, () => post(busy)));
      // ...until the holder runs again: its lease's view is stale, so it gives the lease back. The
      // holder is continued as soon as Redis's counter shows all that was free admitted, not once
      // the answers have come back, which a loaded machine delivers late.
      const allFree = counted + 2 * fits;
      const until = Date.now() + 20_000;
      while (Number(await redis.cli('GET', inKey)) < allFree && Date.now() < until) await new Promise((r) => setTimeout(r, 2));
      process.kill(holderWorker, 'SIGCONT');
      const statuses = await burst;
      const refused = statuses.filter((st) => st !== 200).length;
      expect(refused, `of ${total} (${fits} fit in Redis at first, the holder admitted ${holderAdmitted}, in ${counted}): ${refusals.join(' | ')}; in now ${await redis.cli('GET', inKey)}`).toBe(0);
      expect(await Promise.all([holder, busy, busy].map(post))).toEqual([429, 429, 429]);
      const metrics = await (await fetch(`${holder.url}/metrics`)).text();
      expect(Number(/^inference_router_ratelimit_leases_total\{event="lent"\} (\d+)$/m.exec(metrics)?.[1] ?? 0), metrics).toBeGreaterThan(0);
      const busyMetrics = await (await fetch(`${busy.url}/metrics`)).text();
      expect(Number(/^inference_router_ratelimit_recall_waits_total\{outcome="admitted"\} (\d+)$/m.exec(busyMetrics)?.[1] ?? 0), busyMetrics).toBeGreaterThan(0);
    } finally {
      try { process.kill(holderWorker, 'SIGCONT'); } catch { /* gone */ }
      await Promise.all([holder.kill(), busy.kill()]);
    }
    // Every worker gave its lease back: the window counts exactly what was admitted, and no
    // lease is counted as out.
    const keys = (await redis.cli('--scan', '--pattern', '*')).split('\n').filter(Boolean);
    const inKey = keys.find((k) => k.includes(':in:'));
    expect(Number(await redis.cli('GET', inKey!))).toBe(1000);
    expect(keys.filter((k) => k.includes(':ls:')), `keys: ${keys.join(' ')}`).toEqual([]);
  });

  it('Redis killed under load: no crash, failure modes as stated, no request waits past the timeout; enforcement resumes after restart', async () => {
    const own = await RedisServer.start();
    const res = resourcesFor([{ name: 'pod-a', port: mock.port }], { rateLimit: globalLimit(own.address, 8, 'day') });
    const [local, open, closed] = await Promise.all((['local', 'open', 'closed'] as const).map((mode) =>
      startRouter(res, { workers: 2, env: { RATE_LIMIT_REDIS_FAILURE_MODE: mode, RATE_LIMIT_REDIS_TIMEOUT: '50ms' }, dir: tempDir() })));
    const routers = { local, open, closed };
    const body = { model: 'sf-model', prompt: 'San Francisco is a' };
    try {
      // Healthy: the shared budget (8 tokens = 2 requests of 4 before correction) is enforced.
      expect((await postJson(`${routers.open.url}/v1/completions`, body)).status).toBe(200);
      await own.kill();
      const load = await Promise.all(Array.from({ length: 60 }, (_, i) => {
        const r = [routers.local, routers.open, routers.closed][i % 3];
        const t0 = performance.now();
        return postJson(`${r.url}/v1/completions`, body).then(async (resp) => ({
          mode: i % 3, status: resp.status, text: await resp.text(), ms: performance.now() - t0,
          rateHeaders: [...resp.headers.keys()].filter((k) => k.startsWith('x-ratelimit-')),
        }));
      }));
      const byMode = (m: number) => load.filter((l) => l.mode === m);
      // Nobody waits on the dead store: a hang would show as seconds, the bound is the 50 ms timeout
      // plus a loaded machine's scheduling.
      expect(Math.max(...load.map((l) => l.ms))).toBeLessThan(5000);
      // open: admits everything, with no x-ratelimit-* header at all (the counts are unknown).
      expect(byMode(1).every((l) => l.status === 200)).toBe(true);
      expect(byMode(1).flatMap((l) => l.rateHeaders)).toEqual([]);
      // closed: 503 upstream_error saying the store is unavailable, never a misleading 429.
      expect(byMode(2).every((l) => l.status === 503)).toBe(true);
      expect(byMode(2)[0].text).toMatch(/limit store|unavailable/i);
      // local: this instance's own counters enforce the same limit (8 tokens: at most 2 of 20 admitted).
      const localOk = byMode(0).filter((l) => l.status === 200).length;
      expect(localOk).toBeGreaterThanOrEqual(1);
      expect(localOk).toBeLessThanOrEqual(2);
      expect(byMode(0).filter((l) => l.status === 429).length).toBe(20 - localOk);
      for (const r of Object.values(routers)) {
        expect(r.child.exitCode).toBeNull();
        expect((await fetch(`${r.url}/healthz`)).status).toBe(200);
      }
      // Restart Redis: global enforcement resumes within 2 s (closed mode stops answering 503).
      await own.restart();
      const t0 = Date.now();
      let resumed = false;
      while (Date.now() - t0 < 8000) {
        const r = await postJson(`${routers.closed.url}/v1/completions`, body);
        await r.text();
        if (r.status !== 503) { resumed = true; break; }
        await new Promise((res2) => setTimeout(res2, 100));
      }
      expect(resumed).toBe(true);
      // The design resumes within about one 500 ms health probe; the bound leaves room for a loaded machine.
      expect(Date.now() - t0).toBeLessThan(4000);
    } finally {
      await Promise.all(Object.values(routers).map((r) => r.kill()));
      await own.stop();
    }
  });

  it('local failure mode: a request admitted by the local counters while Redis was down and answered after it came back has its input correction kept locally, not taken off Redis; its output is charged to Redis', async () => {
    const port = await serverPort();
    const res = resourcesFor([{ name: 'pod-a', port: mock.port }], { rateLimit: globalLimit(`127.0.0.1:${port}`, 100_000, 'day', 100_000) });
    const env = { RATE_LIMIT_REDIS_FAILURE_MODE: 'local', RATE_LIMIT_REDIS_TIMEOUT: '500ms', RATE_LIMIT_REDIS_LEASES: 'false' };
    const router = await startRouter(res, { workers: 1, env, dir: tempDir() });
    let own: RedisServer | null = null;
    try {
      // The router counts 40 prompt tokens, the pod's usage says 20: a correction of -20 when it ends.
      const prompt = 'x '.repeat(40).trim();
      // The day's keys are named below and the slow request ends ~8 s later: all within one UTC day.
      await awayFromWindowEnd(86_400, 30);
      // Admitted by the local counters (Redis unreachable), answered 8 s later.
      const slow = postJson(`${router.url}/v1/completions`, { model: 'sf-model', prompt }, { 'x-mock-latency-ms': '8000', 'x-mock-output-tokens': '7' })
        .then(async (r) => { await r.text(); return r.status; });
      await new Promise((r) => setTimeout(r, 300));
      own = await RedisServer.start({ port });
      const redis2 = own;
      const day = Math.floor(Date.now() / 86_400_000) * 86_400;
      const inKey = `ir:{default/sf-route}:in:day:${day}`;
      const outKey = `ir:{default/sf-route}:out:day:${day}`;
      // Redis decides again: a request it admits is counted there (with its own correction).
      await waitFor('Redis deciding again', async () => {
        const r = await postJson(`${router.url}/v1/completions`, { model: 'sf-model', prompt: 'San Francisco is a' }, { 'x-mock-output-tokens': '1' });
        await r.text();
        return Number(await redis2.cli('GET', inKey)) > 0 || null;
      }, 6000, 100);
      await new Promise((r) => setTimeout(r, 300)); // its settle lands
      const before = [Number(await own.cli('GET', inKey)), Number(await own.cli('GET', outKey))];
      expect(await slow).toBe(200);
      await new Promise((r) => setTimeout(r, 300));
      expect([Number(await own.cli('GET', inKey)), Number(await own.cli('GET', outKey))]).toEqual([before[0], before[1] + 7]);
    } finally {
      await router.kill();
      await own?.stop();
    }
  }, 60_000 + 30_000);

  it('open failure mode: a request admitted because Redis stalled past the timeout, which never reached a pod, is not charged in Redis when Redis runs the call late', async () => {
    await redis.cli('FLUSHALL');
    const deadPod = await unusedPort(); // nothing listens: every request fails before reaching a pod
    const res = resourcesFor([{ name: 'pod-x', port: deadPod }], { rateLimit: globalLimit(redis.address, 100_000, 'day', 100_000) });
    const env = { RATE_LIMIT_REDIS_FAILURE_MODE: 'open', RATE_LIMIT_REDIS_TIMEOUT: '500ms', RATE_LIMIT_REDIS_LEASES: 'false' };
    const router = await startRouter(res, { workers: 1, env, dir: tempDir() });
    // The day's key is named here and read until the end (a few seconds): all within one UTC day.
    await awayFromWindowEnd(86_400, 20);
    const day = Math.floor(Date.now() / 86_400_000) * 86_400;
    const inKey = `ir:{default/sf-route}:in:day:${day}`;
    try {
      // Redis decides: the request is charged there, and given back when no pod takes it.
      await waitFor('Redis deciding', async () => {
        const r = await postJson(`${router.url}/v1/completions`, { model: 'sf-model', prompt: 'San Francisco is a' });
        await r.text();
        return (await redis.cli('GET', inKey)) !== '' || null;
      }, 6000, 100);
      await new Promise((r) => setTimeout(r, 300));
      expect(await redis.cli('GET', inKey)).toBe('0');
      redis.pause();
      let status = 0;
      try {
        const r = await postJson(`${router.url}/v1/completions`, { model: 'sf-model', prompt: 'San Francisco is a' });
        await r.text();
        status = r.status;
      } finally {
        redis.resume();
      }
      expect(status).toBeGreaterThanOrEqual(500); // admitted (open), then no pod answered
      await new Promise((r) => setTimeout(r, 500)); // the late reply, and what it undoes
      expect(await redis.cli('GET', inKey)).toBe('0');
    } finally {
      await router.kill();
    }
  });

  it('the access log\'s durations end with the answer, not with the Redis settle of its tokens (which may wait up to 20 ms to ride along)', async () => {
    await redis.cli('FLUSHALL');
    const res = resourcesFor([{ name: 'pod-a', port: mock.port }], { rateLimit: globalLimit(redis.address, 100_000, 'day', 100_000) });
    const router = await startLoggedRouter(res, { env: { RATE_LIMIT_REDIS_FAILURE_MODE: 'closed', RATE_LIMIT_REDIS_TIMEOUT: '5s' } });
    const file = router.logFile;
    try {
      const clientMs: number[] = [];
      for (let i = 0; i < 4; i++) {
        // Requests apart: each answer's settle finds no admission to ride with and waits the whole 20 ms.
        await new Promise((r) => setTimeout(r, 100));
        const t0 = performance.now();
        const r = await postFresh(`${router.url}/v1/completions`, { model: 'sf-model', prompt: 'San Francisco is a' });
        clientMs.push(performance.now() - t0);
        expect(r.status).toBe(200);
      }
      await waitFor('four access-log records', () => (existsSync(file) && readFileSync(file, 'utf8').trim().split('\n').length === 4) || null, 5000);
      const recs = readFileSync(file, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { duration_total: number });
      // The router's duration lies inside what the client saw (its clock starts later and stops
      // before the answer's bytes arrive); it would include the 20 ms wait if it ended with the settle.
      for (let i = 0; i < 4; i++) expect(recs[i].duration_total, `client saw ${clientMs.join(', ')} ms`).toBeLessThanOrEqual(Math.ceil(clientMs[i]) + 1);
      // The settles did land: output charged for all four.
      await new Promise((r) => setTimeout(r, 100));
      const outKey = (await redis.cli('--scan', '--pattern', '*:out:*')).split('\n').filter(Boolean)[0];
      expect(Number(await redis.cli('GET', outKey))).toBe(4 * 16);
    } finally {
      await router.kill();
    }
  });

  it('a 3-node Redis Cluster: the documented example passes', async () => {
    const cluster = await RedisClusterServers.start(3);
    const res = resourcesFor([{ name: 'pod-a', port: mock.port }], { rateLimit: globalLimit(cluster.address, 10, 'minute', 5000) });
    const env = { REDIS_CLUSTER: 'true', RATE_LIMIT_REDIS_FAILURE_MODE: 'closed', RATE_LIMIT_REDIS_TIMEOUT: '5s' };
    const routers = await Promise.all([startRouter(res, { workers: 2, env, dir: tempDir() }), startRouter(res, { workers: 2, env, dir: tempDir() })]);
    try {
      await awayFromMinuteBoundary();
      const statuses: number[] = [];
      for (const i of [0, 1, 0]) {
        const r = await postFresh(`${routers[i].url}/v1/completions`, { model: 'sf-model', prompt: 'San Francisco is a' });
        statuses.push(r.status);
      }
      expect(statuses, routers.map((r) => r.stderr()).join('\n')).toEqual([200, 200, 429]);
    } finally {
      await Promise.all(routers.map((r) => r.kill()));
      await cluster.stop();
    }
  });
});
