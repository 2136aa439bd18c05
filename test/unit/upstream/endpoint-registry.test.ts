import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EndpointRegistry, LEARN_EVENTS, type EndpointState } from '../../../src/upstream/endpoint-registry.js';
import type { Http1Handler } from '../../../src/upstream/http1/request.js';

/** Sends one GET through an endpoint's pool; resolves with the status or the error code. */
function get(e: EndpointState): Promise<string> {
  return new Promise((resolve) => {
    const handler: Http1Handler = {
      onHeaders: (status) => { resolve(String(status)); return true; },
      onData: () => true,
      onComplete: () => undefined,
      onError: (err) => resolve((err as { code?: string }).code ?? err.message),
    };
    e.pool.dispatch({ method: 'GET', path: '/', headers: [], body: null }, handler);
  });
}

describe('endpoint registry: pools of pods across snapshots', () => {
  let server: Server;
  let port = 0;
  beforeAll(async () => {
    server = createServer((_req, res) => res.end('ok'));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    port = (server.address() as { port: number }).port;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise<void>((r) => server.close(() => r()));
  });

  it('keeps a pod\'s pool while a snapshot names it; a retired pod\'s pool closes once its last request ends', async () => {
    const reg = new EndpointRegistry({ connections: 4 });
    const pod = { name: 'p', host: '127.0.0.1', port };
    const a = reg.acquire(pod);
    reg.releaseUnused();
    expect(reg.acquire(pod)).toBe(a); // still named: same state, same pool
    reg.releaseUnused();
    expect(a.retired).toBe(false);
    expect(await get(a)).toBe('200');

    a.begin(); // a request in flight
    reg.releaseUnused(); // the next snapshot no longer names the pod
    expect(a.retired).toBe(true);
    expect(await get(a)).toBe('200'); // the in-flight request's pool still works
    a.end();
    expect(await get(a)).toBe('HTTP1_POOL_CLOSED'); // closed: a later pick fails over, as after a connect failure (not counted as the pod's)
    expect([...reg.states()]).toHaveLength(0);
    expect(reg.acquire(pod)).not.toBe(a); // named again: a fresh state
    await reg.closeAll();
  });

  it('an IPv6 address in brackets connects to the bare address', async () => {
    const reg = new EndpointRegistry({ connections: 1 });
    const e = reg.acquire({ name: 'v6', host: '[::1]', port: 1 });
    expect(e.origin).toBe('http://[::1]:1');
    expect(e.pool.host).toBe('::1');
    await reg.closeAll();
  });

  it('learns from a pod\'s full streams whether it reports its count, and its tokens per event from long ones', async () => {
    const reg = new EndpointRegistry({ connections: 1 });
    const e = reg.acquire({ name: 'p', host: '127.0.0.1', port });
    expect(e.streamTokensPerEvent).toBeNull(); // nothing known: every event is read
    e.learnStream(16, 18); // a short stream with its count: one token per event assumed
    expect(e.streamTokensPerEvent).toBe(1);
    e.learnStream(3 * LEARN_EVENTS, LEARN_EVENTS); // a long one: its own ratio
    expect(e.streamTokensPerEvent).toBe(3);
    e.learnStream(40, 20); // a short one keeps what a long one taught
    expect(e.streamTokensPerEvent).toBe(3);
    e.learnStream(LEARN_EVENTS - 1, LEARN_EVENTS - 1);
    expect(e.streamTokensPerEvent).toBe(3);
    e.learnStream(null, 5000); // ended without a count: read every event again
    expect(e.streamTokensPerEvent).toBeNull();
    e.learnStream(2 * LEARN_EVENTS, 4 * LEARN_EVENTS);
    expect(e.streamTokensPerEvent).toBe(0.5);
    await reg.closeAll();
  });
});
