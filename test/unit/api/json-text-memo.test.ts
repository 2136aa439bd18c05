import { describe, expect, it } from 'vitest';
import { JsonTextMemo, MAX_CHAIN, MIN_BYTES } from '../../../src/api/json-text-memo.js';

/** A JSON array of at least `bytes` bytes whose strings carry `tag`. */
function value(tag: string, bytes = 400): string {
  const items: string[] = [];
  while (JSON.stringify(items).length < bytes) items.push(`${tag}-${items.length}`);
  return JSON.stringify(items);
}

/** `v` inside a body, at the offset returned. */
function inBody(v: string, after = ',"x":1}'): { b: Buffer; at: number } {
  const head = '{"model":"m","tools":';
  return { b: Buffer.from(head + v + after), at: Buffer.byteLength(head) };
}

describe('JsonTextMemo', () => {
  it('finds a value by its bytes where it starts, and gives its end by the kept length', () => {
    const memo = new JsonTextMemo(1 << 20);
    const v = value('a');
    const first = inBody(v);
    expect(memo.find(first.b, first.at, first.b.length)).toBeNull();
    memo.add(first.b, first.at, Buffer.byteLength(v), 'text of a');
    const again = inBody(v, '}');
    const hit = memo.find(again.b, again.at, again.b.length);
    expect(hit?.text).toBe('text of a');
    expect(hit?.raw.toString()).toBe(v);
    // The kept bytes are a copy: the body they came from may be reused.
    first.b.fill(0x20);
    expect(memo.find(again.b, again.at, again.b.length)?.text).toBe('text of a');
  });

  it('does not take a value that differs anywhere, or that runs past the end given', () => {
    const memo = new JsonTextMemo(1 << 20);
    const v = value('a', 600);
    const { b, at } = inBody(v);
    memo.add(b, at, Buffer.byteLength(v), 'a');
    // One byte changed after the sampled start (the fingerprint reads the first MIN_BYTES only).
    const changed = v.slice(0, 500) + (v[500] === '1' ? '2' : '1') + v.slice(501);
    const other = inBody(changed);
    expect(memo.find(other.b, other.at, other.b.length)).toBeNull();
    expect(memo.find(b, at, at + Buffer.byteLength(v) - 1)).toBeNull();
    expect(memo.find(b, at, b.length)?.text).toBe('a');
  });

  it('keeps no value shorter than MIN_BYTES', () => {
    const memo = new JsonTextMemo(1 << 20);
    const v = value('s', 10);
    expect(v.length).toBeLessThan(MIN_BYTES);
    const { b, at } = inBody(v, ',"pad":"' + 'p'.repeat(MIN_BYTES) + '"}');
    memo.add(b, at, Buffer.byteLength(v), 's');
    expect(memo.bytes).toBe(0);
    expect(memo.find(b, at, b.length)).toBeNull();
  });

  it('keeps values that share their first bytes side by side, at most MAX_CHAIN of them', () => {
    const memo = new JsonTextMemo(1 << 22);
    const prefix = value('shared', MIN_BYTES + 10).slice(0, -1);
    const values = Array.from({ length: MAX_CHAIN }, (_, i) => `${prefix},"tail-${i}"]`);
    for (const v of values) {
      const { b, at } = inBody(v);
      memo.add(b, at, Buffer.byteLength(v), v.slice(-8));
    }
    for (const v of values) {
      const { b, at } = inBody(v);
      expect(memo.find(b, at, b.length)?.text).toBe(v.slice(-8));
    }
    const held = memo.bytes;
    // One more under the same fingerprint replaces the chain rather than make lookups longer.
    const extra = `${prefix},"tail-x"]`;
    const e = inBody(extra);
    memo.add(e.b, e.at, Buffer.byteLength(extra), 'extra');
    expect(memo.find(e.b, e.at, e.b.length)?.text).toBe('extra');
    const firstAgain = inBody(values[0]);
    expect(memo.find(firstAgain.b, firstAgain.at, firstAgain.b.length)).toBeNull();
    expect(memo.bytes).toBeLessThan(held);
  });

  it('holds at most its budget: a value used again stays, one used once leaves after two generations', () => {
    const v0 = value('v0');
    const size = Buffer.byteLength(v0);
    // Room for about three entries per generation.
    const memo = new JsonTextMemo(2 * 3 * (size * 3 + 128));
    const keep = inBody(v0);
    memo.add(keep.b, keep.at, size, 'kept');
    const once = inBody(value('once'));
    memo.add(once.b, once.at, Buffer.byteLength(value('once')), 'once');
    for (let i = 0; i < 12; i++) {
      const v = value(`n${i}`);
      const x = inBody(v);
      memo.add(x.b, x.at, Buffer.byteLength(v), `n${i}`);
      expect(memo.find(keep.b, keep.at, keep.b.length)?.text).toBe('kept');
      expect(memo.bytes).toBeLessThanOrEqual(2 * 3 * (size * 3 + 128));
    }
    expect(memo.find(once.b, once.at, once.b.length)).toBeNull();
  });

  it('keeps nothing larger than a generation', () => {
    const memo = new JsonTextMemo(1000);
    const v = value('big', 800);
    const { b, at } = inBody(v);
    memo.add(b, at, Buffer.byteLength(v), 'big');
    expect(memo.bytes).toBe(0);
  });
});

describe('JsonTextMemo memory', () => {
  it('keeps each value in a buffer of its own size, not a slice of a shared pool', () => {
    const memo = new JsonTextMemo(1 << 20);
    const v = value('own', 300);
    const { b, at } = inBody(v);
    memo.add(b, at, Buffer.byteLength(v), 't');
    const kept = memo.find(b, at, b.length)!;
    expect(kept.raw.byteOffset).toBe(0);
    expect(kept.raw.buffer.byteLength).toBe(Buffer.byteLength(v));
  });
});
