import { describe, expect, it } from 'vitest';
import { connect, type Server, type Socket } from 'node:net';
import { once } from 'node:events';
import {
  BODY_MEMORY_MAX_BYTES, BODY_MEMORY_MIN_BYTES, bodyMemoryStats, giveBackBodyMemory, inBodyMemorySizes, inSharedBodyMemorySizes, MAX_FREE_BYTES,
  MAX_FREE_SHARED_BYTES, SHARED_BODY_MEMORY_MAX_BYTES, sizeSharedBodyMemory, takeBodyMemory, takeSharedBodyMemory,
} from '../../src/body-memory.js';
import { requestHead, writeRequest } from '../../src/upstream/http1/request-head.js';
import { pausedServer } from '../helpers/paused-server.js';

const turnEnd = (): Promise<void> => new Promise((r) => setImmediate(r));

/** Takes every free buffer, so that the next take of a size is the last of that size given back. */
function emptyPool(): void {
  while (bodyMemoryStats().freeBytes > 0) for (let size = 8192; size <= BODY_MEMORY_MAX_BYTES; size *= 2) takeBodyMemory(size);
}

/** Waits (up to 0.5 s) until the buffers sockets held are down to `before` again, and checks they are. */
async function returned(before: number): Promise<void> {
  for (let i = 0; i < 100 && bodyMemoryStats().keptBySockets > before; i++) await new Promise((r) => setTimeout(r, 5));
  expect(bodyMemoryStats().keptBySockets).toBe(before);
}

/** Takes every free shared buffer. */
function emptySharedPool(): void {
  while (bodyMemoryStats().freeSharedBytes > 0) for (let size = 8192; size <= SHARED_BODY_MEMORY_MAX_BYTES; size *= 2) takeSharedBodyMemory(size);
}

/** A pod on loopback (pausedServer) and one connection to it: what it got, read once `read()` is called. */
async function podThatReadsLater(): Promise<{ server: Server; socket: Socket; got: Buffer[]; read: () => void }> {
  const { server, received, read } = await pausedServer();
  const socket = connect((server.address() as { port: number }).port, '127.0.0.1');
  await once(socket, 'connect');
  while (received.length === 0) await turnEnd();
  return { server, socket, got: received[0], read };
}

async function received(got: Buffer[], size: number): Promise<string> {
  for (let waited = 0; got.reduce((n, d) => n + d.length, 0) < size && waited < 1000; waited++) await new Promise((r) => setTimeout(r, 5));
  return Buffer.concat(got).toString('latin1');
}

/**
 * Writes bodies of `size` in pool memory (given back at once) until the socket holds bytes it has
 * not sent; the last memory, every memory used, and what was sent.
 */
async function fillSocket(socket: Socket, size: number): Promise<{ memory: Buffer; used: Set<Buffer>; sent: string[] }> {
  const sent: string[] = [];
  const used = new Set<Buffer>();
  let memory: Buffer | null = null;
  for (let i = 0; i < 200 && socket.writableLength === 0; i++) {
    memory = size <= BODY_MEMORY_MAX_BYTES ? takeBodyMemory(size) : takeSharedBodyMemory(size);
    used.add(memory);
    const body = memory.subarray(0, size).fill(97 + (i % 26));
    const head = requestHead('POST', `/r${i}`, 'pod:80', [], body);
    writeRequest(socket, head, body);
    sent.push(head + body.toString('latin1'));
    giveBackBodyMemory(memory);
    await turnEnd();
  }
  expect(socket.writableLength).toBeGreaterThan(0);
  return { memory: memory!, used, sent };
}

describe('body memory: sizes', () => {
  it('takes bodies from 4 KiB (below, Node\'s own pool) to 256 KiB, each into the smallest power of two from 8 KiB that holds it', () => {
    expect(BODY_MEMORY_MIN_BYTES).toBe(4096);
    expect(BODY_MEMORY_MAX_BYTES).toBe(256 * 1024);
    expect([4095, 4096, 262144, 262145].map(inBodyMemorySizes)).toEqual([false, true, true, false]);
    const sizes = [4096, 8192, 8193, 16384, 16385, 40000, 65536, 65537, 200000, 262144];
    expect(sizes.map((n) => takeBodyMemory(n).length)).toEqual([8192, 8192, 16384, 16384, 32768, 65536, 65536, 131072, 262144, 262144]);
  });
});

