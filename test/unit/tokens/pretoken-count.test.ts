import { countTokens, encode } from 'gpt-tokenizer/encoding/o200k_base';
import { describe, expect, it } from 'vitest';
import { countPlain } from '../../../src/tokens/bpe-count.js';
import { o200kRanks } from '../../../src/tokens/o200k-ranks.js';
import { MERGE_CACHE_ENTRIES, PretokenCounter } from '../../../src/tokens/pretoken-count.js';
import { xorshift } from '../../helpers/xorshift.js';

/** gpt-tokenizer's count with special-token text as plain text: what the router's count must equal. */
const PLAIN = { disallowedSpecial: new Set<string>() };
const reference = (t: string): number => countTokens(t, PLAIN);

const PIECES = [
  'the', ' The', 'San', ' Francisco', "'s", "'LL", ' 12345', '3.14', ' ', '  ', '\t', '\n', '\r\n', '\u00a0',
  '!!', '?', ' ...', '—', 'Grüße', 'Köln', '你好', '世界', '🙂', '👍🏽', '\ud83d', '\udc00', 'ﷺ', 'xqzvkjw', 'Pneumono',
  '<|endoftext|>', '<|im_start|>', '<|', '|>', 'ABCdefGHI', 'camelCaseWord', '_snake_case', '$%^&', 'ـــ', 'ÀÉÎ',
  '\u0000', '\u007f', '\u0080', 'ß', 'ﬃ', '𝔘𝔫𝔦', 'Ελληνικά', 'русский', 'עברית', 'العربية', 'हिन्दी', '日本語のテキスト', '한국어', '\u0301',
];

describe('pre-token count over the rank table', () => {
  it('counts as gpt-tokenizer counts, on 5000 random texts of words, numbers, white space, emoji, marks, lone surrogates and special-token text', () => {
    const r = xorshift(13);
    for (let i = 0; i < 5000; i++) {
      let t = '';
      const n = Math.floor(r() * 40);
      for (let k = 0; k < n; k++) t += PIECES[Math.floor(r() * PIECES.length)];
      expect(countPlain(t), JSON.stringify(t)).toBe(reference(t));
    }
    expect(countPlain('')).toBe(0);
  });

  it('counts as gpt-tokenizer counts, on 3000 texts of random code units (ASCII, Latin, CJK, surrogate halves)', () => {
    const r = xorshift(31);
    const ranges = [[0, 0x80], [0x80, 0x800], [0x3000, 0xa000], [0xd800, 0xe000], [0xac00, 0xd7a4]] as const;
    for (let i = 0; i < 3000; i++) {
      let t = '';
      const n = Math.floor(r() * 60);
      for (let k = 0; k < n; k++) {
        const [lo, hi] = ranges[r() < 0.6 ? 0 : 1 + Math.floor(r() * (ranges.length - 1))];
        t += String.fromCharCode(lo + Math.floor(r() * (hi - lo)));
      }
      expect(countPlain(t), JSON.stringify(t)).toBe(reference(t));
    }
  });

  it('counts never-seen words by their merges as gpt-tokenizer encodes them, ASCII and not', () => {
    const r = xorshift(5);
    const letters = 'abcdefghijklmnopqrstuvwxyzäöüßéèçñ';
    for (let i = 0; i < 2000; i++) {
      let w = ' ';
      const n = 3 + Math.floor(r() * 14);
      for (let k = 0; k < n; k++) w += letters[Math.floor(r() * letters.length)];
      expect(countPlain(w), JSON.stringify(w)).toBe(encode(w).length);
    }
  });

  it('counts the same once its cache of merged pre-tokens has been emptied (more distinct rare words than it holds)', () => {
    const counter = new PretokenCounter(o200kRanks());
    const words = Array.from({ length: MERGE_CACHE_ENTRIES + 500 }, (_, i) => ` qz${i.toString(36)}xv`);
    const first = words.map((w) => counter.count(w));
    expect(words.map((w) => counter.count(w))).toEqual(first);
    expect(first.slice(0, 200)).toEqual(words.slice(0, 200).map(reference));
  });
});
