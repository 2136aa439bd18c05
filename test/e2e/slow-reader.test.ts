import { Agent, createServer, request as httpRequest, type Server } from 'node:http';
import { spawn } from 'node:child_process';
import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startOtlpCollector } from '../helpers/otlp-collector.js';
import { accessLogRecords, listenLocal, resourcesFor, startLoggedRouter, waitFor, type LoggedRouter } from '../helpers/processes.js';

/**
 * A whole (content-length) answer of several MB, below the size from which the router streams an
 * answer through, to clients that take it at different speeds: its access record must say what the
 * client got, and be written once the answer is over, not when it was handed to uWS.
 */

/** Below the router's 8 MiB bound on a whole answer; more than loopback's socket buffers take at once. */
const BIG = 7 * 1024 * 1024;

function bigAnswer(bytes: number): Buffer {
  const head = '{"id":"big","choices":[{"index":0,"message":{"role":"assistant","content":"';
  const tail = '"}}],"usage":{"prompt_tokens":3,"completion_tokens":5,"total_tokens":8}}';
  return Buffer.concat([Buffer.from(head), Buffer.alloc(bytes - head.length - tail.length, 'a'), Buffer.from(tail)]);
}

/** A stream of a few MB, sent by the pod in one write. */
function bigStream(bytes: number): Buffer {
  const event = `data: ${JSON.stringify({ choices: [{ index: 0, delta: { content: 'a'.repeat(1000) } }] })}\n\n`;
  const usage = `data: ${JSON.stringify({ choices: [], usage: { prompt_tokens: 3, completion_tokens: 5, total_tokens: 8 } })}\n\ndata: [DONE]\n\n`;
  return Buffer.from(event.repeat(Math.floor(bytes / event.length)) + usage);
}

/**
 * A pod answering every request with the same big JSON answer, with its content-length; or, to
 * a request with `x-scenario: stream`, with a big SSE stream.
 */
class BigPod {
  server!: Server;
  port = 0;
  readonly body = bigAnswer(BIG);
  readonly stream = bigStream(3 * 1024 * 1024);

  async start(): Promise<void> {
    this.server = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        if (req.headers['x-scenario'] === 'stream') {
          res.writeHead(200, { 'content-type': 'text/event-stream' });
          res.end(this.stream);
          return;
        }
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(this.body.length) });
        res.end(this.body);
      });
    });
    this.port = await listenLocal(this.server);
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((r) => this.server.close(() => r()));
  }
}

const CHAT = JSON.stringify({ model: 'sf-model', messages: [{ role: 'user', content: 'hi' }] });

/** A client with a 4 KiB receive buffer asking for the stream: reads 64 KiB, says so, then reads no more. */
const SMALL_BUFFER_CLIENT = `
import socket, sys, time
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
s.connect(('127.0.0.1', int(sys.argv[1])))
body = b'{"model":"sf-model","stream":true,"messages":[{"role":"user","content":"hi"}]}'
s.sendall(b'POST /v1/chat/completions HTTP/1.1\\r\\nhost: x\\r\\ncontent-type: application/json\\r\\nx-scenario: stream\\r\\n'
  + b'x-request-id: ' + sys.argv[2].encode() + b'\\r\\ncontent-length: ' + str(len(body)).encode() + b'\\r\\n\\r\\n' + body)
got = 0
while got < 65536:
    d = s.recv(65536)
    if not d:
        break
    got += len(d)
print('read', got, flush=True)
time.sleep(60)
`;

function recordOf(file: string, requestId: string, timeoutMs = 15_000): Promise<any> {
  return waitFor(`access record ${requestId}`, () => accessLogRecords(file).find((r) => r.request_id === requestId), timeoutMs);
}

/**
 * A raw client: sends the request, counts what arrives; the test pauses, resumes or destroys it.
 * `stopAfter`: the client stops reading (socket.pause) as soon as that many bytes arrived.
 */
interface RawClient { socket: Socket; received: () => number; closed: Promise<void>; readAll: () => void }

