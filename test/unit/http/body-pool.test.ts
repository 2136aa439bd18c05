import { describe, expect, it } from 'vitest';
import { appendChunkedPiece, bodyBufferFor, chunkedBody, releaseBody } from '../../../src/http/body-pool.js';
import { bodyMemoryStats, SHARED_BODY_MEMORY_MAX_BYTES } from '../../../src/body-memory.js';
import type { Exchange } from '../../../src/http/exchange.js';

const turnEnd = (): Promise<void> => new Promise((r) => setImmediate(r));

/** The two fields of an exchange the pool reads and writes. */
function exchange(): Exchange {
  return { body: Buffer.alloc(0), pooledBody: null } as unknown as Exchange;
}

describe('a request body in memory used again', () => {
  it('lies at the start of the pool\'s memory, which the exchange holds', () => {
    const x = exchange();
    const b = bodyBufferFor(x, 6000, 0);
    expect(b.length).toBe(6000);
    expect(x.pooledBody!.length).toBe(8192);
    expect(b.buffer).toBe(x.pooledBody!.buffer);
    expect(b.byteOffset).toBe(x.pooledBody!.byteOffset);
  });

  it('is not used for a body outside the pool\'s sizes', () => {
    for (const [size, sharedMin] of [[4095, 0], [SHARED_BODY_MEMORY_MAX_BYTES + 1, 0], [SHARED_BODY_MEMORY_MAX_BYTES + 1, 4096]] as const) {
      const x = exchange();
      expect(bodyBufferFor(x, size, sharedMin).length).toBe(size);
      expect(x.pooledBody).toBeNull();
    }
    expect(bodyBufferFor(exchange(), SHARED_BODY_MEMORY_MAX_BYTES + 1, 4096).buffer).toBeInstanceOf(SharedArrayBuffer);
  });

  it('lies in the pool\'s shared memory for a body a tokenizer thread parses (from `sharedMin` on) or one over 256 KiB, up to 16 MiB', () => {
    for (const [size, sharedMin, whole] of [[6000, 4096, 8192], [100_000, 65536, 131072], [262145, 0, 524288], [8_000_000, 0, 8 << 20], [300_000, 262144, 524288], [8_000_000, 262144, 8 << 20], [SHARED_BODY_MEMORY_MAX_BYTES, 262144, 16 << 20]] as const) {
      const x = exchange();
      const b = bodyBufferFor(x, size, sharedMin);
      expect(b.length).toBe(size);
      expect(b.buffer).toBeInstanceOf(SharedArrayBuffer);
      expect(x.pooledBody!.length).toBe(whole);
      expect(b.buffer).toBe(x.pooledBody!.buffer);
    }
  });

  it('a shared body given back is taken again for the next body of its size, not for an ordinary one', async () => {
    await turnEnd();
    const x = exchange();
    x.body = bodyBufferFor(x, 300_000, 262144);
    const memory = x.pooledBody!;
    const freeBefore = bodyMemoryStats().freeSharedBytes;
    releaseBody(x);
    await turnEnd();
    expect(bodyMemoryStats().freeSharedBytes).toBe(freeBefore + memory.length);
    const ordinary = exchange();
    bodyBufferFor(ordinary, 8000, 0);
    expect(ordinary.pooledBody!.buffer).not.toBeInstanceOf(SharedArrayBuffer);
    const next = exchange();
    next.body = bodyBufferFor(next, 400_000, 262144);
    expect(next.pooledBody).toBe(memory);
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
});

describe('a chunked body in memory used again', () => {
  /** `text` sent in pieces of the sizes `sizes` says, in turn; the body the front makes of them and the exchange. */
  function arrive(text: Buffer, sizes: readonly number[], sharedMin = 0): { body: Buffer; x: Exchange; chunks: Buffer[] } {
    const x = exchange();
    const chunks: Buffer[] = [];
    let size = 0;
    for (let k = 0; size < text.length; k++) {
      const n = Math.min(sizes[k % sizes.length], text.length - size);
      appendChunkedPiece(x, chunks, new Uint8Array(text.subarray(size, size + n)), size);
      size += n;
    }
    return { body: chunkedBody(x, chunks, size, sharedMin), x, chunks };
  }
  const text = (n: number): Buffer => Buffer.from(Array.from({ length: n }, (_, i) => String.fromCharCode(97 + ((i * 7) % 26))).join(''));

  it('is read into the pool\'s memory, grown as it goes on, whatever the pieces\' sizes', () => {
    for (const n of [1, 100, 5000, 9000, 70_000, 262_144]) {
      for (const sizes of [[n], [1], [1000, 3, 17_000], [4096]]) {
        if (n > 20_000 && sizes[0] === 1) continue; // a byte at a time: too slow to be worth it here
        const t = text(n);
        const { body, x, chunks } = arrive(t, sizes);
        expect(body.equals(t), `${n} in ${sizes.join(',')}`).toBe(true);
        expect(chunks).toHaveLength(0);
        expect(x.pooledBody).not.toBeNull();
        expect(body.buffer).toBe(x.pooledBody!.buffer);
      }
    }
  });

  it('is copied into the pool\'s shared memory from the tokenizer threads\' size on, its ordinary memory given back', async () => {
    await turnEnd();
    const t = text(9000);
    const before = bodyMemoryStats().pending;
    const { body, x } = arrive(t, [4000], 8192);
    expect(body.buffer).toBeInstanceOf(SharedArrayBuffer);
    expect(body.equals(t)).toBe(true);
    expect(x.pooledBody!.buffer).toBe(body.buffer);
    expect(x.pooledBody!.length).toBe(16384);
    // The 8 KiB memory it outgrew, and the 16 KiB one it was copied from.
    expect(bodyMemoryStats().pending).toBe(before + 2);
    const small = arrive(text(5000), [4000], 8192);
    expect(small.body.buffer).not.toBeInstanceOf(SharedArrayBuffer);
    expect(small.x.pooledBody).not.toBeNull();
  });

  it('past the pool\'s largest ordinary size, goes on in copies, the bytes so far the first of them, then joined into the pool\'s shared memory', () => {
    for (const sharedMin of [0, 262144]) {
      const t = text(300_000);
      const { body, x, chunks } = arrive(t, [100_000, 7], sharedMin);
      expect(chunks.length).toBeGreaterThan(1);
      expect(body.equals(t)).toBe(true);
      expect(body.buffer).toBeInstanceOf(SharedArrayBuffer);
      expect(x.pooledBody!.length).toBe(524288);
      expect(x.pooledBody!.buffer).toBe(body.buffer);
    }
  });

  it('past the pool\'s largest shared size, is joined from its copies into memory of its own (shared from the threads\' size on)', () => {
    for (const sharedMin of [0, 262144]) {
      const t = Buffer.alloc(SHARED_BODY_MEMORY_MAX_BYTES + 100_000, 'x');
      const { body, x, chunks } = arrive(t, [1 << 20, 99_999], sharedMin);
      expect(chunks.length).toBeGreaterThan(1);
      expect(body.equals(t)).toBe(true);
      expect(body.buffer instanceof SharedArrayBuffer).toBe(sharedMin > 0);
      expect(x.pooledBody).toBeNull();
    }
  });

  it('takes no memory for an empty body', () => {
    const x = exchange();
    const chunks: Buffer[] = [];
    appendChunkedPiece(x, chunks, new Uint8Array(0), 0);
    expect(x.pooledBody).toBeNull();
    expect(chunkedBody(x, chunks, 0, 0).length).toBe(0);
  });
});
