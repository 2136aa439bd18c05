import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLI, postFresh, postJson, resourcesFor, startMock, startRouter, tempDir, waitFor, type MockBackend, childPids, processAlive } from '../helpers/processes.js';

describe('command line', () => {
  it('--help prints usage and exits 0', () => {
    const out = execFileSync(process.execPath, [CLI, '--help'], { encoding: 'utf8' });
    expect(out).toMatch(/^Usage: inference-router --resources FILE/);
  });

  it('a bad flag or value says what is wrong and exits 2', () => {
    const r1 = spawnSync(process.execPath, [CLI, '--bogus'], { encoding: 'utf8' });
    expect(r1.status).toBe(2);
    expect(r1.stderr).toContain('unknown option "--bogus"');
    const r2 = spawnSync(process.execPath, [CLI, '--resources', 'x.yaml', '--workers', 'many'], { encoding: 'utf8' });
    expect(r2.status).toBe(2);
    expect(r2.stderr).toContain('--workers: expected an integer from 1 to 256; got "many"');
    const r3 = spawnSync(process.execPath, [CLI, '--resources', 'x.yaml'], { encoding: 'utf8', env: { ...process.env, ACCESS_LOG_FORMAT: 'xml' } });
    expect(r3.status).toBe(2);
    expect(r3.stderr).toContain('ACCESS_LOG_FORMAT');
    // An empty value (a shell variable that is unset) does not fall back to listening on every interface.
    const r4 = spawnSync(process.execPath, [CLI, '--resources', 'x.yaml', '--host', ''], { encoding: 'utf8' });
    expect(r4.status).toBe(2);
    expect(r4.stderr).toContain('--host needs a value, got an empty one');
  });

  it('an invalid resources file at start stops the router with exit 2, naming file, resource and field', () => {
    const dir = tempDir();
    const file = join(dir, 'bad.yaml');
    writeFileSync(file, resourcesFor([{ name: 'p', port: 1 }]).replace('modelName: sf-model', 'modelName: 42'));
    const r = spawnSync(process.execPath, [CLI, '--resources', file, '--workers', '1'], { encoding: 'utf8', timeout: 20_000 });
    expect(r.status).toBe(2);
    expect(r.stderr).toContain(file);
    expect(r.stderr).toContain('ModelRoute default/sf-route');
    expect(r.stderr).toContain('spec.modelName');
  });

  it('a prefill/decode ModelServer (workloadSelector.pdGroup) whose endpoint has no role labels stops the router with exit 2, naming the field', () => {
    const dir = tempDir();
    const file = join(dir, 'pd.yaml');
    const pdGroup = '  workloadSelector:\n    matchLabels: {app: x}\n    pdGroup: {groupKey: g, prefillLabels: {role: prefill}, decodeLabels: {role: decode}}\n';
    writeFileSync(file, resourcesFor([{ name: 'p', port: 1 }]).replace(/^spec:\n  endpoints:/m, `spec:\n${pdGroup}  endpoints:`));
    expect(readFileSync(file, 'utf8')).toContain('pdGroup');
    const r = spawnSync(process.execPath, [CLI, '--resources', file, '--workers', '1'], { encoding: 'utf8', timeout: 20_000 });
    expect(r.status).toBe(2);
    expect(r.stderr).toContain(`${file}: document 1 (ModelServer default/sf-server): spec.endpoints[0].labels: must carry the label "g"`);
  });
});

