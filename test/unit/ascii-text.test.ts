import { describe, expect, it } from 'vitest';
import { isAscii } from '../../src/ascii-text.js';

describe('isAscii', () => {
  it('is true for every ASCII character and the empty string', () => {
    let all = '';
    for (let c = 0; c < 0x80; c++) all += String.fromCharCode(c);
    expect(isAscii(all)).toBe(true);
    expect(isAscii('')).toBe(true);
  });

  it('is false for one character outside ASCII anywhere: latin1, beyond it, lone surrogates, a pair', () => {
    for (const odd of ['\u0080', '\u00e9', '\u00ff', '\u0100', '\u4e2d', '\ud800', '\udc00', '\ud83d\ude00']) {
      for (const s of [odd, `ab${odd}`, `${odd}ab`, `a${odd}b`]) expect(isAscii(s), JSON.stringify(s)).toBe(false);
    }
  });
});
