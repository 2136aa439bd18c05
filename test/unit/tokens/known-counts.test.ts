import { encode } from 'gpt-tokenizer/encoding/o200k_base';
import { describe, expect, it } from 'vitest';
import { bpeCountText, bpeCountTexts, bpeCountTextsUntil, OVER_BUDGET } from '../../../src/tokens/bpe-count.js';

describe('bpe count (o200k_base)', () => {
  it('counts known strings as gpt-tokenizer encodes them', () => {
    // o200k_base ids of "San Francisco is a": [28499, 18826, 382, 261]
    expect(encode('San Francisco is a')).toEqual([28499, 18826, 382, 261]);
    expect(bpeCountText('San Francisco is a')).toBe(4);
    expect(bpeCountText('')).toBe(0);
    expect(bpeCountText('Hello, world!')).toBe(encode('Hello, world!').length);
  });

  it('counts special-token text as plain text instead of throwing', () => {
    const s = 'before <|endoftext|> after <|im_start|>';
    expect(bpeCountText(s)).toBe(encode(s, { disallowedSpecial: new Set() }).length);
    expect(bpeCountText(s)).toBeGreaterThan(4);
  });

  it('sums several texts', () => {
    expect(bpeCountTexts(['San Francisco is a', 'Hello, world!'])).toBe(4 + encode('Hello, world!').length);
  });

  it('stops at the deadline with OVER_BUDGET (injected clock)', () => {
    let t = 0;
    const clock = (): number => t++;
    const long = 'word '.repeat(10_000);
    expect(bpeCountTextsUntil([long], 1, clock)).toBe(OVER_BUDGET);
    expect(bpeCountTextsUntil([long], Number.POSITIVE_INFINITY, () => 0)).toBe(encode(long).length);
  });
});
