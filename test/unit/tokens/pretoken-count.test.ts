import o200k, { countTokens } from 'gpt-tokenizer/encoding/o200k_base';
import { describe, expect, it } from 'vitest';
import { countPlain } from '../../../src/tokens/bpe-count.js';
import { asBpeCore, fastCounter, SELF_CHECK_TEXTS, type BpeCore } from '../../../src/tokens/pretoken-count.js';
import { xorshift } from '../../helpers/xorshift.js';

const PLAIN = { disallowedSpecial: new Set<string>() };
const reference = (t: string): number => countTokens(t, PLAIN);
const core = asBpeCore((o200k as unknown as { bytePairEncodingCoreProcessor: unknown }).bytePairEncodingCoreProcessor);


const PIECES = [
  'the', ' The', 'San', ' Francisco', "'s", "'LL", ' 12345', '3.14', ' ', '  ', '\t', '\n', '\r\n', '\u00a0',
  '!!', '?', ' ...', '—', 'Grüße', 'Köln', '你好', '世界', '🙂', '👍🏽', '\ud83d', 'ﷺ', 'xqzvkjw', 'Pneumono',
  '<|endoftext|>', '<|im_start|>', '<|', '|>', 'ABCdefGHI', 'camelCaseWord', '_snake_case', '$%^&', 'ـــ', 'ÀÉÎ',
];

describe('pre-token count', () => {
  it('is used by this version of gpt-tokenizer (the library shape and the self-check pass)', () => {
    expect(core).not.toBeNull();
    const fast = fastCounter(core, reference);
    expect(fast).not.toBeNull();
    expect(countPlain).not.toBe(reference);
    for (const t of SELF_CHECK_TEXTS) expect(countPlain(t)).toBe(reference(t));
  });

  it('counts as gpt-tokenizer counts, on 3000 random texts of words, numbers, white space, emoji, lone surrogates and special-token text', () => {
    const fast = fastCounter(core, reference)!;
    const r = xorshift(13);
    for (let i = 0; i < 3000; i++) {
      let t = '';
      const n = Math.floor(r() * 40);
      for (let k = 0; k < n; k++) t += PIECES[Math.floor(r() * PIECES.length)];
      expect(fast(t), JSON.stringify(t)).toBe(reference(t));
    }
    expect(fast('')).toBe(0);
  });

  it('falls back (null) when the library has another shape or counts differently', () => {
    expect(asBpeCore(undefined)).toBeNull();
    expect(asBpeCore({ tokenSplitRegex: /x/g, bytePairStringRankEncoder: new Map() })).toBeNull();
    expect(fastCounter(null, reference)).toBeNull();
    // A core whose ranks miss every single-token piece counts more tokens than the library.
    const broken: BpeCore = { tokenSplitRegex: core!.tokenSplitRegex, bytePairStringRankEncoder: new Map(), bytePairEncode: (p) => [...p].map(() => 0) };
    expect(fastCounter(broken, reference)).toBeNull();
    const throwing: BpeCore = { ...broken, bytePairEncode: () => { throw new Error('gone'); } };
    expect(fastCounter(throwing, reference)).toBeNull();
  });

  it('steps over empty matches by whole code points', () => {
    // A split pattern that can match nothing: each code point is then stepped over once.
    const empty: BpeCore = { tokenSplitRegex: /a*/u, bytePairStringRankEncoder: new Map([['a', 1], ['aa', 2]]), bytePairEncode: (p) => [...p] as unknown as number[] };
    const fast = fastCounter({ ...empty }, () => 0);
    // The self-check compares with the reference (0 here), so this core is refused ...
    expect(fast).toBeNull();
    // ... and with a reference that agrees it counts 'aa' as one token and steps over the emoji.
    const agreeing = fastCounter(empty, (t) => countEmptyAware(t));
    expect(agreeing).not.toBeNull();
    expect(agreeing!('aa🙂a')).toBe(2);
  });
});

/** Reference for the /a*\/u core above: one per run of a's that is a known piece, else one per a. */
function countEmptyAware(t: string): number {
  let n = 0;
  for (const m of t.matchAll(/a*/gu)) {
    if (m[0].length === 0) continue;
    n += m[0] === 'a' || m[0] === 'aa' ? 1 : m[0].length;
  }
  return n;
}
