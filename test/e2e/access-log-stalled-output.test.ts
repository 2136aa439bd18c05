import { Pool } from 'undici';
import { describe, expect, it } from 'vitest';
import { resourcesFor, startRouter, unusedPort } from '../helpers/processes.js';

describe('access log to a stdout nobody reads while the router stops', () => {
  it('every answered request is either written or counted as dropped on stderr, also those still queued at the exit', async () => {
    const router = await startRouter(resourcesFor([{ name: 'pod-a', port: await unusedPort() }]), {
      workers: 1,
      env: { ACCESS_LOG_ENABLED: 'true', ACCESS_LOG_FORMAT: 'json', ACCESS_LOG_OUTPUT: 'stdout', ACCESS_LOG_BUFFER_BYTES: '65536', ROUTER_DRAIN_TIMEOUT: '1s' },
    });
    // The log shipper stops reading: the pipe fills, then the writer's queue, then records are dropped.
    router.child.stdout!.pause();
    const pool = new Pool(router.url, { connections: 8 });
    const total = 1000;
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
    expect(await router.kill()).toBe(0);
    // The shipper reads again: what the router wrote is all in the pipe.
    const out = router.child.stdout!;
    const ended = new Promise((resolve) => out.once('end', resolve));
    out.resume();
    await ended;
    const written = router.stdout().split('\n').filter((l) => l.length > 0).map((l) => JSON.parse(l).request_id as string);
    expect(new Set(written).size).toBe(written.length);
    // The last report of drops holds the count since start (one worker).
    const reports = [...router.stderr().matchAll(/access log: .*dropped \d+ records.*\((\d+) (?:dropped )?since start/g)];
    expect(reports.length).toBeGreaterThan(0);
    const dropped = Number(reports.at(-1)![1]);
    expect(written.length + dropped).toBe(total);
  }, 60_000);
});
