import { describe, expect, it } from 'vitest';
import { createServer, connect, type Socket } from 'node:net';
import { once } from 'node:events';
import {
  bodyBufferFor, bodyMemoryStats, giveBackBodyMemory, MAX_FREE_BYTES, pooledSize, POOLED_MAX_BYTES, POOLED_MIN_BYTES, releaseBody, takeBodyMemory,
} from '../../../src/http/body-pool.js';
import type { Exchange } from '../../../src/http/exchange.js';
import { requestHead, writeRequest } from '../../../src/upstream/http1/request-head.js';

const turnEnd = (): Promise<void> => new Promise((r) => setImmediate(r));

/** The two fields of an exchange the pool reads and writes. */
function exchange(): Exchange {
  return { body: Buffer.alloc(0), pooledBody: null } as unknown as Exchange;
}

/** Takes every free buffer of both sizes, so that the next take of a size is the last given back. */
function emptyPool(): void {
  while (bodyMemoryStats().freeBytes > 0) {
    takeBodyMemory(POOLED_MIN_BYTES);
    takeBodyMemory(POOLED_MAX_BYTES);
  }
}

describe('body pool: sizes', () => {
  it('takes bodies from 4 KiB (below, Node\'s own pool) to the HTTP/1.1 client\'s copy limit, 16 KiB', () => {
    expect(POOLED_MIN_BYTES).toBe(4096);
    expect(POOLED_MAX_BYTES).toBe(16 * 1024);
    expect([4095, 4096, 16384, 16385].map(pooledSize)).toEqual([false, true, true, false]);
    expect(takeBodyMemory(4096).length).toBe(8192);
    expect(takeBodyMemory(8192).length).toBe(8192);
    expect(takeBodyMemory(8193).length).toBe(16384);
    expect(takeBodyMemory(16384).length).toBe(16384);
  });

  it('bodyBufferFor: a body in the pool\'s sizes lies at the start of the pool\'s memory, which the exchange holds', () => {
    const x = exchange();
    const b = bodyBufferFor(x, 6000, 0);
    expect(b.length).toBe(6000);
    expect(x.pooledBody).not.toBeNull();
    expect(x.pooledBody!.length).toBe(8192);
    expect(b.buffer).toBe(x.pooledBody!.buffer);
    expect(b.byteOffset).toBe(x.pooledBody!.byteOffset);
  });

  it('bodyBufferFor: a body outside its sizes, or one a tokenizer thread parses (shared memory), gets memory of its own', () => {
    for (const [size, sharedMin] of [[4095, 0], [16385, 0], [6000, 4096]] as const) {
      const x = exchange();
      const b = bodyBufferFor(x, size, sharedMin);
      expect(b.length).toBe(size);
      expect(x.pooledBody).toBeNull();
    }
    expect(bodyBufferFor(exchange(), 6000, 4096).buffer).toBeInstanceOf(SharedArrayBuffer);
  });
});

describe('body pool: memory given back', () => {
  it('is free at the end of the turn, not during it', async () => {
    await turnEnd();
    emptyPool();
    const a = takeBodyMemory(6000);
    giveBackBodyMemory(a);
    expect(takeBodyMemory(6000)).not.toBe(a);
    await turnEnd();
    expect(takeBodyMemory(6000)).toBe(a);
  });

  it('releaseBody gives the memory back once and leaves the exchange an empty body', async () => {
    await turnEnd();
    const x = exchange();
    x.body = bodyBufferFor(x, 5000, 0);
    const before = bodyMemoryStats().pending;
    releaseBody(x);
    releaseBody(x);
    expect(bodyMemoryStats().pending).toBe(before + 1);
    expect(x.body.length).toBe(0);
    expect(x.pooledBody).toBeNull();
    await turnEnd();
    expect(bodyMemoryStats().pending).toBe(0);
  });

  it(`keeps at most ${MAX_FREE_BYTES} bytes free`, async () => {
    await turnEnd();
    const many = Array.from({ length: (2 * MAX_FREE_BYTES) / POOLED_MAX_BYTES }, () => takeBodyMemory(POOLED_MAX_BYTES));
    for (const m of many) giveBackBodyMemory(m);
    await turnEnd();
    const free = bodyMemoryStats().freeBytes;
    expect(free).toBeLessThanOrEqual(MAX_FREE_BYTES);
    expect(free).toBeGreaterThan(MAX_FREE_BYTES - POOLED_MAX_BYTES);
  });

  it('a request queued for the end of the turn is written with its own bytes though its body was given back and the memory taken again in that turn', async () => {
    const got: Buffer[] = [];
    const server = createServer((s) => s.on('data', (d: Buffer) => got.push(d)));
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const socket: Socket = connect((server.address() as { port: number }).port, '127.0.0.1');
    await once(socket, 'connect');
    try {
      await turnEnd();
      emptyPool();
      const x = exchange();
      const body = bodyBufferFor(x, 7000, 0);
      body.fill('a');
      x.body = body;
      const head = requestHead('POST', '/v1/chat/completions', 'pod:80', [], body);
      writeRequest(socket, head, body);
      // The request ends in the same turn (its client left, say); the next request's body comes.
      releaseBody(x);
      const next = exchange();
      bodyBufferFor(next, 7000, 0).fill('b');
      const size = Buffer.byteLength(head) + 7000;
      while (got.reduce((n, d) => n + d.length, 0) < size) await new Promise((r) => setTimeout(r, 5));
      const sent = Buffer.concat(got).toString('latin1');
      expect(sent).toBe(head + 'a'.repeat(7000));
    } finally {
      socket.destroy();
      server.close();
    }
  });
});
