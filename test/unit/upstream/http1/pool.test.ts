/** Pool cap and bounded queue, backpressure both ways, and timeouts (behaviour, not durations). */
import type { Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { isConnectFailure } from '../../../../src/upstream/http1/errors.js';
import { Http1Pool } from '../../../../src/upstream/http1/pool.js';
import type { Http1Request } from '../../../../src/upstream/http1/request.js';
import { Collector, post, request, scriptedServer, until, type Scripted } from './helpers.js';

let server: Scripted | null = null;
let pool: Http1Pool | null = null;
afterEach(async () => {
  pool?.close();
  pool = null;
  await server?.close();
  server = null;
});

describe('Http1Pool', () => {
  it('opens at most `connections`, queues up to `maxQueue`, fails beyond with HTTP1_QUEUE_FULL, then serves the queue', async () => {
    const held: Socket[] = [];
    server = await scriptedServer((socket) => held.push(socket));
    pool = new Http1Pool('127.0.0.1', server.port, { connections: 2, maxQueue: 3 });
    const cs = Array.from({ length: 6 }, () => new Collector());
    for (const c of cs) pool.dispatch(post(), c);
    expect(pool.stats).toMatchObject({ connecting: 2, queued: 5 });
    expect((await cs[5].done).error?.code).toBe('HTTP1_QUEUE_FULL');
    expect(isConnectFailure(cs[5].answer.error)).toBe(true);
    await until(() => held.length === 2, 'two requests at the server');
    expect(pool.stats).toMatchObject({ connections: 2, queued: 3 });
    // Answer whatever arrives until all five are served; never more than two connections.
    let answered = 0;
    while (answered < 5) {
      await until(() => held.length > answered, 'the next request');
      held[answered++].write('HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok');
    }
    for (const c of cs.slice(0, 5)) expect((await c.done).body.toString()).toBe('ok');
    expect(server.sockets.length).toBe(2);
    expect(pool.stats).toMatchObject({ connections: 2, idle: 2, queued: 0 });
  });

  it('reuses idle connections (keep-alive) for sequential requests', async () => {
    server = await scriptedServer((socket) => socket.write('HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\n1'));
    pool = new Http1Pool('127.0.0.1', server.port);
    for (let i = 0; i < 20; i++) await request(pool);
    expect(server.sockets.length).toBe(1);
  });

  it('closes connections idle longer than keepAliveTimeoutMs', async () => {
    server = await scriptedServer((socket) => socket.write('HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\n1'));
    pool = new Http1Pool('127.0.0.1', server.port, { keepAliveTimeoutMs: 30 });
    await request(pool);
    expect(pool.stats.idle).toBe(1);
    await until(() => pool!.stats.connections === 0, 'the idle connection to close');
    await until(() => server!.sockets[0].readableEnded || server!.sockets[0].destroyed, 'the server to see the close');
  });

  it('a new connection whose request went away while it was opened is idle and closed after keepAliveTimeoutMs', async () => {
    server = await scriptedServer(() => {});
    pool = new Http1Pool('127.0.0.1', server.port, { keepAliveTimeoutMs: 30 });
    const c = new Collector();
    const req = pool.dispatch(post(), c);
    req.abort(); // the client left while the router connected
    expect((await c.done).error?.code).toBe('HTTP1_ABORTED');
    await until(() => pool!.stats.idle === 1, 'the new connection to be idle');
    await until(() => pool!.stats.connections === 0, 'the idle connection to close');
    await until(() => server!.sockets[0].readableEnded || server!.sockets[0].destroyed, 'the server to see the close');
    expect(server.requests).toEqual([]);
  });

  it('backpressure: a handler that returns false stops reading (the server is held back) until resume()', async () => {
    const size = 32 * 1024 * 1024;
    let serverBlocked = false;
    let serverWrote = 0;
    server = await scriptedServer((socket) => {
      socket.write(`HTTP/1.1 200 OK\r\nContent-Length: ${size}\r\n\r\n`);
      const piece = Buffer.alloc(64 * 1024, 7);
      const pump = (): void => {
        while (serverWrote < size) {
          serverWrote += piece.length;
          if (!socket.write(piece)) {
            serverBlocked = true;
            socket.once('drain', pump);
            return;
          }
        }
      };
      pump();
    });
    pool = new Http1Pool('127.0.0.1', server.port);
    class Slow extends Collector {
      req: Http1Request | null = null;
      override onData(chunk: Buffer, req: Http1Request): boolean {
        super.onData(chunk, req);
        this.req = req;
        return false; // every chunk: "stop until I say so"
      }
    }
    const c = new Slow();
    pool.dispatch(post(), c);
    await until(() => c.received > 0 && serverBlocked, 'the server to be held back');
    const seen = c.received;
    // While paused nothing more is read, however long we wait for the server to be unblocked.
    await new Promise((r) => setTimeout(r, 100));
    expect(c.received).toBe(seen);
    expect(serverWrote).toBeLessThan(size);
    // Resume one chunk at a time until the end.
    while (c.ended === 0) {
      c.req!.resume();
      await new Promise((r) => setImmediate(r));
    }
    const a = await c.done;
    expect(a.error).toBeNull();
    expect(a.body.length).toBe(size);
  });

  it('headers timeout: a server that never answers → HTTP1_HEADERS_TIMEOUT, not a connect failure', async () => {
    server = await scriptedServer(() => { /* silent */ });
    pool = new Http1Pool('127.0.0.1', server.port, { headersTimeoutMs: 50 });
    const a = await request(pool);
    expect(a.error?.code).toBe('HTTP1_HEADERS_TIMEOUT');
    expect(isConnectFailure(a.error)).toBe(false);
    expect(pool.stats.connections).toBe(0);
  });

  it('per-request headers timeout overrides the pool default', async () => {
    server = await scriptedServer(() => { /* silent */ });
    pool = new Http1Pool('127.0.0.1', server.port, { headersTimeoutMs: 0, timerResolutionMs: 10 });
    const a = await request(pool, post('/', 'x', { headersTimeoutMs: 40 }));
    expect(a.error?.code).toBe('HTTP1_HEADERS_TIMEOUT');
  });

  it('body timeout: a body that stalls → HTTP1_BODY_TIMEOUT after the bytes that came', async () => {
    server = await scriptedServer((socket) => socket.write('HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nfirst'));
    pool = new Http1Pool('127.0.0.1', server.port, { bodyTimeoutMs: 50 });
    const a = await request(pool);
    expect(a.status).toBe(200);
    expect(a.body.toString()).toBe('first');
    expect(a.error?.code).toBe('HTTP1_BODY_TIMEOUT');
  });

  it('a body that keeps flowing is not cut by the body (idle) timeout', async () => {
    server = await scriptedServer((socket) => {
      socket.write('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n');
      let n = 0;
      const t = setInterval(() => {
        if (socket.destroyed) return clearInterval(t);
        if (++n <= 12) socket.write('1\r\nx\r\n');
        else {
          clearInterval(t);
          socket.write('0\r\n\r\n');
        }
      }, 10);
    });
    pool = new Http1Pool('127.0.0.1', server.port, { bodyTimeoutMs: 80, timerResolutionMs: 10 });
    const a = await request(pool);
    expect(a.error).toBeNull();
    expect(a.body.toString()).toBe('x'.repeat(12));
  });

  it('total timeout: a silent server → HTTP1_TOTAL_TIMEOUT (not a connect failure); the connection is closed', async () => {
    server = await scriptedServer(() => { /* silent */ });
    pool = new Http1Pool('127.0.0.1', server.port, { headersTimeoutMs: 0, timerResolutionMs: 10 });
    const a = await request(pool, post('/', 'x', { totalTimeoutMs: 40 }));
    expect(a.error?.code).toBe('HTTP1_TOTAL_TIMEOUT');
    expect(isConnectFailure(a.error)).toBe(false);
    expect(pool.stats.connections).toBe(0);
  });

  it('total timeout bounds a body that keeps flowing, which the body (idle) timeout never cuts', async () => {
    server = await scriptedServer((socket) => {
      socket.write('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n');
      const t = setInterval(() => {
        if (socket.destroyed) clearInterval(t);
        else socket.write('1\r\nx\r\n');
      }, 5);
    });
    pool = new Http1Pool('127.0.0.1', server.port, { bodyTimeoutMs: 60, timerResolutionMs: 10 });
    const a = await request(pool, post('/', 'x', { totalTimeoutMs: 150 }));
    expect(a.status).toBe(200);
    expect(a.body.length).toBeGreaterThan(0);
    expect(a.error?.code).toBe('HTTP1_TOTAL_TIMEOUT');
  });

  it('no timeout runs while the handler holds the answer back (paused): the time paused is not the server\'s', async () => {
    // The rest of the body comes while the handler holds the answer back, and waits in the socket.
    server = await scriptedServer((socket) => {
      socket.write('HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nfirst');
      setTimeout(() => socket.write('secnd'), 20);
    });
    pool = new Http1Pool('127.0.0.1', server.port, { timerResolutionMs: 10 });
    const c = new Collector();
    let req: Http1Request | null = null;
    c.onData = (chunk: Buffer, r: Http1Request): boolean => {
      c.parts.push(Buffer.from(chunk));
      req = r;
      return c.parts.length > 1;
    };
    pool.dispatch(post('/', 'x', { totalTimeoutMs: 60, bodyTimeoutMs: 60 }), c);
    await until(() => req !== null, 'the first bytes');
    // Held back for several times both timeouts, then read again: the rest is there.
    await new Promise((r) => setTimeout(r, 300));
    expect(c.ended).toBe(0);
    req!.resume();
    const a = await c.done;
    expect(a.error).toBeNull();
    expect(Buffer.concat(c.parts).toString()).toBe('firstsecnd');
  });

  it('total timeout runs again once the handler reads on: a server silent after the pause → HTTP1_TOTAL_TIMEOUT', async () => {
    server = await scriptedServer((socket) => socket.write('HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nfirst'));
    pool = new Http1Pool('127.0.0.1', server.port, { timerResolutionMs: 10 });
    const c = new Collector();
    let req: Http1Request | null = null;
    c.onData = (chunk: Buffer, r: Http1Request): boolean => {
      c.parts.push(Buffer.from(chunk));
      req = r;
      return false;
    };
    pool.dispatch(post('/', 'x', { totalTimeoutMs: 60 }), c);
    await until(() => req !== null, 'the first bytes');
    await new Promise((r) => setTimeout(r, 200));
    expect(c.ended).toBe(0);
    req!.resume();
    const a = await c.done;
    expect(a.error?.code).toBe('HTTP1_TOTAL_TIMEOUT');
    expect(Buffer.concat(c.parts).toString()).toBe('first');
  });

  it('total timeout counts the wait for a connection: a queued request times out in the queue', async () => {
    server = await scriptedServer(() => { /* holds the first request */ });
    pool = new Http1Pool('127.0.0.1', server.port, { connections: 1, timerResolutionMs: 10 });
    const first = new Collector();
    pool.dispatch(post('/', 'x', { totalTimeoutMs: 5_000 }), first);
    await until(() => server!.sockets.length === 1, 'the first request at the server');
    const queued = await request(pool, post('/', 'x', { totalTimeoutMs: 40 }));
    expect(queued.error?.code).toBe('HTTP1_TOTAL_TIMEOUT');
    expect(pool.stats).toMatchObject({ connections: 1, queued: 0 });
    expect(first.ended).toBe(0);
  });

  it('headers timeout counts the wait for a connection: a request queued behind a busy one times out in the queue', async () => {
    // A stream is bounded by the time to its answer's head, not as a whole: waiting for a
    // connection is part of that time, or a request queued behind long streams waits unbounded.
    server = await scriptedServer(() => { /* holds the first request */ });
    pool = new Http1Pool('127.0.0.1', server.port, { connections: 1, headersTimeoutMs: 0, timerResolutionMs: 10 });
    const first = new Collector();
    pool.dispatch(post(), first);
    await until(() => server!.sockets.length === 1, 'the first request at the server');
    // The total timeout, far beyond the headers timeout, only ends the wait should the headers timeout not.
    const queued = await request(pool, post('/', 'x', { headersTimeoutMs: 40, totalTimeoutMs: 2_000 }));
    expect(queued.error?.code).toBe('HTTP1_HEADERS_TIMEOUT');
    expect(isConnectFailure(queued.error)).toBe(false);
    expect(pool.stats).toMatchObject({ connections: 1, queued: 0 });
    expect(first.ended).toBe(0);
  });

  it('an answer within the total timeout completes, and the connection is kept for the next request', async () => {
    server = await scriptedServer((socket) => socket.write('HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok'));
    pool = new Http1Pool('127.0.0.1', server.port, { timerResolutionMs: 10 });
    for (let i = 0; i < 3; i++) {
      const a = await request(pool, post('/', 'x', { totalTimeoutMs: 1_000 }));
      expect([a.error, a.body.toString()]).toEqual([null, 'ok']);
    }
    await new Promise((r) => setTimeout(r, 60));
    expect(pool.stats).toMatchObject({ connections: 1, idle: 1 });
  });

  it('connect timeout: the handshake outlasting connectTimeoutMs → HTTP1_CONNECT_TIMEOUT, a connect failure', async () => {
    // Loopback handshakes finish at once, so the pool's coarse clock is advanced by hand before
    // the event loop can complete the connect (the timer resolution keeps the real timer out).
    server = await scriptedServer((socket) => socket.write('HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n'));
    pool = new Http1Pool('127.0.0.1', server.port, { connectTimeoutMs: 1000, timerResolutionMs: 1000 });
    const c = new Collector();
    pool.dispatch(post(), c);
    pool.dispatch(post(), new Collector());
    for (let i = 0; i < 3; i++) pool.advance();
    const a = await c.done;
    expect(a.error?.code).toBe('HTTP1_CONNECT_TIMEOUT');
    expect(isConnectFailure(a.error)).toBe(true);
    expect(pool.stats).toMatchObject({ connections: 0, queued: 0 });
    // The next request connects normally.
    expect((await request(pool)).status).toBe(200);
  });
});
