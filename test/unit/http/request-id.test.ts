import { describe, expect, it } from 'vitest';
import { newRequestId } from '../../../src/http/request-id.js';

const V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe('request ids', () => {
  it('are version 4 UUIDs, each one new, across several refills of the random pool', () => {
    const seen = new Set<string>();
    for (let i = 0; i < 2000; i++) {
      const id = newRequestId();
      expect(id).toMatch(V4);
      seen.add(id);
    }
    expect(seen.size).toBe(2000);
  });

  it('use every hex digit in the random positions (not a constant or a counter)', () => {
    const digits = new Map<number, Set<string>>();
    for (let i = 0; i < 2000; i++) {
      const id = newRequestId();
      for (const pos of [0, 9, 15, 20, 35]) {
        const s = digits.get(pos) ?? new Set<string>();
        s.add(id[pos]);
        digits.set(pos, s);
      }
    }
    for (const s of digits.values()) expect(s.size).toBe(16);
  });

  it('a returned id does not change when more are drawn', () => {
    const a = newRequestId();
    const copy = `${a}`;
    for (let i = 0; i < 600; i++) newRequestId();
    expect(a).toBe(copy);
  });
});
