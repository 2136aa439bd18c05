/**
 * The HTTP/1.1 client against raw `net` servers scripted byte by byte: every fixture split at
 * every byte position over a real socket (keep-alive reuse in between), 1xx, connection: close,
 * the idle-close race, malformed answers and connect failures.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { isConnectFailure } from '../../../../src/upstream/http1/errors.js';
import { Http1Pool } from '../../../../src/upstream/http1/pool.js';
import { FIXTURES, MALFORMED } from './fixtures.js';
import { post, request, scriptedServer, tick, until, type Scripted } from './helpers.js';

/** The race tests' window: wide, so a loaded machine's event-loop lag does not turn the race they stage into a failure. */
const RACE_WINDOW = 2000;

let server: Scripted | null = null;
let pool: Http1Pool | null = null;
afterEach(async () => {
  pool?.close();
  pool = null;
  await server?.close();
  server = null;
});

/** Writes `bytes` in two packets split at `k` (a short pause in between so they arrive apart). */
function writeSplit(socket: import('node:net').Socket, bytes: Buffer, k: number, end: boolean): void {
  socket.write(bytes.subarray(0, k));
  setTimeout(() => {
    if (socket.destroyed) return;
    if (end) socket.end(bytes.subarray(k));
    else socket.write(bytes.subarray(k));
  }, 1);
}

