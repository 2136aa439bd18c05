import { spawn } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listenLocal, resourcesFor, startRouter, waitFor } from '../helpers/processes.js';

/**
 * A stream to a client that reads slower than the pod sends: uWS keeps what the connection's
 * socket does not take in a buffer of its own, which it writes out as the client reads, also after
 * the stream's end, and which nothing reports on. The drain must not close the connection (or
 * exit) while the stream's last bytes are still in that buffer.
 */

/** A pod whose stream sends one event, then, a moment later, its several-MB rest in one write. */
class LateBulkPod {
  server!: Server;
  port = 0;
  readonly first = `data: ${JSON.stringify({ choices: [{ index: 0, delta: { content: 'start' } }] })}\n\n`;
  readonly rest: Buffer;
  constructor(bytes: number) {
    const event = `data: ${JSON.stringify({ choices: [{ index: 0, delta: { content: 'a'.repeat(1000) } }] })}\n\n`;
    this.rest = Buffer.from(event.repeat(Math.floor(bytes / event.length)) + 'data: [DONE]\n\n');
  }

  async start(): Promise<void> {
    this.server = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write(this.first);
        setTimeout(() => res.end(this.rest), 300);
      });
    });
    this.port = await listenLocal(this.server);
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((r) => this.server.close(() => r()));
  }
}

/**
 * A pod whose stream sends one event and its several-MB rest at once, then waits: `end()` ends
 * it. Ended once the router has long read the rest, the stream's end reaches the router alone
 * (no bytes with it) while the client is still far behind.
 */
class LateEndPod {
  server!: Server;
  port = 0;
  readonly first = `data: ${JSON.stringify({ choices: [{ index: 0, delta: { content: 'start' } }] })}\n\n`;
  readonly rest: Buffer;
  private readonly open: import('node:http').ServerResponse[] = [];
  constructor(bytes: number) {
    const event = `data: ${JSON.stringify({ choices: [{ index: 0, delta: { content: 'b'.repeat(1000) } }] })}\n\n`;
    this.rest = Buffer.from(event.repeat(Math.floor(bytes / event.length)) + 'data: [DONE]\n\n');
  }

  async start(): Promise<void> {
    this.server = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write(this.first);
        res.write(this.rest);
        this.open.push(res);
      });
    });
    this.port = await listenLocal(this.server);
  }

  end(): void {
    for (const res of this.open.splice(0)) res.end();
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((r) => this.server.close(() => r()));
  }
}

/**
 * A client with a 4 KiB receive buffer that takes up to argv[2] bytes every 10 ms: prints `started` at the
 * first event, then, at the end of the connection, the length of the chunked body it decoded,
 * whether that body ended (its last chunk), and whether it ends with the stream's last event.
 */
const SLOW_CLIENT = `
import socket, sys, time
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
s.connect(('127.0.0.1', int(sys.argv[1])))
body = b'{"model":"sf-model","prompt":"x","stream":true}'
s.sendall(b'POST /v1/completions HTTP/1.1\\r\\nhost: x\\r\\ncontent-type: application/json\\r\\ncontent-length: '
  + str(len(body)).encode() + b'\\r\\n\\r\\n' + body)
parts = []
started = False
while True:
    d = s.recv(int(sys.argv[2]))
    if not d:
        break
    parts.append(d)
    if not started and b'start' in b''.join(parts):
        started = True
        print('started', flush=True)
    time.sleep(0.01)
head, _, rest = b''.join(parts).partition(b'\\r\\n\\r\\n')
body = b''
ended = False
while True:
    line, sep, rest = rest.partition(b'\\r\\n')
    if not sep or not line:
        break
    size = int(line, 16)
    if size == 0:
        ended = rest == b'\\r\\n'
        break
    if len(rest) < size + 2:
        break
    body += rest[:size]
    rest = rest[size + 2:]
print('body', len(body), 'ended', ended, 'done', body.endswith(b'data: [DONE]\\n\\n'), flush=True)
`;

/** ROUTER_TEST_NODE24 (as in newer-node.test.ts) runs the router on that Node, with the uWS 20.57 build. */
const NODE = process.env.ROUTER_TEST_NODE24;

describe('SIGTERM while a stream goes out to a slow reader, real processes', () => {
  const pod = new LateBulkPod(8_000_000);
  const lateEnd = new LateEndPod(2_000_000);
  beforeAll(async () => {
    await pod.start();
    await lateEnd.start();
  });
  afterAll(async () => {
    await pod.stop();
    await lateEnd.stop();
  });

  /** Starts a router on `podPort`, the slow client on it (`readBytes` per 10 ms); SIGTERM at its first event, then `afterSignal`. */
  async function drainUnderSlowClient(podPort: number, readBytes: number, afterSignal: () => void): Promise<{ out: string; output: string }> {
    // The slow reader takes about 10 s for the 8 MB, several times that on a busy machine: the
    // drain's timeout (30 s by default, which would cut the stream) is far beyond it here.
    const env = { ROUTER_DRAIN_DELAY: '0', ROUTER_DRAIN_TIMEOUT: '120s' };
    const router = await startRouter(resourcesFor([{ name: 'pod-a', port: podPort }]), { workers: 1, env, ...(NODE ? { node: NODE } : {}) });
    try {
      const client = spawn('python3', ['-c', SLOW_CLIENT, String(router.port), String(readBytes)], { stdio: ['ignore', 'pipe', 'inherit'] });
      let out = '';
      client.stdout!.setEncoding('utf8').on('data', (d: string) => { out += d; });
      const exited = new Promise<void>((r) => client.once('exit', () => r()));
      await waitFor('the first event', () => out.includes('started'), 10_000);
      router.child.kill('SIGTERM');
      afterSignal();
      await exited;
      expect(await router.exited).toBe(0);
      return { out, output: router.output() };
    } finally {
      await router.kill();
    }
  }

  it('the client gets the whole stream, its last event and last chunk included, before the connection closes', async () => {
    const { out } = await drainUnderSlowClient(pod.port, 16384, () => undefined);
    expect(out).toContain(`body ${pod.first.length + pod.rest.length} ended True done True`);
  }, 150_000);

  it('also when the stream\'s end reaches the router alone, long after its bytes, with the client far behind', async () => {
    // The end comes while uWS holds up to a turn's read (256 KiB) the client has not taken: none
    // of it is tracked by the exchange, so the worker waits for the connection's queue to empty.
    const { out } = await drainUnderSlowClient(lateEnd.port, 4096, () => setTimeout(() => lateEnd.end(), 500));
    expect(out).toContain(`body ${lateEnd.first.length + lateEnd.rest.length} ended True done True`);
  }, 150_000);
});
