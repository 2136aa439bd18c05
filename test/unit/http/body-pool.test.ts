import { describe, expect, it } from 'vitest';
import { bodyBufferFor, releaseBody } from '../../../src/http/body-pool.js';
import { bodyMemoryStats } from '../../../src/body-memory.js';
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

  it('is not used for a body outside the pool\'s sizes, or one a tokenizer thread parses (shared memory)', () => {
    for (const [size, sharedMin] of [[4095, 0], [262145, 0], [6000, 4096], [100_000, 65536]] as const) {
      const x = exchange();
      expect(bodyBufferFor(x, size, sharedMin).length).toBe(size);
      expect(x.pooledBody).toBeNull();
    }
    expect(bodyBufferFor(exchange(), 6000, 4096).buffer).toBeInstanceOf(SharedArrayBuffer);
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
