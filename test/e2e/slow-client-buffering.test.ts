import { createServer, connect, type Server, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listenLocal, resourcesFor, startRouter, waitFor, type Router } from '../helpers/processes.js';

/**
 * A pod that writes a large answer as fast as its socket takes it, and a client that takes it
 * steadily but slower: what the router holds for that client (the pod's bytes it read and the
 * client has not) must stay bounded, whatever the size of the answer. Measured in bytes: how far
 * the pod got beyond what the client read, which besides the router's own buffering is only the
 * kernel's socket buffers of the two connections.
 */

/** The answer's size: many times any bound on what the router may hold. */
const ANSWER = 128 * 1024 * 1024;
const PIECE = 64 * 1024;
const CRLF = Buffer.from('\r\n');
/** The client reads at most 64 KiB this often: a few MB/s, well below what the pod writes. */
const READ_EVERY_MS = 20;
/**
 * What may lie between the pod's writes and the client's reads: the socket buffers of the two
 * loopback connections (each side's send and receive buffers, autotuned up to a few MB) and what
 * the router holds for the client (a few hundred KB).
 */
const ALLOWED_GAP = 16 * 1024 * 1024;
/** The gap may not grow by more than this from a sixth of the answer read to near its end. */
const ALLOWED_GROWTH = 3 * 1024 * 1024;

const CHAT = JSON.stringify({ model: 'sf-model', stream: true, messages: [{ role: 'user', content: 'hi' }] });

/** One SSE event of 1 KB of text: what an inference pod streams, in bulk. */
const EVENT = Buffer.from(`data: ${JSON.stringify({ choices: [{ index: 0, delta: { content: 'a'.repeat(1000) } }] })}\n\n`);

/**
 * Answers every request with ANSWER bytes: a plain body with its content-length (more than the
 * router keeps whole, so it passes through), or an SSE stream (`x-scenario: stream`, chunked).
 * `written(sse)` is how many bytes of the last answer of that kind the kernel took from it so far
 * (the two kinds' tests run side by side).
 */
class FastPod {
  server!: Server;
  port = 0;
  private readonly answers = new Map<boolean, { socket: Socket; handed: number }>();

  written(sse: boolean): number {
    const a = this.answers.get(sse);
    return a === undefined ? 0 : a.handed - a.socket.writableLength;
  }

  async start(): Promise<void> {
    this.server = createServer((s) => {
      let head = '';
      s.on('data', (d: Buffer) => {
        if (head.includes('\r\n\r\n')) return;
        head += d.toString('latin1');
        if (!head.includes('\r\n\r\n')) return;
        this.answer(s, /x-scenario: stream/i.test(head));
      });
      s.on('error', () => undefined);
    });
    this.port = await listenLocal(this.server);
  }

  private answer(s: Socket, sse: boolean): void {
    const answer = { socket: s, handed: 0 };
    this.answers.set(sse, answer);
    const piece = sse ? Buffer.concat(Array.from({ length: Math.floor(PIECE / EVENT.length) }, () => EVENT)) : Buffer.alloc(PIECE, 'a');
    const headLine = sse
      ? 'HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n'
      : `HTTP/1.1 200 OK\r\ncontent-type: application/octet-stream\r\ncontent-length: ${ANSWER}\r\n\r\n`;
    s.write(headLine);
    let sent = 0;
    const more = (): void => {
      while (sent < ANSWER && !s.destroyed) {
        const n = Math.min(piece.length, ANSWER - sent);
        const body = n === piece.length ? piece : piece.subarray(0, n);
        sent += n;
        answer.handed += n;
        const ok = sse ? s.write(Buffer.concat([Buffer.from(`${n.toString(16)}\r\n`), body, CRLF])) : s.write(body);
        if (!ok) {
          s.once('drain', more);
          return;
        }
      }
      if (sse && !s.destroyed) s.write('0\r\n\r\n');
    };
    more();
  }

  async stop(): Promise<void> {
    for (const a of this.answers.values()) a.socket.destroy();
    await new Promise<void>((r) => this.server.close(() => r()));
  }
}

/**
 * A client that reads the answer steadily, slower than the pod writes: at most one read of the
 * socket each `everyMs`. `read()` counts the bytes read (head and framing included).
 */
function pacedClient(port: number, sse: boolean, everyMs: number): { read: () => number; socket: Socket } {
  const socket = connect(port, '127.0.0.1');
  let read = 0;
  socket.on('data', (d: Buffer) => {
    read += d.length;
    socket.pause();
    setTimeout(() => socket.resume(), everyMs);
  });
  socket.on('error', () => undefined);
  socket.write(`POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n${sse ? 'x-scenario: stream\r\n' : ''}`
    + `content-length: ${Buffer.byteLength(CHAT)}\r\n\r\n${CHAT}`);
  return { read: () => read, socket };
}

// The plain body's and the stream's tests side by side, each on its own connections: most of their
// time is the client's paced reads.
describe('a client that reads a large answer slower than the pod writes it', { concurrent: true }, () => {
  const pod = new FastPod();
  let router: Router;

  beforeAll(async () => {
    await pod.start();
    router = await startRouter(resourcesFor([{ name: 'pod-a', port: pod.port }]), { workers: 1 });
  }, 90_000);
  afterAll(async () => {
    await router?.kill('SIGKILL');
    await pod.stop();
  });

  for (const sse of [false, true]) {
    it(`holds a bounded amount for it (${sse ? 'SSE stream' : 'plain body'})`, async () => {
      const c = pacedClient(router.port, sse, READ_EVERY_MS);
      const gaps: number[] = [];
      const gapAt = async (bytes: number): Promise<number> => {
        await waitFor(`${bytes} bytes read`, () => c.read() >= bytes, 120_000, 5);
        const gap = pod.written(sse) - c.read();
        gaps.push(gap);
        console.log(`${sse ? 'sse' : 'plain'}: ${(c.read() / 2 ** 20).toFixed(0)} MB read, gap ${(gap / 2 ** 20).toFixed(1)} MB`);
        return gap;
      };
      try {
        // From a sixth of the answer read to the point where a bounded gap still leaves the pod
        // more to write: the gap's growth over that stretch is what the router kept.
        const early = await gapAt(Math.floor(ANSWER / 6));
        await gapAt(Math.floor(ANSWER / 3));
        const late = await gapAt(ANSWER - ALLOWED_GAP - 24 * 1024 * 1024);
        for (const g of gaps) expect(g).toBeLessThan(ALLOWED_GAP);
        expect(late - early).toBeLessThan(ALLOWED_GROWTH);
      } finally {
        c.socket.destroy();
      }
    }, 300_000);
  }
});
