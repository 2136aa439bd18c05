import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { total } from '../helpers/metrics-text.js';
import { accessLogRecords, awayFromWindowEnd, listenLocal, resourcesFor, startLoggedRouter, waitFor, type LoggedRouter } from '../helpers/processes.js';

/**
 * A streamed answer whose client stops reading for a while: the router stops reading the pod's
 * socket (the client cannot take more) until the client reads again. The ModelServer's timeout
 * (1 s here) bounds the pod's silence between chunks, not the client's: a pod that keeps sending
 * while the router does not read it is not timed out. And whatever ends the exchange while the
 * pod's socket is not read (the client leaving, the pod's end or reset, a drain, a client that
 * never reads again) ends it as it would otherwise: recorded once, the pod's connection closed
 * unless its answer was read to its end.
 */

/** One SSE event of 1 KB of text. */
const EVENT = `data: ${JSON.stringify({ choices: [{ index: 0, delta: { content: 'a'.repeat(1000) } }] })}\n\n`;
/** What the pod writes every PIECE_EVERY_MS: far more than the client reads while it stalls. */
const PIECE = EVENT.repeat(256);
const PIECE_EVERY_MS = 50;
const DONE = `data: ${JSON.stringify({ choices: [], usage: { prompt_tokens: 3, completion_tokens: 5, total_tokens: 8 } })}\n\ndata: [DONE]\n\n`;

/**
 * A non-streaming answer larger than the router keeps whole (8 MiB): it passes through as a stream
 * does. Its time through the router, paused time aside, must stay within the 1 s timeout.
 */
const BIG_JSON = Buffer.concat([
  Buffer.from('{"id":"big","choices":[{"index":0,"message":{"role":"assistant","content":"'),
  Buffer.alloc(12 * 1024 * 1024, 'a'),
  Buffer.from('"}}],"usage":{"prompt_tokens":3,"completion_tokens":5,"total_tokens":8}}'),
]);

/** What the pod saw of one request (by its x-request-id). */
interface PodRequest { socket: Socket; closedAt: number; mostUnsent: number; pieces: number }

/**
 * Streams PIECE every PIECE_EVERY_MS whether or not its socket takes it (a generation goes on
 * whatever the reader), by `x-scenario`: `steady` 100 pieces then the end; `endless` until the
 * connection closes; `reset` 60 pieces then a TCP reset; `burst` 80 pieces at once then the end.
 */
class SteadyPod {
  server!: Server;
  port = 0;
  connections = 0;
  readonly requests = new Map<string, PodRequest>();

  async start(): Promise<void> {
    this.server = createServer((req, res) => this.answer(req, res));
    this.server.on('connection', () => this.connections++);
    this.port = await listenLocal(this.server);
  }

  private answer(req: IncomingMessage, res: ServerResponse): void {
    req.resume();
    const scenario = String(req.headers['x-scenario'] ?? 'steady');
    const socket = req.socket;
    const seen: PodRequest = { socket, closedAt: 0, mostUnsent: 0, pieces: 0 };
    this.requests.set(String(req.headers['x-request-id']), seen);
    socket.once('close', () => { seen.closedAt = Date.now(); });
    res.on('error', () => undefined);
    req.on('end', () => {
      if (scenario === 'big-json') {
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(BIG_JSON.length) });
        res.end(BIG_JSON);
        return;
      }
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      if (scenario === 'burst') {
        for (let i = 0; i < 80; i++) res.write(PIECE);
        res.end(DONE);
        return;
      }
      const t = setInterval(() => {
        if (res.destroyed || socket.destroyed) {
          clearInterval(t);
          return;
        }
        seen.mostUnsent = Math.max(seen.mostUnsent, socket.writableLength);
        if (scenario === 'reset' && seen.pieces === 60) {
          clearInterval(t);
          socket.resetAndDestroy();
          return;
        }
        res.write(PIECE);
        seen.pieces++;
        if (scenario === 'steady' && seen.pieces === 100) {
          clearInterval(t);
          res.end(DONE);
        }
      }, PIECE_EVERY_MS);
    });
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((r) => this.server.close(() => r()));
  }
}

const CHAT = JSON.stringify({ model: 'sf-model', stream: true, messages: [{ role: 'user', content: 'hi' }] });
const CHAT_WHOLE = JSON.stringify({ model: 'sf-model', messages: [{ role: 'user', content: 'hi' }] });

/**
 * A raw client that reads the first STOP_AFTER bytes, then reads no more until `readAll()`.
 * `tail()`: the last bytes it got (the chunked body's end shows there).
 */
