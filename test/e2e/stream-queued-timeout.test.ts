import { createServer, type ServerResponse } from 'node:http';
import { describe, expect, it } from 'vitest';
import { listenLocal, postJson, resourcesFor, startRouter } from '../helpers/processes.js';

/**
 * A stream is bounded by the ModelServer's timeout on the wait for its first byte. A stream that
 * waits for a connection to the pod (all ROUTER_UPSTREAM_CONNECTIONS busy with long streams) is
 * waiting for its first byte too: it is answered `504 timeout`, not held for as long as the
 * streams before it run.
 */
describe('a stream queued behind busy connections to its pod', () => {
  it('is answered 504 timeout after the ModelServer\'s timeout, while the stream holding the connection goes on', async () => {
    const open: ServerResponse[] = [];
    const pod = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        const event = `data: ${JSON.stringify({ choices: [{ index: 0, delta: { content: 'hi' } }] })}\n\n`;
        res.write(event);
        // A long generation: an event every 200 ms (within the timeout between chunks), no end.
        const t = setInterval(() => (res.destroyed ? clearInterval(t) : res.write(event)), 200);
        open.push(res);
      });
    });
    const port = await listenLocal(pod);
    const router = await startRouter(resourcesFor([{ name: 'busy-pod', port }], { timeout: '1s' }),
      { workers: 1, env: { ROUTER_UPSTREAM_CONNECTIONS: '1' } });
    const body = { model: 'sf-model', prompt: 'go', stream: true };
    const first = new AbortController();
    try {
      const holding = await fetch(`${router.url}/v1/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body), signal: first.signal });
      expect(holding.status).toBe(200);
      const reader = holding.body!.getReader();
      expect((await reader.read()).done).toBe(false);
      // The second waits for the one connection; it must not outlive the 1 s timeout by far
      // (the race below ends the wait at 15 s should it never be answered).
      const queued = await Promise.race([
        postJson(`${router.url}/v1/completions`, body).then(async (r) => ({ status: r.status, text: await r.text() })),
        new Promise<{ status: number; text: string }>((r) => setTimeout(() => r({ status: 0, text: 'no answer within 15 s' }), 15_000)),
      ]);
      expect(queued.status).toBe(504);
      expect(queued.text).toMatch(/timed out/);
      expect(open.length).toBe(1); // the queued request never reached the pod
    } finally {
      first.abort();
      for (const res of open) res.destroy();
      await router.kill('SIGKILL');
      pod.close();
    }
  }, 30_000);
});
