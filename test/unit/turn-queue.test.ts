import { describe, expect, it } from 'vitest';
import { TurnQueue } from '../../src/turn-queue.js';

describe('TurnQueue', () => {
  it('calls each item once, in order, then is empty', () => {
    const q = new TurnQueue<string>();
    q.push('a');
    q.push('b');
    expect(q.size).toBe(2);
    const seen: string[] = [];
    q.drainEach((x) => seen.push(x));
    expect(seen).toEqual(['a', 'b']);
    expect(q.size).toBe(0);
    q.drainEach((x) => seen.push(x));
    expect(seen).toEqual(['a', 'b']);
  });

  it('includes items queued during the drain, after the others', () => {
    const q = new TurnQueue<number>();
    q.push(1);
    q.push(2);
    const seen: number[] = [];
    q.drainEach((x) => {
      seen.push(x);
      if (x === 1) q.push(3);
    });
    expect(seen).toEqual([1, 2, 3]);
    expect(q.size).toBe(0);
  });

  it('reuses its slots across turns without replaying or losing an item', () => {
    const q = new TurnQueue<number>();
    const seen: number[][] = [];
    for (const turn of [[1, 2, 3], [4], [], [5, 6]]) {
      for (const x of turn) q.push(x);
      const got: number[] = [];
      q.drainEach((x) => got.push(x));
      seen.push(got);
    }
    expect(seen).toEqual([[1, 2, 3], [4], [], [5, 6]]);
  });

  it('lets go of called items (their slots are cleared)', () => {
    const q = new TurnQueue<object>();
    q.push({});
    q.push({});
    q.drainEach(() => {});
    const slots = (q as unknown as { items: unknown[] }).items;
    expect(slots).toEqual([null, null]);
  });

  it('gives every item its call when one throws, then throws the first error', () => {
    const q = new TurnQueue<number>();
    for (const x of [1, 2, 3, 4]) q.push(x);
    const seen: number[] = [];
    expect(() => q.drainEach((x) => {
      seen.push(x);
      if (x % 2 === 0) throw new Error(`bad ${x}`);
    })).toThrow('bad 2');
    expect(seen).toEqual([1, 2, 3, 4]);
    expect(q.size).toBe(0);
  });
});
