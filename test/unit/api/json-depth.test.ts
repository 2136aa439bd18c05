import { describe, expect, it } from 'vitest';
import { nestsDeeperThan, nestsDeeperThanSkipping, openersIn } from '../../../src/api/json-depth.js';
import { seededBelow } from '../../helpers/json-body-fuzz.js';

const b = (s: string): Buffer => Buffer.from(s);

describe('nestsDeeperThan', () => {
  it('counts arrays and objects together; the limit itself passes', () => {
    expect(nestsDeeperThan(b('{"a":[{"b":[1]}]}'), 4)).toBe(false);
    expect(nestsDeeperThan(b('{"a":[{"b":[1]}]}'), 3)).toBe(true);
    expect(nestsDeeperThan(b('[[],[],[]]'), 2)).toBe(false);
  });

  it('ignores brackets inside strings, also after escaped quotes and backslashes', () => {
    expect(nestsDeeperThan(b('{"p":"[[[[[[{{{{"}'), 1)).toBe(false);
    expect(nestsDeeperThan(b('{"p":"a\\"[[[[[["}'), 1)).toBe(false);
    expect(nestsDeeperThan(b('{"p":"a\\\\","q":[[1]]}'), 2)).toBe(true);
    expect(nestsDeeperThan(b('{"p":"a\\\\","q":[[1]]}'), 3)).toBe(false);
  });

  it('finds depth in very deep input without recursion', () => {
    const d = 200_000;
    expect(nestsDeeperThan(b('['.repeat(d) + ']'.repeat(d)), 512)).toBe(true);
    expect(nestsDeeperThan(b('"' + '['.repeat(d)), 512)).toBe(false); // unclosed string: JSON.parse judges it
  });

  it('reads from a place at a known depth, the bytes before it not read', () => {
    // A body's messages kept before: `{"messages":[{...}` ends at depth 2; what follows is read from there.
    const kept = '{"m":[[[[[[[[1]]]]]]]],"messages":[{"a":1}';
    const raw = b(`${kept},{"b":[[1]]}]}`);
    expect(nestsDeeperThan(raw, 5, kept.length, 2)).toBe(false);
    expect(nestsDeeperThan(raw, 4, kept.length, 2)).toBe(true);
    // Read whole, the kept part's own depth counts.
    expect(nestsDeeperThan(raw, 5)).toBe(true);
    // Few brackets after `from`: settled by counting them, however deep the start.
    expect(nestsDeeperThan(raw, 6, kept.length, 2)).toBe(false);
    expect(nestsDeeperThan(b('[1]'), 3, 0, 3)).toBe(true);
    expect(nestsDeeperThan(b('1'), 3, 0, 4)).toBe(true);
  });
});

describe('nestsDeeperThanSkipping: a kept value\'s brackets added by their number', () => {
  const brackets = (next: (n: number) => number, n: number): string => {
    const parts = ['{', '[', '}', ']', '"', '"[{"', 'x', ','];
    let s = '';
    for (let i = 0; i < n; i++) s += parts[next(parts.length)];
    return s;
  };

  it('openersIn counts every { and [, in strings or not', () => {
    expect(openersIn(b('{"a":["{[",{}]}'))).toBe(5);
    expect(openersIn(b('"x"'))).toBe(0);
  });

  it('gives nestsDeeperThan\'s answer for 2,000 seeded random bodies and regions, near the limit and far from it', () => {
    const next = seededBelow(512);
    let deep = 0;
    for (let k = 0; k < 2000; k++) {
      const raw = b(brackets(next, 20 + next(1500)));
      const from = next(raw.length);
      const to = from + next(raw.length - from + 1);
      const max = [4, 16, 64, 300][next(4)];
      const got = nestsDeeperThanSkipping(raw, max, from, to, openersIn(raw.subarray(from, to)));
      expect(got, `${raw.toString()} ${from} ${to} ${max}`).toBe(nestsDeeperThan(raw, max));
      if (got) deep++;
    }
    // Both answers came up often.
    expect(deep).toBeGreaterThan(200);
    expect(deep).toBeLessThan(1800);
  });

  it('reads the brackets outside the region: a deep value beside a kept one is found', () => {
    const kept = '[{"a":[1]},{"b":[2]}]';
    const raw = b(`{"tools":${kept},"x":${'['.repeat(20)}${']'.repeat(20)}}`);
    const from = raw.indexOf(kept);
    expect(nestsDeeperThanSkipping(raw, 20, from, from + kept.length, openersIn(b(kept)))).toBe(true);
    expect(nestsDeeperThanSkipping(raw, 21, from, from + kept.length, openersIn(b(kept)))).toBe(false);
  });
});
