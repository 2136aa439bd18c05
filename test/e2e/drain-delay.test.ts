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
