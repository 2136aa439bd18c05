import { describe, expect, it } from 'vitest';
import { JsonTextMemo, MAX_CHAIN, MIN_BYTES } from '../../../src/api/json-text-memo.js';

/** A JSON array of at least `bytes` bytes whose strings carry `tag`. */
function value(tag: string, bytes = 400): string {
  const items: string[] = [];
  while (JSON.stringify(items).length < bytes) items.push(`${tag}-${items.length}`);
  return JSON.stringify(items);
}

/** `v` inside a body: its start `at` and its end `end`. */
function inBody(v: string, head = '{"model":"m","tools":', after = ',"x":1}'): { b: Buffer; at: number; end: number } {
  const at = Buffer.byteLength(head);
  return { b: Buffer.from(head + v + after), at, end: at + Buffer.byteLength(v) };
}

describe('JsonTextMemo', () => {
  it('finds a value by its bytes where it ends, and gives its start by the kept length', () => {
    const memo = new JsonTextMemo(1 << 20);
    const v = value('a');
    const first = inBody(v);
    expect(memo.find(first.b, 0, first.end)).toBeNull();
    memo.add(first.b, first.at, first.end, 'text of a');
    const again = inBody(v, '{"messages":[{"role":"user","content":"other"}],"tools":', '}');
    const hit = memo.find(again.b, 0, again.end);
    expect(hit?.text).toBe('text of a');
    expect(again.end - hit!.raw.length).toBe(again.at);
    // The kept bytes are a copy: the body they came from may be reused.
    first.b.fill(0x20);
    expect(memo.find(again.b, 0, again.end)?.text).toBe('text of a');
  });

  it('does not take a value that differs anywhere, or that would start before `from`', () => {
    const memo = new JsonTextMemo(1 << 20);
    const v = value('a', 600);
    const { b, at, end } = inBody(v);
    memo.add(b, at, end, 'a');
    // One byte changed before the sampled end (the fingerprint reads the last MIN_BYTES only).
    const changed = v.slice(0, 100) + (v[100] === '1' ? '2' : '1') + v.slice(101);
    const other = inBody(changed);
    expect(memo.find(other.b, 0, other.end)).toBeNull();
    expect(memo.find(b, at + 1, end)).toBeNull();
    expect(memo.find(b, at, end)?.text).toBe('a');
    expect(memo.find(b, 0, end + 1)).toBeNull();
  });

  it('keyed by first bytes: finds a value from where it starts, within a limit, and not from its end', () => {
    const memo = new JsonTextMemo(1 << 20, 'first-bytes');
    const v = value('f', 600);
    const first = inBody(v);
    expect(memo.findFrom(first.b, first.at, first.b.length)).toBeNull();
    memo.add(first.b, first.at, first.end, 'text of f');
    const again = inBody(v, '{"messages":[{"role":"system","content":', ',"y":2}');
    expect(memo.findFrom(again.b, again.at, again.b.length)?.text).toBe('text of f');
    // Its end past the limit, or another start: not it.
    expect(memo.findFrom(again.b, again.at, again.end - 1)).toBeNull();
    expect(memo.findFrom(again.b, again.at + 1, again.b.length)).toBeNull();
    // One byte changed past the sampled start (the fingerprint reads the first MIN_BYTES only).
    const at = v.length - 50;
    const changed = inBody(v.slice(0, at) + (v[at] === '1' ? '2' : '1') + v.slice(at + 1));
    expect(memo.findFrom(changed.b, changed.at, changed.b.length)).toBeNull();
    // A memo keyed one way is not looked up the other.
    expect(memo.find(again.b, 0, again.end)).toBeNull();
    const byLast = new JsonTextMemo(1 << 20);
    byLast.add(first.b, first.at, first.end, 'text of f');
    expect(byLast.findFrom(again.b, again.at, again.b.length)).toBeNull();
    expect(byLast.find(again.b, 0, again.end)?.text).toBe('text of f');
  });

  it('keeps no value shorter than MIN_BYTES', () => {
    const memo = new JsonTextMemo(1 << 20);
    const v = value('s', 10);
    expect(v.length).toBeLessThan(MIN_BYTES);
    const { b, at, end } = inBody(v, `{"pad":"${'p'.repeat(MIN_BYTES)}","tools":`);
    memo.add(b, at, end, 's');
    expect(memo.bytes).toBe(0);
    expect(memo.find(b, 0, end)).toBeNull();
  });

  it('keeps values that share their last bytes side by side, at most MAX_CHAIN of them', () => {
    const memo = new JsonTextMemo(1 << 22);
    const tail = value('shared', MIN_BYTES + 10).slice(1);
    const values = Array.from({ length: MAX_CHAIN }, (_, i) => `["head-${i}",${tail}`);
    for (const v of values) {
      const { b, at, end } = inBody(v);
      memo.add(b, at, end, v.slice(0, 10));
    }
    for (const v of values) {
      const { b, end } = inBody(v);
      expect(memo.find(b, 0, end)?.text).toBe(v.slice(0, 10));
    }
    const held = memo.bytes;
    // One more under the same fingerprint replaces the chain rather than make lookups longer.
    const extra = `["head-x",${tail}`;
    const e = inBody(extra);
    memo.add(e.b, e.at, e.end, 'extra');
    expect(memo.find(e.b, 0, e.end)?.text).toBe('extra');
    const firstAgain = inBody(values[0]);
    expect(memo.find(firstAgain.b, 0, firstAgain.end)).toBeNull();
    expect(memo.bytes).toBeLessThan(held);
  });

  it('holds at most its budget: a value used again stays, one used once leaves after two generations', () => {
    const size = Buffer.byteLength(value('v0'));
    const budget = 2 * 3 * (size * 3 + 128); // about three entries per generation
    const memo = new JsonTextMemo(budget);
    const keep = inBody(value('v0'));
    memo.add(keep.b, keep.at, keep.end, 'kept');
    const once = inBody(value('once'));
    memo.add(once.b, once.at, once.end, 'once');
    for (let i = 0; i < 12; i++) {
      const x = inBody(value(`n${i}`));
      memo.add(x.b, x.at, x.end, `n${i}`);
      expect(memo.find(keep.b, 0, keep.end)?.text).toBe('kept');
      expect(memo.bytes).toBeLessThanOrEqual(budget);
    }
    expect(memo.find(once.b, 0, once.end)).toBeNull();
  });

  it('keeps nothing larger than a generation', () => {
    const memo = new JsonTextMemo(1000);
    const { b, at, end } = inBody(value('big', 800));
    memo.add(b, at, end, 'big');
    expect(memo.bytes).toBe(0);
  });

  it('keeps each value in a buffer of its own size, not a slice of a shared pool', () => {
    const memo = new JsonTextMemo(1 << 20);
    const { b, at, end } = inBody(value('own', 300));
    memo.add(b, at, end, 't');
    const kept = memo.find(b, 0, end)!;
    expect(kept.raw.byteOffset).toBe(0);
    expect(kept.raw.buffer.byteLength).toBe(end - at);
  });
});