describe('hot reload, worker restart and SIGTERM drain', () => {
  let a: MockBackend;
  let b: MockBackend;
  beforeAll(async () => {
    [a, b] = await Promise.all([startMock('pod-a'), startMock('pod-b', ['--latency-ms', '600'])]);
  });
  afterAll(async () => {
    await Promise.all([a?.kill(), b?.kill()]);
  });

  it('applies a valid change within a second and keeps the last good config on an invalid one', async () => {
    const router = await startRouter(resourcesFor([{ name: 'pod-a', port: a.port }]));
    try {
      expect((await postJson(`${router.url}/v1/completions`, { model: 'renamed', prompt: 'x' })).status).toBe(404);
      // A keep-alive connection opened before the change keeps working after it.
      writeFileSync(router.resourcesFile, resourcesFor([{ name: 'pod-a', port: a.port }], { model: 'renamed' }));
      await waitFor('new model to be served', async () => (await postJson(`${router.url}/v1/completions`, { model: 'renamed', prompt: 'x' })).status === 200, 3000);
      writeFileSync(router.resourcesFile, 'kind: Nonsense\n');
      await waitFor('rejection to be logged', () => router.stderr().includes('keeping the last good config'), 3000);
      expect(router.stderr()).toContain(router.resourcesFile);
      expect((await postJson(`${router.url}/v1/completions`, { model: 'renamed', prompt: 'x' })).status).toBe(200);
    } finally {
      await router.kill();
    }
  });

  it("starts each worker with its young generation sized by ROUTER_WORKER_SEMI_SPACE_MB, or by the operator's own flag", async () => {
    const cmdlines = (pid: number): string[] => childPids(pid).map((w) => readFileSync(`/proc/${w}/cmdline`, 'utf8').split('\0').join(' '));
    const sized = await startRouter(resourcesFor([{ name: 'pod-a', port: a.port }]), { workers: 1, env: { ROUTER_WORKER_SEMI_SPACE_MB: '8' } });
    try {
      const [line] = cmdlines(sized.pid);
      expect(line).toContain('--min-semi-space-size=8 --max-semi-space-size=8');
      expect((await postJson(`${sized.url}/v1/completions`, { model: 'sf-model', prompt: 'x' })).status).toBe(200);
    } finally {
      await sized.kill();
    }
    const own = await startRouter(resourcesFor([{ name: 'pod-a', port: a.port }]), { workers: 1, nodeArgs: ['--max-semi-space-size=4'] });
    try {
      const [line] = cmdlines(own.pid);
      expect(line).toContain('--max-semi-space-size=4');
      expect(line).not.toContain('--min-semi-space-size');
    } finally {
      await own.kill();
    }
  });

  it('restarts a worker that dies, and serves throughout', async () => {
    const router = await startRouter(resourcesFor([{ name: 'pod-a', port: a.port }]));
    try {
      const before = childPids(router.child.pid!);
      expect(before.length).toBe(2);
      process.kill(before[0], 'SIGKILL');
      await waitFor('a replacement worker', () => {
        const now = childPids(router.child.pid!);
        return now.length === 2 && !now.includes(before[0]);
      }, 10_000);
      await waitFor('ready again', async () => (await fetch(`${router.url}/readyz`)).status === 200, 10_000);
      for (let i = 0; i < 10; i++) expect((await postJson(`${router.url}/v1/completions`, { model: 'sf-model', prompt: 'x' })).status).toBe(200);
      expect(router.stderr()).toMatch(/worker \d+ exited \(SIGKILL\)/);
    } finally {
      await router.kill();
    }
  });

  it('SIGTERM: readiness off, in-flight requests finish, exit 0', async () => {
    const router = await startRouter(resourcesFor([{ name: 'pod-b', port: b.port }]));
    const inflight = Array.from({ length: 6 }, () => postJson(`${router.url}/v1/completions`, { model: 'sf-model', prompt: 'slow' }));
    await waitFor('requests to reach the backend', async () => (await b.stats()).requests >= 6, 5000);
    router.child.kill('SIGTERM');
    const results = await Promise.all(inflight);
    expect(results.map((r) => r.status)).toEqual([200, 200, 200, 200, 200, 200]);
    expect(await router.exited).toBe(0);
    await expect(fetch(`${router.url}/healthz`)).rejects.toThrow();
  });

  it('a worker that dies during the drain is reported, with what it left unanswered', async () => {
    const router = await startRouter(resourcesFor([{ name: 'pod-a', port: a.port }]), { workers: 1 });
    const before = (await a.stats()).requests;
    const inflight = postJson(`${router.url}/v1/completions`, { model: 'sf-model', prompt: 'x' }, { 'x-mock-latency-ms': '20000' }).then((r) => r.status, () => 'cut');
    await waitFor('the request to reach the backend', async () => (await a.stats()).requests > before, 5000);
    const [worker] = childPids(router.pid);
    router.child.kill('SIGTERM');
    await waitFor('the drain to begin', () => router.stderr().includes('drain: draining'), 5000);
    // Killed as the kernel's out-of-memory killer would, while its request is in flight.
    process.kill(worker, 'SIGKILL');
    expect(await inflight).toBe('cut');
    await router.exited;
    expect(router.stderr()).toContain(`worker ${worker} exited (SIGKILL) during the drain; any requests it had in flight were lost`);
  });

  it('a worker restarted just before SIGTERM serves its drain delay with the configuration', async () => {
    const router = await startRouter(resourcesFor([{ name: 'pod-a', port: a.port }]), { workers: 1, env: { ROUTER_DRAIN_DELAY: '4s' } });
    const [first] = childPids(router.pid);
    process.kill(first, 'SIGKILL');
    // SIGTERM while its replacement is still starting (it is the only worker: it takes every connection).
    await waitFor('the replacement to be forked', () => childPids(router.pid).some((p) => p !== first), 5000, 5);
    router.child.kill('SIGTERM');
    await waitFor('/readyz to answer 503 draining', async () => (await fetch(`${router.url}/readyz`).then((r) => r.text(), () => '')) === 'draining\n', 5000);
    const during = await postFresh(`${router.url}/v1/completions`, { model: 'sf-model', prompt: 'during the delay' });
    expect([during.status, during.headers['x-mock-pod']]).toEqual([200, 'pod-a']);
    expect(await router.exited).toBe(0);
  });

  it('workers do not outlive a primary that was killed', async () => {
    const router = await startRouter(resourcesFor([{ name: 'pod-a', port: a.port }]));
    const pids = childPids(router.child.pid!);
    expect(pids.length).toBe(2);
    await router.kill('SIGKILL');
    await waitFor('orphaned workers to exit', () => pids.every((p) => !processAlive(p)), 10_000);
  });

  it('a crash loop ends the router with a non-zero exit and a clear message', async () => {
    const dir = tempDir();
    const router = await startRouter(resourcesFor([{ name: 'pod-a', port: a.port }]), { dir, workers: 1 });
    // Kill workers as fast as they come back.
    const killer = setInterval(() => {
      for (const pid of childPids(router.child.pid!)) {
        try { process.kill(pid, 'SIGKILL'); } catch { /* gone */ }
      }
    }, 50);
    try {
      const code = await Promise.race([router.exited, new Promise((r) => setTimeout(() => r('still running'), 20_000))]);
      expect(code).toBe(1);
      expect(router.stderr()).toContain('crashing in a loop');
    } finally {
      clearInterval(killer);
      await router.kill('SIGKILL');
    }
  });
});