describe('HTTP/1.1 client conformance (raw sockets)', () => {
  for (const f of FIXTURES) {
    it(`${f.name}: split at every byte position over the socket`, async () => {
      let k = 0;
      server = await scriptedServer((socket) => {
        k++;
        writeSplit(socket, f.bytes, k, f.closeDelimited || !f.keepAlive);
      });
      pool = new Http1Pool('127.0.0.1', server.port, { connections: 1 });
      for (let i = 1; i < f.bytes.length; i++) {
        const a = await request(pool);
        expect(a.error, `split at ${i}`).toBeNull();
        expect(a.status).toBe(f.status);
        expect(a.body.toString('latin1'), `split at ${i}`).toBe(f.body);
        expect(a.trailers).toEqual(f.trailers);
      }
      // Keep-alive answers reuse the one connection; the others need one per request.
      expect(server.sockets.length).toBe(f.keepAlive ? 1 : f.bytes.length - 1);
    });
  }

  it('sends one well-formed request: request line, host, the given headers, content-length, body', async () => {
    server = await scriptedServer((socket) => socket.write('HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n'));
    pool = new Http1Pool('127.0.0.1', server.port);
    const a = await request(pool, post('/v1/chat/completions?x=1', '{"model":"m"}', { headers: ['content-type', 'application/json', 'x-request-id', 'r1'] }));
    expect(a.status).toBe(200);
    expect(server.requests[0].head).toBe(`POST /v1/chat/completions?x=1 HTTP/1.1\r\nhost: 127.0.0.1:${server.port}\r\n`
      + 'content-type: application/json\r\nx-request-id: r1\r\ncontent-length: 13');
    expect(server.requests[0].body.toString()).toBe('{"model":"m"}');
  });

  it('sends large bodies whole', async () => {
    const body = Buffer.alloc(3 * 1024 * 1024 + 7, 'q');
    server = await scriptedServer((socket, _i, _c, _h, got) => socket.write(`HTTP/1.1 200 OK\r\nContent-Length: ${String(got.length).length}\r\n\r\n${got.length}`));
    pool = new Http1Pool('127.0.0.1', server.port);
    const a = await request(pool, post('/big', body));
    expect(a.body.toString()).toBe(String(body.length));
  });

  it('skips 1xx and delivers headers of the final answer only', async () => {
    server = await scriptedServer((socket) => socket.write('HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nX-Final: yes\r\nContent-Length: 2\r\n\r\nok'));
    pool = new Http1Pool('127.0.0.1', server.port);
    const a = await request(pool);
    expect(a.status).toBe(200);
    expect(a.headers).toEqual(['X-Final', 'yes', 'Content-Length', '2']);
  });

  it('connection: close → the answer is delivered and the next request opens a new connection', async () => {
    server = await scriptedServer((socket) => socket.write('HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok'));
    pool = new Http1Pool('127.0.0.1', server.port);
    for (let i = 0; i < 3; i++) expect((await request(pool)).body.toString()).toBe('ok');
    expect(server.sockets.length).toBe(3);
  });

  it('an HTTP/1.0 answer with transfer-encoding: delivered, but its framing is faulty (RFC 9112 §6.1): the connection is not reused', async () => {
    server = await scriptedServer((socket) => socket.write('HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n'));
    pool = new Http1Pool('127.0.0.1', server.port);
    for (let i = 0; i < 3; i++) expect((await request(pool)).body.toString()).toBe('ok');
    expect(server.sockets.length).toBe(3);
  });

  it('a HEAD answer has no body and the connection is reused', async () => {
    server = await scriptedServer((socket, i) => socket.write(i === 0 ? 'HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n' : 'HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc'));
    pool = new Http1Pool('127.0.0.1', server.port);
    const h = await request(pool, { method: 'HEAD', path: '/', headers: [], body: null });
    expect(h.status).toBe(200);
    expect(h.body.length).toBe(0);
    expect((await request(pool)).body.toString()).toBe('abc');
    expect(server.sockets.length).toBe(1);
  });

  it('idle-close race: a reused socket closed as the request arrives → retried once on a fresh connection', async () => {
    server = await scriptedServer((socket, index, connection) => {
      if (connection === 0 && index === 1) socket.destroy(); // the server had decided to close this idle socket
      else socket.write('HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok');
    });
    pool = new Http1Pool('127.0.0.1', server.port, { idleRaceMs: RACE_WINDOW });
    expect((await request(pool)).status).toBe(200);
    const a = await request(pool);
    expect(a.error).toBeNull();
    expect(a.body.toString()).toBe('ok');
    expect(server.sockets.length).toBe(2);
    expect(server.requests.length).toBe(3);
  });

  it('idle-close race with a FIN right after the request', async () => {
    server = await scriptedServer((socket, index, connection) => {
      if (connection === 0 && index === 1) socket.end();
      else socket.write('HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok');
    });
    pool = new Http1Pool('127.0.0.1', server.port, { idleRaceMs: RACE_WINDOW });
    await request(pool);
    expect((await request(pool)).body.toString()).toBe('ok');
  });

  it('a reused socket that breaks a while after the request went out, before any answer: the request fails with the break, not resent (the server may have worked on it)', async () => {
    let stop: (() => void) | null = null;
    server = await scriptedServer((socket, index) => {
      if (index === 0) {
        socket.write('HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok');
        return;
      }
      // The server worked on it for a while, then went away (it stops listening, its connections drop).
      setTimeout(() => stop!(), 150);
    });
    const s = server;
    stop = () => { void s.close(); };
    pool = new Http1Pool('127.0.0.1', server.port, { timerResolutionMs: 10 });
    expect((await request(pool)).status).toBe(200);
    const a = await request(pool);
    expect(s.requests.length).toBe(2);
    expect(a.error).not.toBeNull();
    expect(isConnectFailure(a.error)).toBe(false);
    expect(a.error?.message).toMatch(/closed the connection without answering|ECONNRESET/);
    server = null;
  });

  it('a server that reads the request and closes 30 or 60 ms later without answering (a pod that crashed on it) gets it once with the pool\'s default window (IDLE_RACE_MS): not taken for the race, never run twice', async () => {
    for (const ms of [30, 60]) {
      server = await scriptedServer((socket, index) => {
        if (index === 0) socket.write('HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok');
        else setTimeout(() => socket.end(), ms);
      });
      pool = new Http1Pool('127.0.0.1', server.port);
      expect((await request(pool)).status).toBe(200);
      const a = await request(pool);
      expect(a.error?.message, `${ms} ms`).toMatch(/closed the connection without answering/);
      expect(server.requests.length, `${ms} ms`).toBe(2);
      pool.close();
      await server.close();
    }
    pool = null;
    server = null;
  });

  it('idle-close race as the server stops listening: the resend finds the port closed, a connect failure (the request never reached it)', async () => {
    let stop: (() => void) | null = null;
    server = await scriptedServer((socket, index) => {
      if (index === 0) socket.write('HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok');
      else stop!();
    });
    const s = server;
    stop = () => { void s.close(); };
    pool = new Http1Pool('127.0.0.1', server.port, { timerResolutionMs: 10, idleRaceMs: RACE_WINDOW });
    expect((await request(pool)).status).toBe(200);
    const a = await request(pool);
    expect(isConnectFailure(a.error)).toBe(true);
    server = null;
  });

  it('a server that closes an idle socket is noticed: the next request uses a new connection', async () => {
    server = await scriptedServer((socket) => {
      socket.write('HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok');
      setTimeout(() => socket.end(), 5);
    });
    pool = new Http1Pool('127.0.0.1', server.port);
    await request(pool);
    await new Promise((r) => setTimeout(r, 50));
    expect(pool.stats.connections).toBe(0);
    expect((await request(pool)).body.toString()).toBe('ok');
  });

  it('no retry on a fresh connection, nor once part of the answer arrived', async () => {
    server = await scriptedServer((socket, index) => {
      if (index === 0) socket.destroy();
    });
    pool = new Http1Pool('127.0.0.1', server.port);
    const a = await request(pool);
    expect(a.error?.message).toMatch(/closed the connection without answering|ECONNRESET|socket hang up/);
    expect(server.requests.length).toBe(1);
    await server.close();

    server = await scriptedServer((socket, index) => {
      if (index === 0) socket.write('HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok');
      else socket.end('HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\npart');
    });
    pool.close();
    pool = new Http1Pool('127.0.0.1', server.port);
    await request(pool);
    const b = await request(pool);
    expect(b.status).toBe(200);
    expect(b.body.toString()).toBe('part');
    expect(b.error?.message).toMatch(/closed the connection before the response ended/);
    expect(server.requests.length).toBe(2);
  });

  for (const m of MALFORMED) {
    it(`malformed answer: ${m.name} → error, connection not reused`, async () => {
      server = await scriptedServer((socket, index, connection) => {
        if (connection === 0) socket.write(m.bytes);
        else socket.write('HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok');
      });
      pool = new Http1Pool('127.0.0.1', server.port);
      const a = await request(pool);
      expect(a.error?.code).toBe(m.code ?? 'HTTP1_MALFORMED_RESPONSE');
      expect(a.error?.message).toMatch(m.message);
      expect(isConnectFailure(a.error)).toBe(false);
      expect((await request(pool)).body.toString()).toBe('ok');
      expect(server.sockets.length).toBe(2);
    });
  }

  it('bytes after a complete answer: the answer stands, the connection is dropped', async () => {
    server = await scriptedServer((socket) => socket.write('HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokGARBAGE'));
    pool = new Http1Pool('127.0.0.1', server.port);
    expect((await request(pool)).body.toString()).toBe('ok');
    expect((await request(pool)).body.toString()).toBe('ok');
    expect(server.sockets.length).toBe(2);
  });

  it('connect refused → the errno code, a connect failure, for the request and everything queued', async () => {
    server = await scriptedServer(() => {});
    const port = server.port;
    await server.close();
    server = null;
    pool = new Http1Pool('127.0.0.1', port, { connections: 1 });
    const answers = await Promise.all([request(pool), request(pool), request(pool)]);
    for (const a of answers) {
      expect(a.error?.code).toBe('ECONNREFUSED');
      expect(isConnectFailure(a.error)).toBe(true);
    }
    expect(pool.stats).toEqual({ connections: 0, connecting: 0, idle: 0, queued: 0 });
  });

  it('abort: a queued request and one in flight each end with the given error', async () => {
    server = await scriptedServer(() => { /* never answers */ });
    pool = new Http1Pool('127.0.0.1', server.port, { connections: 1 });
    const { Collector } = await import('./helpers.js');
    const inFlight = new Collector();
    const queued = new Collector();
    const r1 = pool.dispatch(post(), inFlight);
    const r2 = pool.dispatch(post(), queued);
    await until(() => server!.requests.length === 1, 'the first request to arrive');
    r2.abort(new Error('client went away'));
    r1.abort(new Error('client went away too'));
    expect((await queued.done).error?.message).toBe('client went away');
    expect((await inFlight.done).error?.message).toBe('client went away too');
    expect(queued.ended + inFlight.ended).toBe(2);
    await tick(10);
    expect(server.requests.length).toBe(1);
  });
});
