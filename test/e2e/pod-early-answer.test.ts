import { createServer, type Server, type Socket } from 'node:net';
import { existsSync, readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listenLocal, resourcesFor, startLoggedRouter, waitFor, type LoggedRouter } from '../helpers/processes.js';

/**
 * A pod that answers a large request early, after its head (413), and resets the connection with
 * the rest of the body unread, as servers that close with unread data do. Whether the router reads
 * the answer before its write of the body fails depends on the order of events in its event loop
 * (test/unit/upstream/http1/reset-after-answer.test.ts fixes that order; here it is left to
 * chance, over several requests): either way the client gets the pod's 413, never a 502.
 */

/** Reads a request's head, then stops reading, writes a whole 413 and resets the connection. */
function earlyAnswerPod(): Server {
  return createServer((s: Socket) => {
    let head = '';
    s.on('error', () => undefined);
    s.on('data', (d: Buffer) => {
      if (head.includes('\r\n\r\n')) return;
      head += d.toString('latin1');
      if (!head.includes('\r\n\r\n')) return;
      s.pause();
      s.write('HTTP/1.1 413 Payload Too Large\r\ncontent-type: application/json\r\ncontent-length: 24\r\nconnection: close\r\n\r\n{"error":"pod: too big"}');
      s.resetAndDestroy();
    });
  });
}

function records(file: string): any[] {
  return existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter((l) => l.length > 0).map((l) => JSON.parse(l)) : [];
}

describe('a pod that answers before the body is in and resets the connection', () => {
  const pod = earlyAnswerPod();
  let router: LoggedRouter;

  beforeAll(async () => {
    const port = await listenLocal(pod);
    router = await startLoggedRouter(resourcesFor([{ name: 'pod-a', port }]), { env: { ACCESS_LOG_FLUSH_INTERVAL: '0' } });
  }, 90_000);
  afterAll(async () => {
    await router?.kill('SIGKILL');
    await new Promise((r) => pod.close(r));
  });

  it('the client gets the pod\'s 413, recorded with the pod\'s status, every time', async () => {
    // 8 MB: more than the connection's socket buffers take while the pod reads nothing.
    const body = JSON.stringify({ model: 'sf-model', messages: [{ role: 'user', content: 'x'.repeat(8 << 20) }] });
    const n = 12;
    const got: string[] = [];
    for (let i = 0; i < n; i++) {
      const r = await fetch(`${router.url}/v1/chat/completions`, {
        method: 'POST', headers: { 'content-type': 'application/json', 'x-request-id': `early-${i}` }, body,
      });
      got.push(`${r.status} ${await r.text()}`);
    }
    expect(got).toEqual(Array(n).fill('413 {"error":"pod: too big"}'));
    const rs = await waitFor('the records', () => {
      const all = records(router.logFile).filter((r) => String(r.request_id).startsWith('early-'));
      return all.length === n ? all : null;
    });
    for (const r of rs) {
      expect(r.status_code).toBe(413);
      // The pod's own answer, as any 4xx of a pod is recorded; not the router's upstream_error.
      expect(r.error).toEqual({ type: 'invalid_request', message: 'upstream pod pod-a answered 413' });
    }
  }, 120_000);
});
