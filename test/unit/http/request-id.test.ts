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

  it('use every hex digit at every random position, and only 8, 9, a, b at the variant\'s (not a constant, a counter or a misplaced digit pair)', () => {
    const digits = new Map<number, Set<string>>();
    for (let i = 0; i < 2000; i++) {
      const id = newRequestId();
      for (let pos = 0; pos < 36; pos++) {
        const s = digits.get(pos) ?? new Set<string>();
        s.add(id[pos]);
        digits.set(pos, s);
      }
    }
    for (const [pos, s] of digits) {
      if ([8, 13, 18, 23].includes(pos)) expect([...s]).toEqual(['-']);
      else if (pos === 14) expect([...s]).toEqual(['4']);
      else if (pos === 19) expect([...s].sort()).toEqual(['8', '9', 'a', 'b']);
      else expect(s.size, `position ${pos}`).toBe(16);
    }
  });

  it('a returned id does not change when more are drawn', () => {
    const a = newRequestId();
    const copy = `${a}`;
    for (let i = 0; i < 600; i++) newRequestId();
    expect(a).toBe(copy);
  });
});
