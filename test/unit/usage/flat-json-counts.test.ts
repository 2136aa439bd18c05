import { describe, expect, it } from 'vitest';
import { flatCounts, flatValueStartBackwards, readFlatCountsBackwards, scalarStartBackwards } from '../../../src/api/flat-json-counts.js';
import { pickWith, xorshift } from '../../helpers/xorshift.js';

const P = Buffer.from('prompt_tokens');
const C = Buffer.from('completion_tokens');

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

/**
 * Whether an object JSON.parse accepts is of the plain shape the reader takes: no fraction,
 * exponent, sign, string or nested value, no escape in a key, at most 15 digits.
 */
function plainShape(text: string): boolean {
  return !/[."{[\\-]|\d[eE]|\d{16}/.test(text.slice(1, -1).replace(/"[^"\\]*"\s*:/g, ':'));
}

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

  it('agrees with JSON.parse on 20 000 random and mutated objects, placed after other text', () => {
    const r = xorshift(23);
    const pick = pickWith(r);
    let read = 0;
    for (let i = 0; i < 20_000; i++) {
      const text = randomObject(r);
      const prefix = pick(['', ',"usage":', '{"a":1,"usage": ']);
      const b = Buffer.from(prefix + text);
      const start = readFlatCountsBackwards(b, b.length - 1, P, C);
      // An object read from its end is one JSON.parse accepts from where the reader says it
      // starts, with the same counts.
      if (start >= 0) {
        const back = { first: flatCounts.first, second: flatCounts.second };
        const from = b.toString('utf8', start);
        expect(parsed(from), from).toEqual(back);
      }
      // And the whole text, when it is such an object, is read, not left to the slow path.
      if (parsed(text) !== null && plainShape(text)) {
        read++;
        expect(start, text).toBe(Buffer.byteLength(prefix));
      }
    }
    expect(read).toBeGreaterThan(5_000);
  });
});

describe('the readers of the values after usage, from their end', () => {
  const SCALARS = ['null', 'true', 'false', '0', '7', '-0', '12.5', '-3e+2', '1E-9', '0.0', '""', '"default"', '"ünï 🙂"', '"}"', '"a,b:c"', `"${'x'.repeat(256)}"`];
  const NOT_READ = ['01', '1.', '.5', '-', '1e', '+1', '"\\u0041"', '"tab\there"', `"${'x'.repeat(257)}"`, 'nul', 'ull', '[1,]', '{"a":1,}',
    '[[1]]', '{"a":{}}', '{"a\\"":1}', '{"a" 1}', '[1 2]', '{,}', '[,]', `${'1'.repeat(33)}`];
  const JUNK = ['', ',', '}', '{', '"', '\\', ':', '0', 'e', 'l', ' ', '[', ']', '.', '-'];

  /** A random value: a scalar, or a flat object or array of them (`plain`: of the shape read). */
  function randomValue(r: () => number): string {
    const pick = pickWith(r);
    const space = (): string => pick(['', '', ' ', '\n']);
    const n = Math.floor(r() * 4);
    const kind = r();
    if (kind < 0.4) return pick(SCALARS);
    const items: string[] = [];
    for (let m = 0; m < n; m++) items.push(kind < 0.7 ? `${space()}${pick(SCALARS)}${space()}` : `${space()}"${pick(['k', 'usage', 'ü', ''])}"${space()}:${space()}${pick(SCALARS)}${space()}`);
    return kind < 0.7 ? `[${items.join(',')}${space()}]` : `{${items.join(',')}${space()}}`;
  }

  function startOf(b: Buffer): number {
    const last = b.length - 1;
    return b[last] === 0x7d || b[last] === 0x5d ? flatValueStartBackwards(b, last) : scalarStartBackwards(b, last);
  }

  it('reads scalars and flat objects and arrays of them, and nothing else', () => {
    // (A string's opening quote is the quote before its last when no backslash lies between: `"a\\"b"` is read as `"b"`, and
    // the caller, finding a backslash before it, reads no further.)
    expect(startOf(Buffer.from('{"k":"a\\"b"'))).toBe(8);
    for (const v of SCALARS) expect(startOf(Buffer.from(`{"k":${v}`)), v).toBe(5);
    for (const v of ['[]', '[ ]', '{}', '[1,"a",null]', '{ "a" : 1 , "b" : "c" }', '{"weight_version":"default"}']) expect(startOf(Buffer.from(`,"k":${v}`)), v).toBe(5);
    for (const v of NOT_READ) expect(startOf(Buffer.from(`{"k":${v}`)), v).toBe(-1);
  });

  it('agrees with JSON.parse on 20 000 random and mutated values: what is read is one value, and a plain value is read whole', () => {
    const r = xorshift(31);
    const pick = pickWith(r);
    let whole = 0;
    for (let i = 0; i < 20_000; i++) {
      let v = randomValue(r);
      let mutated = false;
      if (r() < 0.3) {
        const at = Math.floor(r() * v.length);
        v = v.slice(0, at) + pick(JUNK) + v.slice(at + (r() < 0.5 ? 1 : 0));
        mutated = true;
      }
      const prefix = '{"k":';
      const b = Buffer.from(prefix + v);
      if (b.length === prefix.length || /\s$/.test(v)) continue;
      const start = startOf(b);
      if (start >= 0) {
        const slice = b.toString('utf8', start);
        expect(() => JSON.parse(slice), v).not.toThrow();
      }
      let valid = true;
      try { JSON.parse(`${prefix}${v}}`); } catch { valid = false; }
      const first = prefix.length + Buffer.byteLength(v) - Buffer.byteLength(v.trimStart());
      if (valid && !mutated) {
        whole++;
        expect(start, v).toBe(first);
      }
      // A valid value that ends the text is read whole or not at all.
      if (valid && start >= 0) expect(start, v).toBe(first);
    }
    expect(whole).toBeGreaterThan(10_000);
  });
});
