import { describe, expect, it } from 'vitest';
import { CUT_FROM, CUT_TO, VALUE_END, VALUE_START, findMember, foundEntry, foundMember } from '../../../src/api/json-member-find.js';
import { JsonTextMemo } from '../../../src/api/json-text-memo.js';

const KEY = Buffer.from('tools');

/** The text without the found member, and the member's value, or null when not found. */
function find(text: string, memo: JsonTextMemo | null = null): { rest: string; value: string } | null {
  const b = Buffer.from(text);
  if (!findMember(b, 0, b.length, KEY, memo)) return null;
  return {
    rest: b.toString('utf8', 0, foundMember[CUT_FROM]) + b.toString('utf8', foundMember[CUT_TO]),
    value: b.toString('utf8', foundMember[VALUE_START], foundMember[VALUE_END]),
  };
}

describe('findMember', () => {
  it('finds the member first, in the middle, last, or alone, and what is left parses as the rest', () => {
    const cases: Array<[string, unknown]> = [
      ['{"tools":[1,{"a":"]}"}],"model":"m","n":2}', { model: 'm', n: 2 }],
      ['{"model":"m","tools":[1,{"a":"]}"}],"n":2}', { model: 'm', n: 2 }],
      ['{"model":"m","n":2,"tools":[1,{"a":"]}"}]}', { model: 'm', n: 2 }],
      ['{"tools":[1,{"a":"]}"}]}', {}],
      [' \n{ "model" : "m" ,\n "tools" : [1, {"a": "]}"}] ,\t"n" : 2 }\n', { model: 'm', n: 2 }],
      ['{"model":"m" , "tools" :\n[1,{"a":"]}"}]  }', { model: 'm' }],
      ['{"model":"m\\"tools\\":[]","\\u0074ools":[1,{"a":"]}"}]}', { model: 'm"tools":[]' }],
    ];
    for (const [text, rest] of cases) {
      const f = find(text);
      expect(f, text).not.toBeNull();
      expect(JSON.parse(f!.rest), text).toEqual(rest);
      expect(JSON.parse(f!.value), text).toEqual([1, { a: ']}' }]);
    }
  });

  it('does not find a member named twice, nested, only in a string, or in what is not an object', () => {
    for (const text of [
      '{"tools":[1],"model":"m","tools":[2]}',
      '{"model":"m","messages":[{"tools":[1]}]}',
      '{"model":"say \\"tools\\": [1]"}',
      '[{"tools":[1]}]',
      '{"tools":[1]',
      '{"tools":[1]} x',
      '{"tools":[1] "model":"m"}',
      '{}',
      '',
    ]) expect(find(text), text).toBeNull();
  });

  it('takes the end of a value the memo knows from its length, without stepping over it', () => {
    const memo = new JsonTextMemo(1 << 20);
    const tools = JSON.stringify(Array.from({ length: 40 }, (_, i) => ({ name: `t${i}` })));
    const text = `{"model":"m","tools":${tools},"n":1}`;
    const b = Buffer.from(text);
    expect(findMember(b, 0, b.length, KEY, memo)).toBe(true);
    expect(foundEntry).toBeNull();
    memo.add(b, foundMember[VALUE_START], foundMember[VALUE_END] - foundMember[VALUE_START], 'T');
    // The same bytes in another body, whose value the memo now knows.
    const other = Buffer.from(`{"tools":${tools} ,"model":"m2"}`);
    expect(findMember(other, 0, other.length, KEY, memo)).toBe(true);
    expect(foundEntry?.text).toBe('T');
    expect(other.toString('utf8', foundMember[VALUE_START], foundMember[VALUE_END])).toBe(tools);
    expect(JSON.parse(other.toString('utf8', 0, foundMember[CUT_FROM]) + other.toString('utf8', foundMember[CUT_TO]))).toEqual({ model: 'm2' });
    // Known bytes followed by what cannot follow a value: not an object this reads.
    const broken = Buffer.from(`{"tools":${tools}]}`);
    expect(findMember(broken, 0, broken.length, KEY, memo)).toBe(false);
    // A value that differs from the known one is stepped over.
    const changed = Buffer.from(`{"tools":${tools.slice(0, -1)},{"name":"more"}]}`);
    expect(findMember(changed, 0, changed.length, KEY, memo)).toBe(true);
    expect(foundEntry).toBeNull();
  });
});
