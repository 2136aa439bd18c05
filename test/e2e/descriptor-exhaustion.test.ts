/**
 * A worker that runs out of file descriptors (its open-file limit lowered with prlimit while it
 * runs, then filled by idle client connections) stops accepting instead of spinning a CPU on its
 * listener (src/worker/descriptor-guard.ts), says so, goes on with the requests it has, and accepts
 * again once connections close. Real processes: the built router, a mock pod, prlimit(1).
 */
import { spawnSync } from 'node:child_process';
import { connect, type Socket } from 'node:net';
import { readdirSync, readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLI, childPids, postJson, resourcesFor, spawnProcess, startMock, startRouter, tempDir, waitFor, writeFile, type MockBackend, type Router } from '../helpers/processes.js';
import { serverPort } from '../helpers/ports.js';
import { join } from 'node:path';

/** CPU ticks (user + system) of a process so far. */
function cpuTicks(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return Number(fields[11]) + Number(fields[12]);
}

function openSocket(port: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const s = connect(port, '127.0.0.1', () => resolve(s));
    s.on('error', reject);
  });
}

/** The status line of a request sent on an open connection. */
function requestOn(s: Socket, body: string): Promise<string> {
  return new Promise((resolve, reject) => {
    let got = '';
    s.on('data', (d) => {
      got += d.toString('latin1');
      if (got.includes('\r\n')) resolve(got.slice(0, got.indexOf('\r\n')));
    });
    s.on('error', reject);
    s.write(`POST /v1/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
  });
}

const hasPrlimit = spawnSync('prlimit', ['--version']).status === 0;

describe.skipIf(!hasPrlimit || process.platform !== 'linux')('a worker out of file descriptors', () => {
  let mock: MockBackend;
  let router: Router;
  let worker: number;
  const idle: Socket[] = [];

  beforeAll(async () => {
    mock = await startMock('pod-a');
    router = await startRouter(resourcesFor([{ name: 'pod-a', port: mock.port }]), { workers: 1 });
    // A connection to the pod is open before the limit is lowered (pooled, kept alive).
    expect((await postJson(`${router.url}/v1/completions`, { model: 'sf-model', prompt: 'hi' })).status).toBe(200);
    worker = (await waitFor('the worker', () => { const p = childPids(router.pid); return p.length === 1 ? p : null; }))[0];
  });
  afterAll(async () => {
    for (const s of idle) s.destroy();
    await router?.kill();
    await mock?.kill();
  });

  it('stops accepting instead of spinning, serves the connections it has, and accepts again once they close', async () => {
    const open = readdirSync(`/proc/${worker}/fd`).length;
    const limit = open + 60;
    expect(spawnSync('prlimit', ['--pid', String(worker), `--nofile=${limit}:${limit}`]).status).toBe(0);
    // More idle connections than descriptors left: the worker takes what it can.
    for (let i = 0; i < 150; i++) {
      try {
        idle.push(await openSocket(router.port));
      } catch {
        break; // refused: the listener is closed already
      }
    }
    await waitFor('the pause line', () => router.stderr().includes('no file descriptor free'), 10_000);
    expect(router.stderr()).toContain(`(the open-file limit is ${limit}): this worker stopped accepting connections`);

    // Not spinning on the listener: a CPU spinning takes ~100 ticks a second.
    const before = cpuTicks(worker);
    await new Promise((r) => setTimeout(r, 2000));
    expect(cpuTicks(worker) - before).toBeLessThan(100);

    // A new client is refused at once, not left hanging (the only worker does not listen).
    const started = Date.now();
    await expect(openSocket(router.port)).rejects.toThrow(/ECONNREFUSED/);
    expect(Date.now() - started).toBeLessThan(4000);

    // A connection the worker accepted is served: its descriptors are free for the pod.
    const accepted = idle[0];
    expect(await requestOn(accepted, JSON.stringify({ model: 'sf-model', prompt: 'still served' }))).toBe('HTTP/1.1 200 OK');

    // Connections close: it listens again.
    for (const s of idle.splice(0)) s.destroy();
    await waitFor('the resume line', () => router.stderr().includes('file descriptors free again: this worker accepts connections again'), 10_000);
    expect((await postJson(`${router.url}/v1/completions`, { model: 'sf-model', prompt: 'back' })).status).toBe(200);
    const metrics = await (await fetch(`${router.url}/metrics`)).text();
    expect(Number(/^inference_router_listener_pauses_total (\d+)$/m.exec(metrics)?.[1])).toBeGreaterThanOrEqual(1);
  });

  it('a worker paused for want of descriptors drains on SIGTERM as the others do, and the router exits 0', async () => {
    const open = readdirSync(`/proc/${worker}/fd`).length;
    expect(spawnSync('prlimit', ['--pid', String(worker), `--nofile=${open + 40}:${open + 40}`]).status).toBe(0);
    for (let i = 0; i < 100; i++) {
      try {
        idle.push(await openSocket(router.port));
      } catch {
        break;
      }
    }
    await waitFor('the worker paused', async () => {
      try {
        (await openSocket(router.port)).destroy();
        return false;
      } catch {
        return true;
      }
    }, 10_000);
    expect(await router.kill('SIGTERM')).toBe(0);
    expect(router.stderr()).not.toContain('drain timeout passed');
  });
});

describe.skipIf(!hasPrlimit || process.platform !== 'linux')('a low open-file limit at start', () => {
  it('is warned of, naming the limit, and the router starts', async () => {
    const file = join(tempDir(), 'resources.yaml');
    writeFile(file, resourcesFor([{ name: 'pod-a', port: 9 }]));
    const port = await serverPort();
    const p = spawnProcess('prlimit', ['--nofile=512:512', process.execPath, CLI, '--resources', file, '--port', String(port), '--host', '127.0.0.1', '--workers', '1'],
      { ACCESS_LOG_ENABLED: 'false', ROUTER_DRAIN_DELAY: '0' }, { name: 'router' });
    try {
      await waitFor('ready', () => p.stderr().includes('ready: '), 30_000);
      expect(p.stderr()).toMatch(/warn \[primary \d+\] start: the open-file limit is 512 \(ulimit -n, systemd LimitNOFILE\): a worker holds about 90 descriptors/);
    } finally {
      await p.kill();
    }
  });
});
