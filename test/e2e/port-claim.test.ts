import { spawn, spawnSync } from 'node:child_process';
import { createServer, type Server } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { CLI, listenLocal, postJson, resourcesFor, startMock, startRouter, tempDir, writeFile, type MockBackend, type Router } from '../helpers/processes.js';

/** A second router started on the port the first serves: exit 2 naming the port, before any worker. */
function startSecond(resourcesFile: string, port: number, host = '127.0.0.1') {
  return spawnSync(process.execPath, [CLI, '--resources', resourcesFile, '--port', String(port), '--host', host, '--workers', '2'],
    { encoding: 'utf8', env: { ...process.env, ROUTER_DRAIN_DELAY: '0' }, timeout: 30_000 });
}

describe('a port another router or server holds', () => {
  let mock: MockBackend;
  let router: Router;

  beforeAll(async () => {
    mock = await startMock('pod-a');
    router = await startRouter(resourcesFor([{ name: 'pod-a', port: mock.port }]));
  });
  afterAll(async () => {
    await router?.kill();
    await mock?.kill();
  });

  it('a second router on the same address and port exits 2 with a message, and the first keeps every request', async () => {
    const second = startSecond(router.resourcesFile, router.port);
    expect(second.status).toBe(2);
    expect(second.stderr).toContain(`127.0.0.1:${router.port} is already served by another inference-router`);
    expect(second.stderr).not.toMatch(/started \d+ workers/);
    // Without the claim, its workers would have joined the first's (SO_REUSEPORT) and taken a share.
    const before = (await mock.stats()).requests;
    const statuses = await Promise.all(Array.from({ length: 40 }, async () => {
      const r = await postJson(`${router.url}/v1/completions`, { model: 'sf-model', prompt: 'hi' });
      await r.text();
      return r.status;
    }));
    expect(statuses.every((s) => s === 200)).toBe(true);
    expect((await mock.stats()).requests - before).toBe(40);
  });

  it('the same port on all addresses (0.0.0.0) is refused too: the first router listens on one of them', () => {
    const second = startSecond(router.resourcesFile, router.port, '0.0.0.0');
    expect(second.status).toBe(2);
    expect(second.stderr).toContain(`0.0.0.0:${router.port} is in use by another process`);
  });

  it('a port any other server listens on stops the router with exit 2 naming it', async () => {
    const other: Server = createServer();
    const port = await listenLocal(other);
    try {
      const file = join(tempDir(), 'resources.yaml');
      writeFile(file, resourcesFor([{ name: 'pod-a', port: mock.port }]));
      const r = startSecond(file, port);
      expect(r.status).toBe(2);
      expect(r.stderr).toContain(`cannot start: 127.0.0.1:${port} is in use by another process: stop it, or choose another --port`);
    } finally {
      await new Promise((r) => other.close(r));
    }
  });

  it('after the first router exits, the port can be taken again', async () => {
    const port = router.port;
    const file = router.resourcesFile;
    await router.kill();
    // Started apart (not startRouter, which picks a new port): the same port, free again.
    const next = spawn(process.execPath, [CLI, '--resources', file, '--port', String(port), '--host', '127.0.0.1', '--workers', '1'],
      { env: { ...process.env, ROUTER_DRAIN_DELAY: '0' }, stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    next.stderr!.setEncoding('utf8').on('data', (d: string) => { err += d; });
    try {
      const deadline = Date.now() + 30_000;
      let status = 0;
      while (Date.now() < deadline && status !== 200 && next.exitCode === null) {
        status = await fetch(`http://127.0.0.1:${port}/readyz`).then((r) => r.status, () => 0);
        if (status !== 200) await new Promise((r) => setTimeout(r, 50));
      }
      expect(status, err).toBe(200);
    } finally {
      next.kill('SIGTERM');
      await new Promise((r) => next.once('exit', r));
    }
  });
});
