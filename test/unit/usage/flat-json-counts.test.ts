import { describe, expect, it } from 'vitest';
import { flatCounts, readFlatCounts, readFlatCountsBackwards } from '../../../src/api/flat-json-counts.js';
import { pickWith, xorshift } from '../../helpers/xorshift.js';

const P = Buffer.from('prompt_tokens');
const C = Buffer.from('completion_tokens');

function read(text: string): { ok: boolean; first: number; second: number } {
  const b = Buffer.from(text);
  const ok = readFlatCounts(b, 0, b.length - 1, P, C);
  return { ok, first: flatCounts.first, second: flatCounts.second };
}

const KEYS = ['prompt_tokens', 'completion_tokens', 'total_tokens', 'x', 'ünï', 'completion_token', 'prompt_tokens_details', ''];
const VALUES = ['0', '7', '16', '120000', '999999999999999', '1000000000000000', '00', 'null', 'true', 'false', '1.5', '-3', '2e2', '"5"', '{}', '[3]',
  '{"completion_tokens":4}'];
const JUNK = ['', ',', '}', '{', '"', '\\', ':', '0', 'a', ' ', '\u0001', 'e', 'l'];

/** A random object of up to four members, and in three cases of ten one random edit: it may turn invalid, or stay valid in another shape. */
function randomObject(r: () => number): string {
  const pick = pickWith(r);
  const space = (): string => pick(['', '', ' ', '\n', '\t', '\r\n ']);
  const n = Math.floor(r() * 5);
  const members: string[] = [];
  for (let m = 0; m < n; m++) members.push(`${space()}"${pick(KEYS)}"${space()}:${space()}${pick(VALUES)}${space()}`);
  let text = `{${members.join(',')}${space()}}`;
  if (r() < 0.3) {
    const at = 1 + Math.floor(r() * (text.length - 2));
    const cut = r() < 0.5 ? 1 : 0;
    text = text.slice(0, at) + pick(JUNK) + text.slice(at + cut);
  }
  return text;
}

/** What JSON.parse makes of the object: null when it throws, else each key's integer or -1. */
function parsed(text: string): { first: number; second: number } | null {
  let o: unknown;
  try {
    o = JSON.parse(text);
  } catch {
    return null;
  }
  if (typeof o !== 'object' || o === null || Array.isArray(o)) return null;
  const v = (x: unknown): number => (typeof x === 'number' && Number.isInteger(x) && x >= 0 ? x : -1);
  const r = o as Record<string, unknown>;
  return { first: v(r.prompt_tokens), second: v(r.completion_tokens) };
}

describe('readFlatCounts', () => {
  it('reads the flat usage objects backends send', () => {
    expect(read('{"prompt_tokens":5,"completion_tokens":16,"total_tokens":21}')).toEqual({ ok: true, first: 5, second: 16 });
    expect(read('{ "prompt_tokens" : 0 ,\n\t"total_tokens": 9, "completion_tokens": 9, "prompt_tokens_details": null }')).toEqual({ ok: true, first: 0, second: 9 });
    expect(read('{"completion_tokens":3}')).toEqual({ ok: true, first: -1, second: 3 });
    expect(read('{}')).toEqual({ ok: true, first: -1, second: -1 });
    expect(read('{"completion_tokens":1,"completion_tokens":2,"x":true,"y":false}')).toEqual({ ok: true, first: -1, second: 2 });
    expect(read('{"prompt_tokens":null,"completion_tokens":123456789012345}')).toEqual({ ok: true, first: -1, second: 123456789012345 });
  });

  it('leaves every other shape to JSON.parse', () => {
    for (const text of [
      '{"prompt_tokens":5.0,"completion_tokens":1}', // fraction
      '{"completion_tokens":1e3}', '{"completion_tokens":-1}', '{"completion_tokens":"4"}',
      '{"completion_tokens":1234567890123456}', // more than 15 digits
      '{"completion_tokens":1,"details":{"cached_tokens":0}}', '{"completion_tokens":1,"a":[]}',
      '{"compl\\u0065tion_tokens":1}', // an escaped key
      '{"completion_tokens":01}', '{"completion_tokens":1,}', '{,}', '{"a"}', '{"a":}', '{"a" 1}',
      '{"completion_tokens":1 2}', '{"completion_tokens":nul}', '{"completion_tokens":truex}', '{"a\tb":1}',
      '[1]', '{"a":1',
    ]) {
      expect(read(text).ok, text).toBe(false);
    }
  });

  it('agrees with JSON.parse on 20 000 random and mutated objects', () => {
    const r = xorshift(11);
    let read = 0;
    for (let i = 0; i < 20_000; i++) {
      const text = randomObject(r);
      const b = Buffer.from(text);
      const ok = readFlatCounts(b, 0, b.length - 1, P, C);
      const want = parsed(text);
      if (ok) {
        read++;
        expect(want, text).not.toBeNull();
        expect({ first: flatCounts.first, second: flatCounts.second }, text).toEqual(want);
      } else if (want !== null && !/[."{[\\-]|\d[eE]|\d{16}/.test(text.slice(1, -1).replace(/"[^"\\]*"\s*:/g, ':'))) {
        // A valid object of the plain shape must be read here, not left to the slow path.
        throw new Error(`not read: ${text}`);
      }
    }
    expect(read).toBeGreaterThan(5_000);
  });
});

