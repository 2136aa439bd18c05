import o200k, { countTokens } from 'gpt-tokenizer/encoding/o200k_base';
import { Buffer } from 'node:buffer';
import { describe, expect, it } from 'vitest';
import { asciiBytes, asciiPretokenEnd, NATIVE_COPY_CHARS, O200K_SPLIT_SOURCE } from '../../../src/tokens/ascii-pretokens.js';
import { countPlain } from '../../../src/tokens/bpe-count.js';
import { xorshift } from '../../helpers/xorshift.js';

const librarySplit = (o200k as unknown as { bytePairEncodingCoreProcessor: { tokenSplitRegex: RegExp } }).bytePairEncodingCoreProcessor.tokenSplitRegex;
const regex = new RegExp(librarySplit.source, 'gu');

/** The library's pre-tokens of `text`. */
function byRegex(text: string): string[] {
  return text.match(regex) ?? [];
}

/** This module's pre-tokens of `text`. */
function byScan(text: string): string[] {
  const pieces: string[] = [];
  // Beyond the text, bytes that would change its pre-tokens were they read (letters after letters).
  const bytes = Buffer.alloc(text.length + 4, 0x61);
  expect(asciiBytes(text, bytes)).toBe(true);
  for (let i = 0; i < text.length;) {
    const end = asciiPretokenEnd(bytes, i, text.length);
    if (end > text.length) pieces.push(`<read past the end: ${end}>`);
    pieces.push(text.slice(i, end));
    i = end;
  }
  return pieces;
}

/** One character of each class the regex tells apart on ASCII, and the characters its alternatives name. */
const ALPHABET = ['a', 'z', 'A', 'Z', 's', 'S', 'l', 'L', 'v', 'e', 'E', 'r', 'd', 'm', 't', 'T', '0', '9', ' ', '\t', '\v', '\f', '\n', '\r',
  "'", '/', '!', '.', '_', '\u0000', '\u001f', '\u007f', '~'];


describe('ASCII pre-tokens', () => {
  it("stand for this gpt-tokenizer's o200k_base split regex", () => {
    expect(librarySplit.source).toBe(O200K_SPLIT_SOURCE);
  });

  it('split as the regex does: contractions, capitals, digit groups, punctuation runs, white space before words and line ends', () => {
    for (const text of [
      'San Francisco is a', "I'm sure they'LL say it's don'T we'Ve you'RE x'y it'", '  Hello,\tworld!!  It\'s 12345 o\'clock;\n\n  \r\n   end ',
      'HTTPServer parseJSON ABCdefGHI camelCaseWord _snake_case', ' !!a !\n/x //\r\n\n', '1234567 a1b22c333', '\v\f \t\n x', '   ', 'a  ', 'a \n',
      '<|endoftext|> <|im_start|>user', '', 'x',
    ]) {
      expect(byScan(text), JSON.stringify(text)).toEqual(byRegex(text));
    }
  });

  it('split as the regex does on every text of up to three characters of the classes it tells apart', () => {
    const texts: string[] = [''];
    for (let len = 1; len <= 3; len++) {
      const last = texts.filter((t) => t.length === len - 1);
      for (const t of last) for (const c of ALPHABET) texts.push(t + c);
    }
    expect(texts.length).toBeGreaterThan(ALPHABET.length ** 3);
    for (const text of texts) expect(byScan(text), JSON.stringify(text)).toEqual(byRegex(text));
  });

  it('split as the regex does on 50 000 random texts', () => {
    const r = xorshift(29);
    const words = ['the', ' The', 'HTTP', "'s", "'ll", "'VE", ' 12345', '  ', '\n', '\r\n', ' \n ', '!!', ' ...', '//', 'x', 'Z'];
    for (let i = 0; i < 50_000; i++) {
      let text = '';
      const n = Math.floor(r() * 12);
      for (let k = 0; k < n; k++) {
        text += r() < 0.5 ? ALPHABET[Math.floor(r() * ALPHABET.length)] : words[Math.floor(r() * words.length)];
      }
      expect(byScan(text), JSON.stringify(text)).toEqual(byRegex(text));
    }
  });

  it('counts ASCII text as the library counts it', () => {
    const paragraph = ('The quick brown fox jumps over the lazy dog, while 42 curious engineers measure what it costs; '
      + "they don't guess. Each request's prompt is counted before it is admitted.\n").repeat(20);
    expect(asciiBytes(paragraph, Buffer.alloc(paragraph.length))).toBe(true);
    expect(countPlain(paragraph)).toBe(countTokens(paragraph, { disallowedSpecial: new Set<string>() }));
    expect(asciiBytes('Grüße', Buffer.alloc(5))).toBe(false);
  });

  it('asciiBytes: copies ASCII text of any length as its bytes, and refuses any other character, below and from the native copy length', () => {
    for (const len of [0, 1, NATIVE_COPY_CHARS - 1, NATIVE_COPY_CHARS, NATIVE_COPY_CHARS + 1, 1000]) {
      let text = '';
      for (let k = 0; k < len; k++) text += String.fromCharCode(k % 128);
      const bytes = Buffer.alloc(len + 2, 0xee);
      expect(asciiBytes(text, bytes), `${len} characters`).toBe(true);
      expect(bytes.subarray(0, len).equals(Buffer.from(text, 'latin1'))).toBe(true);
      expect(bytes.subarray(len).every((b) => b === 0xee)).toBe(true);
      if (len === 0) continue;
      // One character outside ASCII, first or last: a latin1 character (one byte in latin1, two
      // in UTF-8), one beyond latin1, a lone surrogate (three bytes in UTF-8) and a pair.
      for (const odd of ['\u0080', '\u00e9', '\u00ff', '\u4e2d', '\ud800', '\udc00', '\ud83d\ude00']) {
        for (const t of [odd + text.slice(1), text.slice(0, -1) + odd]) {
          expect(asciiBytes(t, Buffer.alloc(t.length)), `${JSON.stringify(odd)} in ${len} characters`).toBe(false);
        }
      }
    }
  });
});
