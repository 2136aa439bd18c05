import { spawn } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listenLocal, resourcesFor, startRouter, waitFor } from '../helpers/processes.js';
import { SMALL_BUFFER_STREAM_REQUEST } from '../helpers/small-buffer-client.js';

/**
 * An answer that has ended, but that its client has not taken yet: the worker's drain leaves the
 * connections open (and the process running) until the kernel has sent every byte of them, up to
 * ROUTER_DRAIN_TIMEOUT, since uWS may hold the last bytes in a buffer of its own that the close or
 * the exit would drop.
 */

/** A pod that answers a ~100 KB stream at once, its end included. */
class WholeStreamPod {
  server!: Server;
  port = 0;
  readonly body = `data: ${JSON.stringify({ choices: [{ index: 0, delta: { content: 'c'.repeat(100_000) } }] })}\n\ndata: [DONE]\n\n`;

  async start(): Promise<void> {
    this.server = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
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

/**
 * A client with a 4 KiB receive buffer that reads the first 200 bytes, prints `started`, reads
 * nothing for argv[2] seconds, prints `reading`, then reads to the connection's end and prints
 * whether the answer ended with the stream's last event and its last chunk.
 */
const STALLING_CLIENT = `${SMALL_BUFFER_STREAM_REQUEST}
parts = [s.recv(200)]
print('started', flush=True)
time.sleep(float(sys.argv[2]))
print('reading', flush=True)
while True:
    d = s.recv(65536)
    if not d:
        break
    parts.append(d)
whole = b''.join(parts)
print('ended', whole.endswith(b'data: [DONE]\\n\\n\\r\\n0\\r\\n\\r\\n'), flush=True)
`;

/** ROUTER_TEST_NODE24 (as in newer-node.test.ts) runs the router on that Node, with the uWS 20.57 build. */
const NODE = process.env.ROUTER_TEST_NODE24;

describe('the drain with an ended answer its client has not taken yet, real processes', () => {
  const pod = new WholeStreamPod();
  beforeAll(async () => {
    await pod.start();
  });
  afterAll(async () => {
    await pod.stop();
  });

  async function drainWithStalledClient(drainTimeout: string, stallSeconds: number) {
    const env = { ROUTER_DRAIN_DELAY: '0', ROUTER_DRAIN_TIMEOUT: drainTimeout };
    const router = await startRouter(resourcesFor([{ name: 'pod-a', port: pod.port }]), { workers: 1, env, ...(NODE ? { node: NODE } : {}) });
    try {
      const client = spawn('python3', ['-c', STALLING_CLIENT, String(router.port), String(stallSeconds)], { stdio: ['ignore', 'pipe', 'inherit'] });
      let out = '';
      let routerRunningAtRead: boolean | null = null;
      client.stdout!.setEncoding('utf8').on('data', (d: string) => {
        out += d;
        if (routerRunningAtRead === null && out.includes('reading')) routerRunningAtRead = router.child.exitCode === null;
      });
      const exited = new Promise<void>((r) => client.once('exit', () => r()));
      await waitFor('the answer\'s first bytes', () => out.includes('started'), 10_000);
      router.child.kill('SIGTERM');
      await exited;
      return { out, routerRunningAtRead, code: await router.exited, output: router.output() };
    } finally {
      await router.kill();
    }
  }

  it('waits for a client that reads again within ROUTER_DRAIN_TIMEOUT: it gets the whole answer, then the router exits', async () => {
    const r = await drainWithStalledClient('120s', 2);
    expect(r.routerRunningAtRead).toBe(true);
    expect(r.out).toContain('ended True');
    expect(r.code).toBe(0);
    expect(r.output).not.toMatch(/not yet taken by their clients/);
  }, 150_000);

  it('closes at ROUTER_DRAIN_TIMEOUT for a client that does not read by then, saying how many bytes it had not taken', async () => {
    const r = await drainWithStalledClient('1s', 6);
    expect(r.code).toBe(0);
    const line = /warn \[worker \d+\] drain: closing client connections with (\d+) bytes of answers not yet taken by their clients: ROUTER_DRAIN_TIMEOUT \(1000 ms\) passed/.exec(r.output);
    expect(line, r.output).not.toBeNull();
    expect(Number(line![1])).toBeGreaterThan(0);
  }, 150_000);
});