describe('shared body memory', () => {
  it('takes bodies up to 16 MiB into the smallest power of two from 8 KiB that holds it, in SharedArrayBuffers', () => {
    expect(SHARED_BODY_MEMORY_MAX_BYTES).toBe(16 * 1024 * 1024);
    expect([1, SHARED_BODY_MEMORY_MAX_BYTES, SHARED_BODY_MEMORY_MAX_BYTES + 1].map(inSharedBodyMemorySizes)).toEqual([true, true, false]);
    const sizes = [1, 8192, 8193, 262145, 300_000, 8_000_000, SHARED_BODY_MEMORY_MAX_BYTES];
    const taken = sizes.map((n) => takeSharedBodyMemory(n));
    expect(taken.map((m) => m.length)).toEqual([8192, 8192, 16384, 524288, 524288, 8 << 20, 16 << 20]);
    for (const m of taken) expect(m.buffer).toBeInstanceOf(SharedArrayBuffer);
  });

  it(`is kept apart from the ordinary memory, at most ${MAX_FREE_SHARED_BYTES} bytes free`, async () => {
    await turnEnd();
    emptySharedPool();
    const shared = takeSharedBodyMemory(6000);
    giveBackBodyMemory(shared);
    await turnEnd();
    expect(bodyMemoryStats().freeSharedBytes).toBe(8192);
    expect(takeBodyMemory(6000)).not.toBe(shared);
    expect(takeSharedBodyMemory(6000)).toBe(shared);
    const large = [takeSharedBodyMemory(8_000_000), takeSharedBodyMemory(8_000_000), takeSharedBodyMemory(8_000_000)];
    for (const m of large) giveBackBodyMemory(m);
    await turnEnd();
    expect(bodyMemoryStats().freeSharedBytes).toBe(MAX_FREE_SHARED_BYTES);
    expect(takeSharedBodyMemory(5_000_000)).toBe(large[1]);
    expect(takeSharedBodyMemory(5_000_000)).toBe(large[0]);
  });
});

describe('shared body memory for a higher ROUTER_MAX_BODY_BYTES', () => {
  it('takes bodies up to the power of two that holds the largest, and keeps as much free', async () => {
    try {
      sizeSharedBodyMemory(40 * 1024 * 1024);
      expect([40 << 20, 64 << 20, (64 << 20) + 1].map(inSharedBodyMemorySizes)).toEqual([true, true, false]);
      expect(bodyMemoryStats().maxFreeSharedBytes).toBe(64 << 20);
      await turnEnd();
      const body = takeSharedBodyMemory(30_000_000);
      expect(body.length).toBe(32 << 20);
      expect(body.buffer).toBeInstanceOf(SharedArrayBuffer);
      giveBackBodyMemory(body);
      await turnEnd();
      expect(bodyMemoryStats().freeSharedBytes).toBeGreaterThanOrEqual(32 << 20);
      expect(takeSharedBodyMemory(20_000_000)).toBe(body);
      // At or below 16 MiB: the default sizes. 1 GiB, the setting's bound, is the largest.
      sizeSharedBodyMemory(1000);
      expect([SHARED_BODY_MEMORY_MAX_BYTES, SHARED_BODY_MEMORY_MAX_BYTES + 1].map(inSharedBodyMemorySizes)).toEqual([true, false]);
      expect(bodyMemoryStats().maxFreeSharedBytes).toBe(MAX_FREE_SHARED_BYTES);
      sizeSharedBodyMemory(1024 ** 3);
      expect([1024 ** 3, 1024 ** 3 + 1].map(inSharedBodyMemorySizes)).toEqual([true, false]);
    } finally {
      sizeSharedBodyMemory(SHARED_BODY_MEMORY_MAX_BYTES);
    }
    expect(bodyMemoryStats().maxFreeSharedBytes).toBe(MAX_FREE_SHARED_BYTES);
  });
});