function rawClient(url: string, requestId: string, stopAfter = Infinity): RawClient {
  const u = new URL(url);
  const socket = connect(Number(u.port), u.hostname);
  let received = 0;
  const readAll = (): void => {
    stopAfter = Infinity;
    socket.resume();
  };
  socket.on('data', (d: Buffer) => {
    received += d.length;
    if (received >= stopAfter) socket.pause();
  });
  socket.on('error', () => undefined);
  const closed = new Promise<void>((r) => socket.once('close', () => r()));
  socket.write(`POST /v1/chat/completions HTTP/1.1\r\nhost: ${u.host}\r\ncontent-type: application/json\r\nx-request-id: ${requestId}\r\n`
    + `content-length: ${Buffer.byteLength(CHAT)}\r\n\r\n${CHAT}`);
  return { socket, received: () => received, closed, readAll };
}

/** POST with node:http, reading as fast as it can: status and body length. */
function fastPost(url: string, requestId: string, agent: Agent | false = false): Promise<{ status: number; length: number }> {
  return new Promise((resolve, reject) => {
    const u = new URL(url);
    const req = httpRequest({ host: u.hostname, port: u.port, path: '/v1/chat/completions', method: 'POST', agent,
      headers: { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(CHAT)), 'x-request-id': requestId } });
    req.on('response', (res) => {
      let length = 0;
      res.on('data', (d: Buffer) => { length += d.length; });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, length }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(CHAT);
  });
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

// The describes run side by side, each with its own router; in the first, the clients that wait
// (one of them for the HTTP server's 10 s idle timeout) share one router side by side too, their
// requests told apart by their ids. The slow steady client, which compares its own clock with the
// record's duration, runs after them on its own.
describe('a large whole answer to clients that read at different speeds', { concurrent: true }, () => {
  const pod = new BigPod();
  let router: LoggedRouter;

  beforeAll(async () => {
    await pod.start();
    router = await startLoggedRouter(resourcesFor([{ name: 'pod-a', port: pod.port }]), { env: { ACCESS_LOG_FLUSH_INTERVAL: '0' } });
  }, 90_000);
  afterAll(async () => {
    await router?.kill('SIGKILL');
    await pod.stop();
  });

  it('a fast client gets the whole body and a 200 record', async () => {
    const a = await fastPost(router.url, 'fast-reader');
    expect(a.status).toBe(200);
    expect(a.length).toBe(pod.body.length);
    const r = await recordOf(router.logFile, 'fast-reader');
    expect(r.status_code).toBe(200);
    expect(r.error).toBeUndefined();
    expect(r.output_tokens).toBe(5);
    // Two on one kept-alive connection: the second is read after the first ended in full.
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    try {
      for (const id of ['kept-alive-1', 'kept-alive-2']) {
        const b = await fastPost(router.url, id, agent);
        expect(b.status).toBe(200);
        expect(b.length).toBe(pod.body.length);
        expect((await recordOf(router.logFile, id)).status_code).toBe(200);
      }
    } finally {
      agent.destroy();
    }
  });

  it('a client that reads a little, stops, then leaves is recorded 499 client_closed, not 200, and only when it left', async () => {
    const c = rawClient(router.url, 'paused-reader', 64 * 1024);
    await waitFor('the first bytes of the answer', () => c.received() >= 64 * 1024);
    await sleep(1500);
    // The answer is not over: no record yet.
    expect(accessLogRecords(router.logFile).find((r) => r.request_id === 'paused-reader')).toBeUndefined();
    const got = c.received();
    expect(got).toBeLessThan(pod.body.length);
    c.socket.destroy();
    const r = await recordOf(router.logFile, 'paused-reader');
    expect(r.status_code).toBe(499);
    expect(r.error.type).toBe('client_closed');
    expect(r.error.message).toMatch(new RegExp(`the client went away before the answer ended \\(\\d+ of ${pod.body.length} bytes of the body handed to the connection\\)`));
    // The pod's usage was read as before.
    expect(r.output_tokens).toBe(5);
    expect(r.duration_total).toBeGreaterThanOrEqual(1400);
  }, 30_000);

  it('a stream whose last bytes a client does not take is recorded 499 client_closed when it leaves, not 200', async () => {
    // A client with a small receive buffer (Node cannot set one): the stream's last write, with
    // its end, is not taken at once, so the end waits for the client.
    const client = spawn('python3', ['-c', SMALL_BUFFER_CLIENT, String(router.port), 'paused-stream-reader'], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    client.stdout.setEncoding('utf8').on('data', (d: string) => { out += d; });
    const exited = new Promise((r) => client.once('exit', r));
    await waitFor('the first bytes of the stream', () => out.includes('read'));
    await sleep(1500);
    expect(accessLogRecords(router.logFile).find((r) => r.request_id === 'paused-stream-reader')).toBeUndefined();
    client.kill('SIGTERM');
    await exited;
    const r = await recordOf(router.logFile, 'paused-stream-reader');
    expect(r.status_code).toBe(499);
    expect(r.error.type).toBe('client_closed');
  }, 30_000);

  it('a client that stops reading is cut by the HTTP server\'s idle timeout and recorded 499 client_closed', async () => {
    const c = rawClient(router.url, 'stalled-reader', 64 * 1024);
    await waitFor('the first bytes of the answer', () => c.received() >= 64 * 1024);
    const t0 = Date.now();
    const r = await recordOf(router.logFile, 'stalled-reader', 30_000);
    expect(Date.now() - t0).toBeGreaterThan(5_000); // the server's 10 s idle timeout, not at once
    expect(r.status_code).toBe(499);
    expect(r.error.type).toBe('client_closed');
    c.readAll(); // a paused socket does not see its end
    await c.closed; // the router closed the connection
    expect(c.received()).toBeLessThan(pod.body.length);
  }, 45_000);

  it.sequential('a slow but steady client gets the whole body and a 200 record written after its last byte, with the slow read in its duration', async () => {
    const c = rawClient(router.url, 'slow-reader');
    const t0 = Date.now();
    // One read (at most 64 KiB) every 20 ms: a few seconds for the whole answer, of which the
    // socket buffers of the connection (a few MB on loopback) hold the last part.
    const paced = (): void => {
      c.socket.pause();
      setTimeout(() => c.socket.resume(), 20);
    };
    c.socket.on('data', paced);
    await waitFor('the first MB of the answer', () => c.received() >= 1 << 20, 60_000);
    // The router has not handed it all to the connection yet: the record waits.
    expect(accessLogRecords(router.logFile).find((r) => r.request_id === 'slow-reader')).toBeUndefined();
    const r = await recordOf(router.logFile, 'slow-reader', 60_000);
    const recordedAfterMs = Date.now() - t0;
    await waitFor('the whole answer', () => c.received() >= pod.body.length, 60_000);
    c.socket.off('data', paced);
    expect(r.status_code).toBe(200);
    expect(r.error).toBeUndefined();
    expect(r.output_tokens).toBe(5);
    // The slow read is in the record: its duration runs to the answer's last byte handed on.
    expect(r.duration_total).toBeGreaterThanOrEqual(recordedAfterMs - 250);
    expect(r.duration_total).toBeGreaterThan(500);
    expect(r.duration_response_processing).toBeGreaterThan(400);
    c.socket.destroy();
  }, 90_000);
});

describe('SIGTERM while a large whole answer is still going out', { concurrent: true }, () => {
  it('the drain waits for it up to ROUTER_DRAIN_TIMEOUT, then cuts it and records it', async () => {
    const pod = new BigPod();
    await pod.start();
    const router = await startLoggedRouter(resourcesFor([{ name: 'pod-a', port: pod.port }]), { env: { ROUTER_DRAIN_TIMEOUT: '2s' } });
    try {
      const c = rawClient(router.url, 'drain-reader', 64 * 1024);
      await waitFor('the first bytes of the answer', () => c.received() >= 64 * 1024);
      await sleep(200);
      const t0 = Date.now();
      router.child.kill('SIGTERM');
      expect(await router.exited).toBe(0);
      // It waited for the answer (the drain timeout), not for the HTTP server's idle timeout.
      expect(Date.now() - t0).toBeGreaterThanOrEqual(1_800);
      expect(Date.now() - t0).toBeLessThan(9_000);
      const r = accessLogRecords(router.logFile).find((x) => x.request_id === 'drain-reader');
      expect(r).toBeDefined();
      expect(r.status_code).toBe(200);
      expect(r.error.type).toBe('upstream_error');
      expect(r.error.message).toMatch(/ROUTER_DRAIN_TIMEOUT \(2000 ms\) passed while the answer was still going out to the client \(\d+ of \d+ bytes/);
      c.socket.destroy();
    } finally {
      await router.kill('SIGKILL');
      await pod.stop();
    }
  }, 60_000);

  it('an answer the client reads slowly to its end within ROUTER_DRAIN_TIMEOUT is waited for, recorded 200 once, and its tail still in the socket buffers at the exit reaches the client', async () => {
    const pod = new BigPod();
    await pod.start();
    const router = await startLoggedRouter(resourcesFor([{ name: 'pod-a', port: pod.port }]), { env: { ROUTER_DRAIN_TIMEOUT: '30s' } });
    try {
      const c = rawClient(router.url, 'drain-slow-reader');
      const paced = (): void => {
        c.socket.pause();
        setTimeout(() => c.socket.resume(), 20);
      };
      c.socket.on('data', paced);
      await waitFor('the first MB of the answer', () => c.received() >= 1 << 20, 60_000);
      router.child.kill('SIGTERM');
      // The worker exits once the last byte is handed to the connection: at this pace the kernel's
      // socket buffers (a few MB on loopback) still hold the answer's tail then, and deliver it
      // after the exit (the connection ends with a FIN after the data, not a reset).
      expect(await router.exited).toBe(0);
      await waitFor('the whole answer', () => c.received() >= pod.body.length, 60_000);
      const rs = accessLogRecords(router.logFile).filter((x) => x.request_id === 'drain-slow-reader');
      expect(rs).toHaveLength(1);
      expect(rs[0].status_code).toBe(200);
      expect(rs[0].error).toBeUndefined();
      await c.closed; // the connection ends after the tail
      c.socket.destroy();
    } finally {
      await router.kill('SIGKILL');
      await pod.stop();
    }
  }, 90_000);
});

describe('tracing on: the span of a large answer the client leaves', { concurrent: true }, () => {
  it('ends with the record, so it says 499 client_closed as the record does, not the 200 handed to the connection', async () => {
    const pod = new BigPod();
    await pod.start();
    const collector = await startOtlpCollector();
    const router = await startLoggedRouter(resourcesFor([{ name: 'pod-a', port: pod.port }]), {
      env: { ACCESS_LOG_FLUSH_INTERVAL: '0', OTEL_TRACES_EXPORTER: 'otlp', OTEL_EXPORTER_OTLP_ENDPOINT: collector.url, OTEL_BSP_SCHEDULE_DELAY: '50' },
    });
    try {
      const c = rawClient(router.url, 'traced-paused-reader', 64 * 1024);
      await waitFor('the first bytes of the answer', () => c.received() >= 64 * 1024);
      await sleep(1000);
      c.socket.destroy();
      const r = await recordOf(router.logFile, 'traced-paused-reader');
      expect(r.status_code).toBe(499);
      const span = await waitFor('the span', () => collector.spans.find((s) => String(s.attrs['http.request.header.x-request-id']) === 'traced-paused-reader'));
      expect(span.attrs['http.response.status_code']).toBe(499);
      expect(span.attrs['error.type']).toBe('client_closed');
      // It ended when the client left, not when the answer was handed to the connection.
      expect(Number(BigInt(span.endTimeUnixNano) - BigInt(span.startTimeUnixNano)) / 1e6).toBeGreaterThanOrEqual(900);
    } finally {
      await router.kill('SIGKILL');
      await pod.stop();
      await collector.close();
    }
  }, 60_000);
});
