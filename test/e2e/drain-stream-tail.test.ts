import { spawn } from 'node:child_process';
import { createServer, type Server, type ServerResponse } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listenLocal, resourcesFor, startRouter, waitFor } from '../helpers/processes.js';
import { SMALL_BUFFER_STREAM_REQUEST } from '../helpers/small-buffer-client.js';

/**
 * A stream to a client that reads slower than the pod sends: uWS keeps what the connection's
 * socket does not take in a buffer of its own, which it writes out as the client reads, also after
 * the stream's end, and which nothing reports on. The drain must not close the connection (or
 * exit) while the stream's last bytes are still in that buffer.
 */

/**
 * A pod whose stream sends one event, then its several-MB rest in one write: `late: 'bulk'` a
 * moment (300 ms) later, with the stream's end; `late: 'end'` at once, the end only when the test
 * calls `end()`. Ended once the router has long read the rest, the stream's end reaches the router
 * alone (no bytes with it) while the client is still far behind.
 */
class SlowStreamPod {
  server!: Server;
  port = 0;
  readonly first = `data: ${JSON.stringify({ choices: [{ index: 0, delta: { content: 'start' } }] })}\n\n`;
  readonly rest: Buffer;
  private readonly open: ServerResponse[] = [];
  constructor(bytes: number, private readonly late: 'bulk' | 'end') {
    const event = `data: ${JSON.stringify({ choices: [{ index: 0, delta: { content: 'a'.repeat(1000) } }] })}\n\n`;
    this.rest = Buffer.from(event.repeat(Math.floor(bytes / event.length)) + 'data: [DONE]\n\n');
  }

  async start(): Promise<void> {
    this.server = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write(this.first);
        if (this.late === 'bulk') {
          setTimeout(() => res.end(this.rest), 300);
        } else {
          res.write(this.rest);
          this.open.push(res);
        }
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
const SLOW_CLIENT = `${SMALL_BUFFER_STREAM_REQUEST}
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

// The two tests have a router and a pod each: they run side by side (the first waits most of its
// time for its slow client).
describe('SIGTERM while a stream goes out to a slow reader, real processes', { concurrent: true }, () => {
  const pod = new SlowStreamPod(8_000_000, 'bulk');
  const lateEnd = new SlowStreamPod(2_000_000, 'end');
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
    // An end with no bytes has nothing the exchange can probe uWS's buffer with: the worker's
    // wait for the connection's queue to empty is what keeps the tail. (The build before that wait
    // passed this too in the runs made: there the end came once uWS's buffer had emptied.)
    const { out } = await drainUnderSlowClient(lateEnd.port, 4096, () => setTimeout(() => lateEnd.end(), 500));
    expect(out).toContain(`body ${lateEnd.first.length + lateEnd.rest.length} ended True done True`);
  }, 150_000);
});
