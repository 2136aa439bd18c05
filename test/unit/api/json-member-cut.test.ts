import { Buffer } from 'node:buffer';
import { describe, expect, it } from 'vitest';
import { cutJsonMembers, memberCuts } from '../../../src/api/json-member-cut.js';

const USAGE = Buffer.from('usage');

/** `b` without the ranges of the last cut. */
function cutOut(b: Buffer): string {
  const parts: Buffer[] = [];
  let at = 0;
  for (let i = 0; i < memberCuts.length; i += 2) {
    parts.push(b.subarray(at, memberCuts[i]));
    at = memberCuts[i + 1];
  }
  parts.push(b.subarray(at));
  return Buffer.concat(parts).toString();
}

/** `json` without its top-level `usage` members, or null when it has none (or is not read). */
function without(json: string, key = USAGE): string | null {
  const b = Buffer.from(json);
  return cutJsonMembers(b, 0, b.length, key) === 0 ? null : cutOut(b);
}

/** The cut must leave valid JSON equal to the object without the member. */
function checked(json: string): string {
  const out = without(json);
  expect(out).not.toBeNull();
  const expected = JSON.parse(json) as Record<string, unknown>;
  delete expected.usage;
  expect(JSON.parse(out!)).toEqual(expected);
  return out!;
}

const U = '{"prompt_tokens":5,"completion_tokens":16,"total_tokens":21}';

describe('cutJsonMembers', () => {
  it('usage first, in the middle, last, alone', () => {
    expect(checked(`{"usage":${U},"id":"c1","choices":[]}`)).toBe('{"id":"c1","choices":[]}');
    expect(checked(`{"id":"c1","usage":${U},"timings":{"prompt_n":5}}`)).toBe('{"id":"c1","timings":{"prompt_n":5}}');
    expect(checked(`{"id":"c1","choices":[{"index":0}],"usage":${U}}`)).toBe('{"id":"c1","choices":[{"index":0}]}');
    expect(checked(`{"usage":${U}}`)).toBe('{}');
  });

  it('white space around the member: the rest is left as it was', () => {
    expect(checked(`{ "id" : 1 , "usage" : ${U} , "b" : 2 }`)).toBe('{ "id" : 1 , "b" : 2 }');
    expect(checked(`{\n  "id": 1,\n  "usage": ${U}\n}`)).toBe('{\n  "id": 1\n}');
    expect(checked(`{\t"usage":\t${U}\t,\t"id":1}`)).toBe('{\t"id":1}');
    expect(checked(`{ "usage": ${U} }`)).toBe('{  }');
  });

  it('usage with nested objects, arrays, strings holding brackets, quotes and escapes', () => {
    const nested = '{"prompt_tokens":5,"prompt_tokens_details":{"cached_tokens":0,"audio_tokens":null},"completion_tokens_details":{"reasoning_tokens":2,"x":[1,{"y":"}]"}]},"note":"a \\"quoted\\" }{ \\\\"}';
    expect(checked(`{"id":"c1","usage":${nested},"z":true}`)).toBe('{"id":"c1","z":true}');
    expect(checked(`{"usage":${nested},"z":[]}`)).toBe('{"z":[]}');
  });

  it('only a top-level member named exactly usage is cut', () => {
    expect(checked('{"choices":[{"delta":{"usage":1},"usage":{"a":1}}],"x_usage":2,"usage":{"a":2},"usages":3}'))
      .toBe('{"choices":[{"delta":{"usage":1},"usage":{"a":1}}],"x_usage":2,"usages":3}');
    expect(without('{"choices":[{"usage":{"a":1}}],"note":"\\"usage\\":{}"}')).toBeNull();
    expect(without('{"usage":1}', Buffer.from('other'))).toBeNull();
  });

  it('usage of any value type', () => {
    expect(checked('{"a":1,"usage":null,"b":2}')).toBe('{"a":1,"b":2}');
    expect(checked('{"a":1,"usage":"text, with } and ]","b":2}')).toBe('{"a":1,"b":2}');
    expect(checked('{"a":1,"usage":-1.5e3}')).toBe('{"a":1}');
    expect(checked('{"a":1,"usage":[1,[2,{"c":"]"}]],"b":2}')).toBe('{"a":1,"b":2}');
  });

  it('a range inside a larger buffer; what is not a JSON object, or is cut short, is not read', () => {
    const b = Buffer.from(`data: {"id":1,"usage":${U}}\n\n`);
    expect(cutJsonMembers(b, 6, b.length - 2, USAGE)).toBe(1);
    expect(cutOut(b)).toBe('data: {"id":1}\n\n');
    for (const bad of ['', '[]', '"usage"', `{"id":1,"usage":${U}`, '{"id":1,"usage":{"a":1}', '{"id":1,"usage":', '{"id" 1,"usage":{}}',
      '{"id":1 "usage":{}}', '{"usage":{}} trailing', '{"usage":"unterminated}', '{id:1,"usage":{}}']) {
      expect(without(bad), bad).toBeNull();
    }
  });

  it('whenSet: the members are cut only when one of them is not null', () => {
    const whenSet = (json: string): string | null => {
      const b = Buffer.from(json);
      return cutJsonMembers(b, 0, b.length, USAGE, true) === 0 ? null : cutOut(b);
    };
    expect(whenSet('{"a":1,"usage":null,"b":2}')).toBeNull();
    expect(whenSet('{"usage":null,"\\u0075sage":null}')).toBeNull();
    expect(whenSet('{"usage" : null ,"x":{"usage":1}}')).toBeNull();
    expect(whenSet('{"\\u0075sage":{"a":1},"usage":null}')).toBe('{}');
    expect(whenSet('{"a":1,"usage":null,"us\\u0061ge":false}')).toBe('{"a":1}');
    expect(whenSet('{"a":1,"usage":"null"}')).toBe('{"a":1}');
    expect(whenSet('{"a":1,"usage":0}')).toBe('{"a":1}');
  });

  it('a key named twice: both members are cut, wherever they stand', () => {
    expect(checked(`{"usage":null,"id":"c1","usage":${U}}`)).toBe('{"id":"c1"}');
    expect(checked(`{"usage":1,"usage":2}`)).toBe('{}');
    expect(checked(`{ "usage":1 , "usage":2 , "a":3 }`)).toBe('{ "a":3 }');
    expect(checked(`{"a":1,"usage":2,"usage":3,"b":4,"usage":5}`)).toBe('{"a":1,"b":4}');
  });

  it('a key spelled with escapes is read as a parser reads it', () => {
    expect(checked(`{"id":"c1","\\u0075sage":${U}}`)).toBe('{"id":"c1"}');
    expect(checked(`{"\\u0075\\u0073\\u0061\\u0067\\u0065":1,"id":"c1"}`)).toBe('{"id":"c1"}');
    expect(without('{"\\u0055sage":1,"us\\"age":2,"usage\\n":3}')).toBeNull();
  });
});