/** readFlatCountsBackwards on `text` placed after `prefix`: whether it read the object, where it says the object starts, the counts. */
function readBack(text: string, prefix = ''): { ok: boolean; start: number; first: number; second: number } {
  const b = Buffer.from(prefix + text);
  const start = readFlatCountsBackwards(b, b.length - 1, P, C);
  return { ok: start >= 0, start, first: flatCounts.first, second: flatCounts.second };
}

describe('readFlatCountsBackwards', () => {
  it('reads the flat usage objects backends send, from their end, and says where they start', () => {
    expect(readBack('{"prompt_tokens":5,"completion_tokens":16,"total_tokens":21}', ',"usage":')).toEqual({ ok: true, start: 9, first: 5, second: 16 });
    expect(readBack('{ "prompt_tokens" : 0 ,\n\t"total_tokens": 9, "completion_tokens": 9, "prompt_tokens_details": null }')).toEqual({ ok: true, start: 0, first: 0, second: 9 });
    expect(readBack('{"completion_tokens":3}')).toEqual({ ok: true, start: 0, first: -1, second: 3 });
    expect(readBack('{}', 'x')).toEqual({ ok: true, start: 1, first: -1, second: -1 });
    expect(readBack('{ }')).toEqual({ ok: true, start: 0, first: -1, second: -1 });
    // A duplicate key: the last one counts, as in JSON.parse.
    expect(readBack('{"completion_tokens":1,"completion_tokens":2,"x":true,"y":false}')).toEqual({ ok: true, start: 0, first: -1, second: 2 });
    expect(readBack('{"prompt_tokens":7,"prompt_tokens":null,"completion_tokens":123456789012345}')).toEqual({ ok: true, start: 0, first: -1, second: 123456789012345 });
    expect(readBack('{"completion_tokens":0}')).toEqual({ ok: true, start: 0, first: -1, second: 0 });
  });

  it('leaves every other shape to JSON.parse', () => {
    for (const text of [
      '{"prompt_tokens":5.0,"completion_tokens":1}', '{"completion_tokens":1e3}', '{"completion_tokens":-1}', '{"completion_tokens":"4"}',
      '{"completion_tokens":1234567890123456}', '{"completion_tokens":1,"details":{"cached_tokens":0}}', '{"completion_tokens":1,"a":[]}',
      '{"compl\\u0065tion_tokens":1}', '{"a\\"":1}', '{"completion_tokens":01}', '{"completion_tokens":1,}', '{,}', '{"a"}', '{"a":}', '{"a" 1}',
      '{"completion_tokens":1 2}', '{"completion_tokens":nul}', '{"completion_tokens":ull}', '{"completion_tokens":xtrue}', '{"a\tb":1}',
      '[1]', '"a":1}', '1}', '}', 'e}', '"}', 'null}',
    ]) {
      expect(readBack(text).ok, text).toBe(false);
    }
  });

  it('agrees with readFlatCounts on 20 000 random and mutated objects', () => {
    const r = xorshift(23);
    const pick = pickWith(r);
    let read = 0;
    for (let i = 0; i < 20_000; i++) {
      const text = randomObject(r);
      const prefix = pick(['', ',"usage":', '{"a":1,"usage": ']);
      const b = Buffer.from(prefix + text);
      const start = readFlatCountsBackwards(b, b.length - 1, P, C);
      const back = { first: flatCounts.first, second: flatCounts.second };
      // An object read from its end is one readFlatCounts reads the same from where it starts.
      if (start >= 0) {
        expect(readFlatCounts(b, start, b.length - 1, P, C), text).toBe(true);
        expect(back, text).toEqual({ first: flatCounts.first, second: flatCounts.second });
      }
      // And the whole text, when it is such an object, is read from its end.
      if (readFlatCounts(b, Buffer.byteLength(prefix), b.length - 1, P, C)) {
        read++;
        expect(start, text).toBe(Buffer.byteLength(prefix));
      }
    }
    expect(read).toBeGreaterThan(5_000);
  });
});
