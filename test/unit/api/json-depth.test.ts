import { describe, expect, it } from 'vitest';
import { nestsDeeperThan } from '../../../src/api/json-depth.js';

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