describe('body memory given back', () => {
  it('is free at the end of the turn, not during it, for a body of its size', async () => {
    await turnEnd();
    emptyPool();
    const a = takeBodyMemory(6000);
    const b = takeBodyMemory(40000);
    giveBackBodyMemory(a);
    giveBackBodyMemory(b);
    expect(takeBodyMemory(6000)).not.toBe(a);
    await turnEnd();
    expect(takeBodyMemory(40000)).toBe(b);
    expect(takeBodyMemory(6000)).toBe(a);
  });

  it(`keeps at most ${MAX_FREE_BYTES} bytes free`, async () => {
    await turnEnd();
    const many = Array.from({ length: (2 * MAX_FREE_BYTES) / BODY_MEMORY_MAX_BYTES }, () => takeBodyMemory(BODY_MEMORY_MAX_BYTES));
    for (const m of many) giveBackBodyMemory(m);
    await turnEnd();
    const free = bodyMemoryStats().freeBytes;
    expect(free).toBeLessThanOrEqual(MAX_FREE_BYTES);
    expect(free).toBeGreaterThan(MAX_FREE_BYTES - BODY_MEMORY_MAX_BYTES);
  });

  it('a request queued for the end of the turn is sent with its own bytes though its memory was given back and taken again in that turn', async () => {
    const pod = await podThatReadsLater();
    try {
      pod.read();
      await turnEnd();
      emptyPool();
      const memory = takeBodyMemory(7000);
      const body = memory.subarray(0, 7000).fill('a');
      const head = requestHead('POST', '/v1/chat/completions', 'pod:80', [], body);
      writeRequest(pod.socket, head, body);
      // The request ends in the same turn (its client left, say); the next request's body comes.
      giveBackBodyMemory(memory);
      takeBodyMemory(7000).fill('b');
      expect(await received(pod.got, head.length + 7000)).toBe(head + 'a'.repeat(7000));
    } finally {
      pod.socket.destroy();
      pod.server.close();
    }
  });

  it('memory a socket has not sent whole stays the socket\'s, its bytes going out as they were; it is free again once the socket has sent it all, ordinary and shared', async () => {
    for (const size of [200_000, 3_000_000]) {
      const take = size <= BODY_MEMORY_MAX_BYTES ? takeBodyMemory : takeSharedBodyMemory;
      const pod = await podThatReadsLater();
      try {
        await turnEnd();
        emptyPool();
        emptySharedPool();
        const before = bodyMemoryStats().keptBySockets;
        // The peer does not read: the kernel's buffers fill, and it stops taking the writes whole.
        const { memory, used, sent } = await fillSocket(pod.socket, size);
        expect(bodyMemoryStats().keptBySockets).toBeGreaterThan(before);
        // Its memory was given back, but the socket holds it: a body of the same size gets other memory.
        const next = take(size);
        expect(next).not.toBe(memory);
        next.fill('!');
        pod.read();
        const all = sent.join('');
        expect(await received(pod.got, all.length)).toBe(all);
        await returned(before);
        // Free again, as much of it as the pool keeps: the next body of its size gets one of them.
        expect(bodyMemoryStats()[size <= BODY_MEMORY_MAX_BYTES ? 'freeBytes' : 'freeSharedBytes']).toBeGreaterThan(0);
        expect(used.has(take(size))).toBe(true);
      } finally {
        pod.socket.destroy();
        pod.server.close();
      }
    }
  });

  it('memory a socket held is free again once the socket is destroyed before it sent it', async () => {
    const pod = await podThatReadsLater();
    try {
      await turnEnd();
      emptyPool();
      const before = bodyMemoryStats().keptBySockets;
      const { memory, used } = await fillSocket(pod.socket, 200_000);
      expect(bodyMemoryStats().keptBySockets).toBeGreaterThan(before);
      expect(bodyMemoryStats().freeBytes).toBe(0);
      expect(takeBodyMemory(200_000)).not.toBe(memory);
      pod.socket.destroy();
      await returned(before);
      expect(used.has(takeBodyMemory(200_000))).toBe(true);
    } finally {
      pod.server.close();
    }
  });
});