interface StallingClient { socket: Socket; received: () => number; tail: () => string; closed: Promise<void>; readAll: () => void }
const STOP_AFTER = 64 * 1024;

function stallingClient(port: number, requestId: string, scenario: string): StallingClient {
  const socket = connect(port, '127.0.0.1');
  let received = 0;
  let reading = false;
  let tail = '';
  socket.on('data', (d: Buffer) => {
    received += d.length;
    tail = (tail + d.toString('latin1')).slice(-200);
    if (!reading && received >= STOP_AFTER) socket.pause();
  });
  socket.on('error', () => undefined);
  const closed = new Promise<void>((r) => socket.once('close', () => r()));
  const body = scenario === 'big-json' ? CHAT_WHOLE : CHAT;
  socket.write(`POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\nx-request-id: ${requestId}\r\n`
    + `x-scenario: ${scenario}\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
  return {
    socket, closed,
    received: () => received,
    tail: () => tail,
    readAll: () => {
      reading = true;
      socket.resume();
    },
  };
}

function recordOf(file: string, requestId: string, timeoutMs = 15_000): Promise<any> {
  return waitFor(`access record ${requestId}`, () => accessLogRecords(file).find((r) => r.request_id === requestId), timeoutMs);
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/**
 * The raw bytes `tail` end a chunked answer whose body ends with `last`: the last chunk, and
 * `last` in the chunks before it (the router may write an answer's last bytes as chunks of one byte).
 */
function endsWhole(tail: string, last: string): boolean {
  return tail.endsWith('\r\n0\r\n\r\n') && tail.replace(/\r\n[0-9a-f]+\r\n/g, '').endsWith(`${last}\r\n`);
}
const SSE_LAST = 'data: [DONE]\n\n';
const JSON_LAST = '"total_tokens":8}}';

/** A client of `scenario` that stops reading after its first bytes, stalls 3 s, then reads to the answer's end (`last`) or the close. */
async function stallThenRead(port: number, requestId: string, scenario: string, last: string): Promise<StallingClient> {
  const c = stallingClient(port, requestId, scenario);
  await waitFor('the first bytes of the answer', () => c.received() >= STOP_AFTER);
  await sleep(3000);
  c.readAll();
  await Promise.race([c.closed, waitFor('the end of the answer', () => endsWhole(c.tail(), last), 30_000)]);
  return c;
}

/**
 * A SteadyPod and a logged router on it (ModelServer timeout 1 s), started before the enclosing
 * describe's tests and stopped after them; `router` is set once they started.
 */
function steadyPodAndRouter(): { readonly pod: SteadyPod; router: LoggedRouter } {
  const on = { pod: new SteadyPod(), router: undefined as unknown as LoggedRouter };
  beforeAll(async () => {
    await on.pod.start();
    on.router = await startLoggedRouter(resourcesFor([{ name: 'pod-a', port: on.pod.port }], { timeout: '1s' }), { env: { ACCESS_LOG_FLUSH_INTERVAL: '0' } });
  }, 90_000);
  afterAll(async () => {
    await on.router?.kill('SIGKILL');
    await on.pod.stop();
  });
  return on;
}

// The first describe runs alone, its tests one after another: one checks that nothing stays in
// flight to its pod, and its large whole answer must pass through within the 1 s timeout while the
// client reads (with other streams of this process going at the same time it sometimes did not).
// The describes after it run side by side, each with its own pod and router; the two tests that
// wait out the HTTP server's 10 s idle timeout have a router of their own and run side by side.
describe('a stream the router stops reading because its client stalls (ModelServer timeout 1 s)', () => {
  const on = steadyPodAndRouter();
  const scrape = async (): Promise<string> => (await fetch(`${on.router.url}/metrics`)).text();

  it('is not timed out while the pod keeps sending: the client that reads again after 3 s gets the whole answer, recorded 200', async () => {
    const c = await stallThenRead(on.router.port, 'stall-3s', 'steady', SSE_LAST);
    const r = await recordOf(on.router.logFile, 'stall-3s');
    expect(r.error).toBeUndefined();
    expect(r.status_code).toBe(200);
    expect(endsWhole(c.tail(), SSE_LAST)).toBe(true);
    // The router did stop reading the pod while the client stalled: the pod's socket held what it could not send.
    expect(on.pod.requests.get('stall-3s')!.mostUnsent).toBeGreaterThan(1 << 20);
    c.socket.destroy();
  }, 60_000);

  it('a non-streaming answer too large to keep whole, which the router passes through as the client takes it: not timed out while the client stalls 3 s, recorded 200', async () => {
    const c = await stallThenRead(on.router.port, 'big-json-3s', 'big-json', JSON_LAST);
    const r = await recordOf(on.router.logFile, 'big-json-3s');
    expect(r.error).toBeUndefined();
    expect(r.status_code).toBe(200);
    expect(endsWhole(c.tail(), JSON_LAST)).toBe(true);
    c.socket.destroy();
  }, 60_000);

  it('a client that leaves while the pod\'s socket is not read is recorded 499 client_closed, with its usage; the pod\'s connection is closed, nothing stays in flight', async () => {
    const c = stallingClient(on.router.port, 'leaves-paused', 'endless');
    await waitFor('the first bytes of the stream', () => c.received() >= STOP_AFTER);
    const firstBytesAt = Date.now();
    const seen = on.pod.requests.get('leaves-paused')!;
    // The router stops reading the pod once the client stopped: what the pod sends piles up in
    // its socket (how fast depends on the machine, so waited for, not assumed after a fixed time).
    await waitFor('over 1 MiB unsent in the pod\'s socket', () => seen.mostUnsent > 1 << 20, 15_000);
    // Paused for longer than the route's 1 s timeout before the client leaves.
    await sleep(Math.max(0, 2500 - (Date.now() - firstBytesAt)));
    expect(seen.mostUnsent).toBeGreaterThan(1 << 20);
    expect(seen.closedAt).toBe(0);
    c.socket.destroy();
    const r = await recordOf(on.router.logFile, 'leaves-paused');
    expect(r.status_code).toBe(499);
    expect(r.error.type).toBe('client_closed');
    // The usage was settled: the text the router passed on was counted.
    expect(r.output_tokens).toBeGreaterThan(0);
    await waitFor('the pod\'s connection closed', () => seen.closedAt > 0, 10_000);
    await waitFor('nothing in flight to the pod', async () => total(await scrape(), 'inference_router_upstream_inflight_requests', 'pod-a') === 0, 10_000);
  }, 60_000);

  it('a pod that ends its answer while its socket is not read: the client that reads again gets it whole, recorded 200', async () => {
    const c = stallingClient(on.router.port, 'ends-paused', 'burst');
    await waitFor('the first bytes of the stream', () => c.received() >= STOP_AFTER);
    await sleep(3000);
    const before = on.pod.connections;
    c.readAll();
    await Promise.race([c.closed, waitFor('the end of the answer', () => endsWhole(c.tail(), SSE_LAST), 30_000)]);
    expect(endsWhole(c.tail(), SSE_LAST)).toBe(true);
    const r = await recordOf(on.router.logFile, 'ends-paused');
    expect(r.status_code).toBe(200);
    expect(r.error).toBeUndefined();
    expect(on.pod.connections).toBe(before);
    c.socket.destroy();
  }, 60_000);

  it('a pod that resets its connection while its socket is not read: the client\'s answer is cut once it reads again, recorded as the pod\'s failure', async () => {
    const c = stallingClient(on.router.port, 'reset-paused', 'reset');
    await waitFor('the first bytes of the stream', () => c.received() >= STOP_AFTER);
    await waitFor('the pod\'s reset', () => (on.pod.requests.get('reset-paused')?.closedAt ?? 0) > 0, 10_000);
    // The router was not reading the pod when it reset: its socket held what it could not send.
    expect(on.pod.requests.get('reset-paused')!.mostUnsent).toBeGreaterThan(1 << 20);
    await sleep(500);
    c.readAll();
    await c.closed;
    expect(endsWhole(c.tail(), SSE_LAST)).toBe(false);
    const r = await recordOf(on.router.logFile, 'reset-paused');
    expect(r.status_code).toBe(200);
    expect(r.error.type).toBe('upstream_error');
    expect(r.error.message).toMatch(/after the response started/);
  }, 60_000);

});

describe('a stream whose client stops reading for good (ModelServer timeout 1 s)', { concurrent: true }, () => {
  const on = steadyPodAndRouter();

  it('a client that never reads again is cut by the HTTP server\'s idle timeout, recorded 499 client_closed; the pod\'s connection is closed', async () => {
    const c = stallingClient(on.router.port, 'never-again', 'endless');
    await waitFor('the first bytes of the stream', () => c.received() >= STOP_AFTER);
    const r = await recordOf(on.router.logFile, 'never-again', 40_000);
    expect(r.status_code).toBe(499);
    expect(r.error.type).toBe('client_closed');
    const seen = on.pod.requests.get('never-again')!;
    await waitFor('the pod\'s connection closed', () => seen.closedAt > 0, 10_000);
    c.readAll(); // a paused socket does not see its end
    await c.closed;
  }, 60_000);
  it('a client that read slowly for a while, then never reads again, is cut by the HTTP server\'s idle timeout too', async () => {
    // Paced reads first: the router has waited for the connection to take more (onWritable) many
    // times before the client stops for good.
    const c = stallingClient(on.router.port, 'slow-then-never', 'endless');
    await waitFor('the first bytes of the stream', () => c.received() >= STOP_AFTER);
    const paced = (): void => {
      c.socket.pause();
      if (c.received() < 8 * 1024 * 1024) setTimeout(() => c.socket.resume(), 20);
    };
    c.socket.on('data', paced);
    c.socket.resume();
    await waitFor('8 MB read', () => c.received() >= 8 * 1024 * 1024, 30_000);
    const r = await recordOf(on.router.logFile, 'slow-then-never', 40_000);
    expect(r.status_code).toBe(499);
    expect(r.error.type).toBe('client_closed');
    const seen = on.pod.requests.get('slow-then-never')!;
    await waitFor('the pod\'s connection closed', () => seen.closedAt > 0, 10_000);
    c.socket.off('data', paced);
    c.readAll();
    await c.closed;
  }, 60_000);
});

describe('SIGTERM while a stream\'s pod socket is not read because its client stalls', { concurrent: true }, () => {
  it('the drain waits up to ROUTER_DRAIN_TIMEOUT, then cuts it, records it and closes the pod\'s connection', async () => {
    const pod = new SteadyPod();
    await pod.start();
    const router = await startLoggedRouter(resourcesFor([{ name: 'pod-a', port: pod.port }], { timeout: '1s' }), { env: { ROUTER_DRAIN_TIMEOUT: '2s' } });
    try {
      const c = stallingClient(router.port, 'drain-paused', 'endless');
      await waitFor('the first bytes of the stream', () => c.received() >= STOP_AFTER);
      await sleep(1500);
      router.child.kill('SIGTERM');
      expect(await router.exited).toBe(0);
      const r = accessLogRecords(router.logFile).find((x) => x.request_id === 'drain-paused');
      expect(r).toBeDefined();
      expect(r.status_code).toBe(200);
      expect(r.error.message).toMatch(/ROUTER_DRAIN_TIMEOUT/);
      await waitFor('the pod\'s connection closed', () => pod.requests.get('drain-paused')!.closedAt > 0, 10_000);
      c.socket.destroy();
    } finally {
      await router.kill('SIGKILL');
      await pod.stop();
    }
  }, 60_000);
});

describe('a limited route: a client that leaves while its stream\'s pod socket is not read', { concurrent: true }, () => {
  it('has the output it was sent charged to the route\'s limit (the limiter\'s settle happens)', async () => {
    const pod = new SteadyPod();
    await pod.start();
    const LIMIT = 1_000_000_000;
    const router = await startLoggedRouter(resourcesFor([{ name: 'pod-a', port: pod.port }], {
      timeout: '1s', rateLimit: `    outputTokensPerUnit: ${LIMIT}\n    unit: day`,
    }), { env: { ACCESS_LOG_FLUSH_INTERVAL: '0' } });
    try {
      // A day's limit: the charge and the next request's remaining count must fall in one UTC day.
      await awayFromWindowEnd(86_400, 20);
      const c = stallingClient(router.port, 'limited-leaves', 'endless');
      await waitFor('the first bytes of the stream', () => c.received() >= STOP_AFTER);
      await sleep(2000);
      c.socket.destroy();
      const r = await recordOf(router.logFile, 'limited-leaves');
      expect(r.status_code).toBe(499);
      expect(r.output_tokens).toBeGreaterThan(0);
      await waitFor('the pod\'s connection closed', () => pod.requests.get('limited-leaves')!.closedAt > 0, 10_000);
      // The next request's headers show what is left: the output the first was sent is charged.
      const next = new AbortController();
      const res = await fetch(`${router.url}/v1/chat/completions`, {
        method: 'POST', headers: { 'content-type': 'application/json', 'x-scenario': 'steady', 'x-request-id': 'limited-next' }, body: CHAT, signal: next.signal,
      });
      expect(res.status).toBe(200);
      expect(res.headers.get('x-ratelimit-limit-output-tokens')).toBe(String(LIMIT));
      expect(Number(res.headers.get('x-ratelimit-remaining-output-tokens'))).toBeLessThanOrEqual(LIMIT - r.output_tokens);
      next.abort();
    } finally {
      await router.kill('SIGKILL');
      await pod.stop();
    }
  }, 60_000);
});
