import { connect } from 'node:net';
import { Pool } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resourcesFor, startMock, startRouter, waitFor, type MockBackend, type Router } from '../helpers/processes.js';

/**
 * A stream that began before SIGTERM went out without `connection: close` (its headers were
 * gone), so its client keeps the connection for its next request. Once the drain has nothing
 * left in flight the router ends such connections itself, rather than keep them open while it
 * finishes its shutdown and close, unanswered, a request sent on one meanwhile. The shutdown is
 * kept long here by an access-log output that does not take the last records (a log shipper
 * that has stopped reading), which the router waits for up to ROUTER_DRAIN_TIMEOUT.
 */
describe('kept-alive connections at the end of the drain, real processes', () => {
  let pod: MockBackend;
  beforeAll(async () => {
    pod = await startMock('pod-a', ['--tokens-per-second', '20', '--output-tokens', '20']);
  });
  afterAll(async () => {
    await pod?.kill();
  });

  it('the connection of a stream begun before SIGTERM is closed by the router once the drain is done, before the router exits', async () => {
    const router = await startRouter(resourcesFor([{ name: 'pod-a', port: pod.port }]), {
      workers: 1,
      env: { ACCESS_LOG_ENABLED: 'true', ACCESS_LOG_FORMAT: 'json', ACCESS_LOG_OUTPUT: 'stdout', ACCESS_LOG_BUFFER_BYTES: '65536', ROUTER_DRAIN_TIMEOUT: '30s' },
    });
    try {
      // The log shipper stops reading: the pipe fills, so the last records' flush waits.
      router.child.stdout!.pause();
      await fill(router, 600);
      const socket = connect(router.port, '127.0.0.1');
      socket.on('error', () => {});
      let raw = '';
      let ended = false;
      socket.setEncoding('latin1');
      socket.on('data', (d: string) => { raw += d; });
      socket.on('end', () => { ended = true; });
      const body = JSON.stringify({ model: 'sf-model', prompt: 'x', stream: true });
      socket.write(`POST /v1/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n${body}`);
      await waitFor('the stream to begin', () => raw.includes('data: '), 10_000);
      router.child.kill('SIGTERM');
      await waitFor('the stream to end', () => raw.endsWith('\r\n0\r\n\r\n'), 10_000);
      expect(raw).toMatch(/^HTTP\/1\.1 200 /);
      expect(raw).toContain('data: [DONE]');
      // The router is still waiting for its output (up to ROUTER_DRAIN_TIMEOUT): the connection
      // is ended by the router, not left to the process's exit.
      await waitFor('the router to end the connection', () => ended, 5_000);
      expect(router.child.exitCode).toBe(null);
      router.child.stdout!.resume();
      expect(await router.exited).toBe(0);
      socket.destroy();
    } finally {
      router.child.stdout!.resume();
      await router.kill();
    }
  }, 60_000);
});

/** Sends `total` requests that are answered at once (404: no such model), 8 at a time. */
async function fill(router: Router, total: number): Promise<void> {
  const pool = new Pool(router.url, { connections: 8 });
  let next = 0;
  try {
    await Promise.all(Array.from({ length: 8 }, async () => {
      while (next < total) {
        next++;
        const r = await pool.request({ path: '/v1/completions', method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"model":"nope","prompt":"x"}' });
        await r.body.text();
      }
    }));
  } finally {
    await pool.close();
  }
}
