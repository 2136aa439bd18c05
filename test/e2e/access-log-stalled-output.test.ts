import { Pool } from 'undici';
import { describe, expect, it } from 'vitest';
import { request as httpRequest } from 'node:http';
import { resourcesFor, startMock, startRouter, unusedPort, type Router } from '../helpers/processes.js';

/** Sends `total` requests that are answered at once (404: no such model), 8 at a time. */
async function fill(router: Router, total: number): Promise<void> {
  const pool = new Pool(router.url, { connections: 8 });
  let next = 0;
  try {
    await Promise.all(Array.from({ length: 8 }, async () => {
      while (next < total) {
        const r = await pool.request({
          path: '/v1/completions', method: 'POST', headers: { 'content-type': 'application/json', 'x-request-id': `q-${next++}` },
          body: '{"model":"nope","prompt":"x"}',
        });
        await r.body.text();
      }
    }));
  } finally {
    await pool.close();
  }
}

/** After the router exited: the request ids it wrote to stdout, and the drops its last report counts (one worker). */
async function outcome(router: Router): Promise<{ written: string[]; dropped: number }> {
  const out = router.child.stdout!;
  const ended = new Promise((resolve) => out.once('end', resolve));
  out.resume();
  await ended;
  const written = router.stdout().split('\n').filter((l) => l.length > 0).map((l) => JSON.parse(l).request_id as string);
  const reports = [...router.stderr().matchAll(/access log: .*dropped \d+ records.*\((\d+) (?:dropped )?since start/g)];
  return { written, dropped: reports.length === 0 ? 0 : Number(reports.at(-1)![1]) };
}

describe('access log to a stdout nobody reads while the router stops', () => {
  it('every answered request is either written or counted as dropped on stderr, also those still queued at the exit', async () => {
    const router = await startRouter(resourcesFor([{ name: 'pod-a', port: await unusedPort() }]), {
      workers: 1,
      env: { ACCESS_LOG_ENABLED: 'true', ACCESS_LOG_FORMAT: 'json', ACCESS_LOG_OUTPUT: 'stdout', ACCESS_LOG_BUFFER_BYTES: '65536', ROUTER_DRAIN_TIMEOUT: '1s' },
    });
    // The log shipper stops reading: the pipe fills, then the writer's queue, then records are dropped.
    router.child.stdout!.pause();
    const total = 1000;
    await fill(router, total);
    expect(await router.kill()).toBe(0);
    // The shipper reads again: what the router wrote is all in the pipe.
    const { written, dropped } = await outcome(router);
    expect(new Set(written).size).toBe(written.length);
    expect(dropped).toBeGreaterThan(0);
    expect(written.length + dropped).toBe(total);
  }, 60_000);

  it('a stream cut at ROUTER_DRAIN_TIMEOUT: the worker gives up on the output within the drain timeout, not past the primary\'s deadline', async () => {
    const mock = await startMock('pod-a', ['--tokens-per-second', '10', '--output-tokens', '200']);
    const router = await startRouter(resourcesFor([{ name: 'pod-a', port: mock.port }]), {
      workers: 1,
      env: { ACCESS_LOG_ENABLED: 'true', ACCESS_LOG_FORMAT: 'json', ACCESS_LOG_OUTPUT: 'stdout', ACCESS_LOG_BUFFER_BYTES: '65536', ROUTER_DRAIN_TIMEOUT: '4s' },
    });
    try {
      router.child.stdout!.pause();
      await fill(router, 1000);
      // A 20 s stream, cut when the drain timeout passes.
      const started = new Promise<void>((resolve, reject) => {
        const req = httpRequest(`${router.url}/v1/completions`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-request-id': 'stream' } }, (res) => {
          res.once('data', () => resolve());
          res.on('error', () => undefined);
        });
        req.on('error', reject);
        req.end('{"model":"sf-model","prompt":"x","stream":true}');
      });
      await started;
      // The primary SIGKILLs workers still running 5 s after the drain timeout.
      expect(await router.kill()).toBe(0);
      expect(router.stderr()).not.toContain('killing remaining workers');
      const { written, dropped } = await outcome(router);
      expect(written.length + dropped).toBe(1001);
    } finally {
      await router.kill();
      await mock.kill();
    }
  }, 60_000);
});
