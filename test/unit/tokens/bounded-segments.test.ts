import { encode } from 'gpt-tokenizer/encoding/o200k_base';
import { describe, expect, it } from 'vitest';
import { isWhitespace, MAX_RUN_CHARS, nextSegmentEnd, SEGMENT_MAX_CHARS } from '../../../src/tokens/bounded-segments.js';
import { bpeCountText } from '../../../src/tokens/bpe-count.js';
import { mulberry32 } from '../../helpers/mulberry32.js';

/** Prose-like text: words, capitals, digits, punctuation, line breaks, some non-ASCII. */
function prose(chars: number, seed: number): string {
  const r = mulberry32(seed);
  const words = ['the', 'router', 'Model', 'token', 'limit', 'über', 'naïve', '東京', 'é', 'x86_64', "don't", 'HTTP/1.1', '42', '3.14', '🙂'];
  const seps = [' ', ' ', ' ', ', ', '. ', '\n', '\n\n', '  ', '\t', ' - '];
  let s = '';
  while (s.length < chars) {
    s += words[Math.floor(r() * words.length)];
    s += seps[Math.floor(r() * seps.length)];
  }
  return s;
}

function segments(text: string): string[] {
  const out: string[] = [];
  for (let s = 0; s < text.length;) {
    const e = nextSegmentEnd(text, s);
    expect(e).toBeGreaterThan(s);
    out.push(text.slice(s, e));
    s = e;
  }
  return out;
}

describe('bounded segments', () => {
  it('matches the \\s class for every BMP code unit', () => {
    const mismatches: number[] = [];
    for (let c = 0; c < 0x10000; c++) if (isWhitespace(c) !== /\s/.test(String.fromCharCode(c))) mismatches.push(c);
    expect(mismatches).toEqual([]);
  });

  it('keeps short texts whole', () => {
    expect(segments('San Francisco is a')).toEqual(['San Francisco is a']);
  });

  it('counts long prose exactly although it is cut into several segments', () => {
    const text = prose(60_000, 1);
    const parts = segments(text);
    expect(parts.length).toBeGreaterThan(3);
    for (const p of parts) expect(p.length).toBeLessThanOrEqual(SEGMENT_MAX_CHARS + MAX_RUN_CHARS);
    expect(bpeCountText(text)).toBe(encode(text).length);
  });

  it('counts long text of other scripts exactly (Cyrillic, Greek, spaced CJK, Arabic): a space before any letter is a cut', () => {
    const scripts: string[][] = [
      ['Привет', 'мир', 'модель', 'токен', 'Лимит', 'запрос', 'ответ', '42'],
      ['Καλημέρα', 'κόσμε', 'μοντέλο', 'όριο'],
      ['東京', '大阪', 'モデル', 'トークン', '制限', '。'],
      ['مرحبا', 'بالعالم', 'نموذج', 'حد'],
    ];
    for (const [n, words] of scripts.entries()) {
      const r = mulberry32(100 + n);
      let text = '';
      while (text.length < 70_000) text += words[Math.floor(r() * words.length)] + (r() < 0.05 ? '\n' : ' ');
      const parts = segments(text);
      expect(parts.length).toBeGreaterThan(4);
      for (const p of parts) expect(p.length).toBeLessThan(SEGMENT_MAX_CHARS);
      expect(bpeCountText(text)).toBe(encode(text).length);
    }
  });

  it('cuts runs longer than MAX_RUN_CHARS into pieces of at most MAX_RUN_CHARS', () => {
    for (const text of ['a'.repeat(10_000), ' '.repeat(10_000), '\n'.repeat(3000)]) {
      const parts = segments(text);
      expect(parts.length).toBe(Math.ceil(text.length / MAX_RUN_CHARS));
      for (const p of parts) expect(p.length).toBeLessThanOrEqual(MAX_RUN_CHARS);
    }
  });

  it('counts hostile runs inline in bounded pieces (one letter, spaces, line breaks)', () => {
    // Uncut, each of these takes tens of seconds; in 256-character pieces they are cheap.
    expect(bpeCountText('a'.repeat(200_000))).toBe(25_000);
    const spaces = bpeCountText(' '.repeat(200_000));
    expect(Number.isSafeInteger(spaces) && spaces > 0).toBe(true);
    const breaks = bpeCountText('\n'.repeat(200_000));
    expect(Number.isSafeInteger(breaks) && breaks > 0).toBe(true);
  });

  it('never splits a surrogate pair', () => {
    const text = 'x' + '🙂'.repeat(1000);
    for (const p of segments(text)) {
      const last = p.charCodeAt(p.length - 1);
      expect(last >= 0xd800 && last <= 0xdbff).toBe(false);
    }
    expect(segments(text).join('')).toBe(text);
  });

  it('stays close to the true count on text with long runs', () => {
    const r = mulberry32(7);
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
    let b64 = '';
    for (let i = 0; i < 4000; i++) b64 += alphabet[Math.floor(r() * 64)];
    const text = prose(2000, 3) + b64 + prose(2000, 4);
    const truth = encode(text).length;
    const counted = bpeCountText(text);
    expect(Math.abs(counted - truth) / truth).toBeLessThan(0.02);
  });
});
