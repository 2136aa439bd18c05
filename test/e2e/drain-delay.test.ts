import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postFresh, postJson, resourcesFor, startMock, startRouter, waitFor, type MockBackend } from '../helpers/processes.js';

describe('ROUTER_DRAIN_DELAY', () => {
  let slow: MockBackend;
  beforeAll(async () => {
    slow = await startMock('pod-slow', ['--latency-ms', '300']);
  });
  afterAll(async () => {
    await slow?.kill();
  });

  it('on SIGTERM /readyz answers 503 while in-flight and new requests are still served, then the router exits 0', async () => {
    // Long enough for the checks below to happen inside it on a busy machine; the test waits
    // for events, not for the delay.
    const router = await startRouter(resourcesFor([{ name: 'pod-slow', port: slow.port }]), { workers: 1, env: { ROUTER_DRAIN_DELAY: '4s' } });
    const inflight = postJson(`${router.url}/v1/completions`, { model: 'sf-model', prompt: 'in flight' });
    await waitFor('the request to reach the backend', async () => (await slow.stats()).requests >= 1, 5000);
    router.child.kill('SIGTERM');
    const ready = await waitFor('/readyz to answer 503', async () => {
      const r = await fetch(`${router.url}/readyz`);
      return r.status === 503 ? r.text() : null;
    }, 5000);
    expect(ready).toBe('draining\n');
    // The listener is still open: a new connection is accepted and answered.
    const fresh = await postFresh(`${router.url}/v1/completions`, { model: 'sf-model', prompt: 'new' });
    expect(fresh.status).toBe(200);
    expect((await inflight).status).toBe(200);
    expect(await router.exited).toBe(0);
    expect(router.stderr()).toMatch(/drain: draining: readiness off, \/readyz answers 503 for 4000 ms/);
    await expect(fetch(`${router.url}/healthz`)).rejects.toThrow();
  });

  it('during the delay an inference answer on a kept-alive connection closes it, a stream too, so the client moves away', async () => {
    const router = await startRouter(resourcesFor([{ name: 'pod-slow', port: slow.port }]), { workers: 1, env: { ROUTER_DRAIN_DELAY: '4s' } });
    try {
      // Two kept-alive connections, each used once before SIGTERM: their answers keep them open.
      const [plain, stream] = await Promise.all([keptAlive(router.port), keptAlive(router.port)]);
      for (const s of [plain, stream]) expect(await answerOn(s, completion({ model: 'sf-model', prompt: 'before' }))).not.toMatch(/\r\nconnection: close\r\n/i);
      router.child.kill('SIGTERM');
      await waitFor('/readyz to answer 503', async () => (await fetch(`${router.url}/readyz`)).status === 503, 5000);
      // Still served during the delay (the listener is open), but each answer ends its connection.
      for (const [s, body] of [[plain, { model: 'sf-model', prompt: 'during' }], [stream, { model: 'sf-model', prompt: 'during', stream: true }]] as const) {
        const closed = new Promise<void>((resolve) => s.once('close', () => resolve()));
        const answer = await answerOn(s, completion(body));
        expect(answer).toMatch(/^HTTP\/1\.1 200 /);
        expect(answer).toMatch(/\r\nconnection: close\r\n/i);
        await closed;
      }
      expect(await router.exited).toBe(0);
    } finally {
      await router.kill();
    }
  });

  it('once the drain is on, health, readiness and metrics answers close their kept-alive connections too', async () => {
    const router = await startRouter(resourcesFor([{ name: 'pod-slow', port: slow.port }]), { workers: 1 });
    /** Sends `request` on `s` and reads back one answer's head (with what follows, if anything). */
    const ask = (s: Socket, request: string): Promise<string> => new Promise((resolve) => {
      let text = '';
      const onData = (d: Buffer): void => {
        text += d.toString('latin1');
        if (!text.includes('\r\n\r\n')) return;
        s.off('data', onData);
        resolve(text);
      };
      s.on('data', onData);
      s.write(request);
    });
    const paths = ['/healthz', '/readyz', '/metrics', '/v1/models'];
    // One kept-alive connection per path, opened (and used once) before the listener closes.
    const sockets = await Promise.all(paths.map(async () => {
      const s = connect(router.port, '127.0.0.1');
      s.on('error', () => {});
      await new Promise<void>((resolve) => s.once('connect', () => resolve()));
      expect(await ask(s, 'GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n')).not.toMatch(/connection: close/i);
      return s;
    }));
    try {
      // Keeps the drain going while the connections are used.
      const before = (await slow.stats()).requests;
      const inflight = postJson(`${router.url}/v1/completions`, { model: 'sf-model', prompt: 'x' }, { 'x-mock-latency-ms': '3000' });
      await waitFor('the request to reach the backend', async () => (await slow.stats()).requests > before, 5000);
      router.child.kill('SIGTERM');
      await waitFor('the listener to close', async () => fetch(`${router.url}/healthz`).then(() => false, () => true), 5000);
      for (let i = 0; i < paths.length; i++) {
        const closed = new Promise<void>((resolve) => sockets[i].once('close', () => resolve()));
        const head = await ask(sockets[i], `GET ${paths[i]} HTTP/1.1\r\nHost: x\r\n\r\n`);
        expect(head, paths[i]).toMatch(/^HTTP\/1\.1 (200|503) /);
        expect(head, paths[i]).toMatch(/\r\nconnection: close\r\n/i);
        await closed;
      }
      expect((await inflight).status).toBe(200);
      expect(await router.exited).toBe(0);
    } finally {
      for (const s of sockets) s.destroy();
      await router.kill();
    }
  });
});

/** A connection to the router, kept open by the test. */
async function keptAlive(port: number): Promise<Socket> {
  const s = connect(port, '127.0.0.1');
  s.on('error', () => {});
  await new Promise<void>((resolve) => s.once('connect', () => resolve()));
  return s;
}

/** A POST /v1/completions request with `body`, to be sent on a kept-alive connection. */
function completion(body: unknown): string {
  const text = JSON.stringify(body);
  return `POST /v1/completions HTTP/1.1\r\nHost: x\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(text)}\r\n\r\n${text}`;
}

/** Sends `request` on `s` and reads its whole answer (a content-length body, or a chunked one to its last chunk). */
function answerOn(s: Socket, request: string): Promise<string> {
  return new Promise((resolve) => {
    let text = '';
    const onData = (d: Buffer): void => {
      text += d.toString('latin1');
      const end = text.indexOf('\r\n\r\n');
      if (end < 0) return;
      const length = /\r\ncontent-length: (\d+)\r\n/i.exec(text.slice(0, end + 2));
      if (length !== null ? text.length < end + 4 + Number(length[1]) : !text.endsWith('\r\n0\r\n\r\n')) return;
      s.off('data', onData);
      resolve(text);
    };
    s.on('data', onData);
    s.write(request);
  });
}
