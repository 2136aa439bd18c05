import { describe, expect, it } from 'vitest';
import { newBootstrapRoom } from '../../../src/api/sglang-bootstrap-room.js';

describe('SGLang bootstrap room', () => {
  it('is the decimal digits of an integer from 0 to 2^63-1, new each time, using more than 53 bits', () => {
    const rooms = new Set<string>();
    let above53 = 0;
    for (let i = 0; i < 2000; i++) {
      const room = newBootstrapRoom();
      expect(room).toMatch(/^(0|[1-9][0-9]*)$/);
      const n = BigInt(room);
      expect(n < 1n << 63n).toBe(true);
      if (n >= 1n << 53n) above53++;
      rooms.add(room);
    }
    expect(rooms.size).toBe(2000);
    // All but about one in a thousand of uniform 63-bit values are above 2^53.
    expect(above53).toBeGreaterThan(1900);
  });
});
