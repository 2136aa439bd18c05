import { describe, expect, it } from 'vitest';
import { CUT_FROM, CUT_TO, findMemberCut, lastLargeValueEnd, memberCut, valueStartBackwards } from '../../../src/api/json-last-member.js';

const KEY = Buffer.from('"tools"');
const TOOLS = '[{"type":"function","function":{"name":"f","description":"say \\"]\\" or \\\\ or [{","parameters":{}}},[1,[2]]]';

/** The last large member of `text`: its value and the text without it, or null. */
function last(text: string, from = 0): { value: string; rest: string } | null {
  const b = Buffer.from(text);
  const end = lastLargeValueEnd(b, from, KEY);
  if (end < 0) return null;
  const start = valueStartBackwards(b, end, from, 1 << 20);
  if (start < 0 || !findMemberCut(b, from, start, end, KEY)) return null;
  return { value: b.toString('utf8', start, end + 1), rest: b.toString('utf8', 0, memberCut[CUT_FROM]) + b.toString('utf8', memberCut[CUT_TO]) };
}

describe('the last large member, read from the end', () => {
  it('finds the tools after the messages, before small members, first or alone, and leaves the rest parseable', () => {
    const cases: Array<[string, unknown]> = [
      [`{"model":"m","messages":[{"role":"user","content":"hi"}],"tools":${TOOLS}}`, { model: 'm', messages: [{ role: 'user', content: 'hi' }] }],
      [`{"messages":[{"role":"user","content":"hi"}],"tools" : ${TOOLS} , "temperature":0.2,"stop":["END"],"metadata":{"a":"b"},"stream":true,"user":null}`,
        { messages: [{ role: 'user', content: 'hi' }], temperature: 0.2, stop: ['END'], metadata: { a: 'b' }, stream: true, user: null }],
      [`{"tools":${TOOLS},"model":"m"}`, { model: 'm' }],
      [` {\n "tools":\n${TOOLS}\n}\n`, {}],
    ];
    for (const [text, rest] of cases) {
      const f = last(text);
      expect(f, text).not.toBeNull();
      expect(JSON.parse(f!.value), text).toEqual(JSON.parse(TOOLS));
      expect(JSON.parse(f!.rest), text).toEqual(rest);
    }
    // After a byte order mark (the caller starts at 3).
    const bom = `\uFEFF{"model":"m","tools":${TOOLS}}`;
    const b = Buffer.from(bom);
    const end = lastLargeValueEnd(b, 3, KEY);
    const start = valueStartBackwards(b, end, 3, 1 << 20);
    expect(findMemberCut(b, 3, start, end, KEY)).toBe(true);
    expect(JSON.parse(b.toString('utf8', 3, memberCut[CUT_FROM]) + b.toString('utf8', memberCut[CUT_TO]))).toEqual({ model: 'm' });
  });

  it('finds no tools when the last large member is another, a small member is named tools, or the end is not readable', () => {
    for (const text of [
      `{"tools":${TOOLS},"messages":[{"role":"user","content":"hi"}]}`,
      `{"messages":[{"role":"user","content":"hi"}],"tools":${TOOLS},"tools":[]}`,
      `{"messages":[{"role":"user","content":"say \\"tools\\": ${TOOLS.replace(/"/g, '\\"')}"}]}`,
      `{"model":"m","my_tools":${TOOLS}}`,
      `{"model":"m","other":${TOOLS}}`,
      `{"model":"m","tools":${TOOLS},"user":"${'x'.repeat(300)}"}`,
      `{"model":"m","tools":${TOOLS},"stop":["\\n"]}`,
      `{"model":"m","tools":${TOOLS}`,
      `["tools",${TOOLS}]`,
      '{"model":"m","n":1}',
    ]) expect(last(text), text).toBeNull();
  });

  it('steps back over strings that hold brackets, quotes and backslashes, within the bound it is given', () => {
    const b = Buffer.from(`{"a":1,"tools":${TOOLS}}`);
    const end = b.length - 2;
    expect(valueStartBackwards(b, end, 0, 1 << 20)).toBe(b.indexOf('[{'));
    expect(valueStartBackwards(b, end, 0, TOOLS.length - 2)).toBe(-1);
    expect(valueStartBackwards(b, end, b.indexOf('[{') + 1, 1 << 20)).toBe(-1);
  });
});
