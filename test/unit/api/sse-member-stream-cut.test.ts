import { Buffer } from 'node:buffer';
import { describe, expect, it } from 'vitest';
import { eventWithoutMember } from '../../../src/api/sse-member-cut.js';
import { HOLD_BYTES, SseMemberStreamCut, VALUE_BYTES } from '../../../src/api/sse-member-stream-cut.js';

const USAGE = Buffer.from('usage');
const U = '{"prompt_tokens":5,"completion_tokens":16,"nested":{"a":[1,"}]\\"",{"b":null}]},"total_tokens":21}';

/** The event through the streaming cut, pushed in pieces cut at `cuts`. */
function streamed(event: string, cuts: number[]): { out: string; value: string | null } {
  const bytes = Buffer.from(event);
  const cut = new SseMemberStreamCut(USAGE);
  const out: Buffer[] = [];
  let from = 0;
  for (const at of [...cuts, bytes.length]) {
    const piece = Buffer.from(bytes.subarray(from, at));
    const start = out.length;
    cut.push(piece, out);
    for (let i = start; i < out.length; i++) out[i] = Buffer.from(out[i]); // the pieces may be views of the input
    piece.fill(0x21);
    from = at;
  }
  cut.end(out);
  return { out: Buffer.concat(out).toString(), value: cut.value === null ? null : cut.value.toString() };
}

const EVENTS = [
  `data: {"id":"c1","choices":[{"index":0,"delta":{"content":"x"}}],"usage":${U},"timings":{"n":1}}\n\n`,
  `data: {"usage":${U},"id":"c1"}\n\n`,
  `data: {"id":"c1","usage":${U}}\n\n`,
  `data:{"usage":${U}}\r\n\r\n`,
  `data: { "id" : 1 , "usage" : ${U} , "b" : 2 }\r\r`,
  `data: {\t"usage":\t${U}\t,\t"id":1}\n\n`,
  `data: { "usage": ${U} }\n\n`,
  `data: {"usage":1,"usage":2,"a":3}\n\n`,
  `data: {"a":0,"usage":1 , "usage":"s,}\\"","b":3,"usage":${U}}\n\n`,
  `data: {"id":"c1","\\u0075sage":${U},"us\\u0061g\\u0065":true}\n\n`,
  `data: {"\\u0055sage":1,"usages":2,"x_usage":{"usage":3}}\n\n`,
  `event: message\nid: 7\n: note\ndata: {"id":"c1",\ndata: "usage":\n: between\ndata: ${U},\ndata: "b":2}\nretry: 10\n\n`,
  `data: {"a":1\ndata: ,"usage":null\ndata\ndata: }\n\n`,
  `data: {"usage":{"completion_tokens":3}\ndata:   ,  "a":1}\n\n`,
  `data: {"id":"c1","choices":[]}\n\n`,
  'data: [DONE]\n\n',
  'data: ["usage",{"usage":1}]\n\n', // not an object
  'data: {"a" 1,"usage":2}\n\n', // not JSON: from there on, as it came
];

/** The data of an event as an SSE client reads it, and its other lines. */
function read(event: string): { data: string; others: string[] } {
  const lines = event.split(/\r\n|\r|\n/);
  return {
    data: lines.filter((l) => l.startsWith('data')).map((l) => l.replace(/^data:? ?/, '')).join('\n'),
    others: lines.filter((l) => !l.startsWith('data')),
  };
}

/** Same data (parsed, when JSON) and the same other lines. */
function sameEvent(out: string, expected: string, what: string): void {
  const a = read(out);
  const b = read(expected);
  expect(a.others, what).toEqual(b.others);
  let parsed: unknown;
  try {
    parsed = JSON.parse(b.data);
  } catch {
    expect(a.data, what).toBe(b.data);
    return;
  }
  expect(JSON.parse(a.data), what).toEqual(parsed);
}

describe('SseMemberStreamCut', () => {
  it('cuts as the whole-event cut does, wherever the event is split (where white space stands by a comma: the same JSON, the other lines as they were)', () => {
    for (const event of EVENTS) {
      const whole = eventWithoutMember(Buffer.from(event), USAGE);
      const expected = whole === null ? event : whole.toString();
      // The whole-event cut takes a middle member with the comma after it, this one with the comma before it.
      const exact = !/\s,|,\s/.test(read(event).data);
      const bytes = Buffer.byteLength(event);
      const splits = [...Array.from({ length: bytes + 1 }, (_, at) => [at]), Array.from({ length: bytes }, (_, i) => i)];
      for (const cuts of splits) {
        const { out } = streamed(event, cuts);
        const what = `${JSON.stringify(event)} cut at ${cuts.length === 1 ? cuts[0] : 'every byte'}`;
        if (exact) expect(out, what).toBe(expected);
        else sameEvent(out, expected, what);
        expect(JSON.stringify(read(out).data).includes('"usage":{'), what).toBe(false);
      }
    }
  });

  it('the top level of the value of the last member cut is kept for the caller (strings and nested values emptied), whatever its size', () => {
    const top = '{"prompt_tokens":5,"completion_tokens":16,"nested":{},"total_tokens":21}';
    expect(streamed(EVENTS[0], [40]).value).toBe(top);
    expect(streamed(EVENTS[8], [3, 50]).value).toBe(top);
    expect(streamed(EVENTS[11], [10, 60]).value).toBe(top);
    expect(streamed(EVENTS[14], []).value).toBeNull();
    expect(streamed('data: {"usage":"a\\"b"}\n\n', [9]).value).toBe('""');
    expect(streamed('data: {"usage":[ "a" , [1] , {"b":2} , 3 ]}\n\n', [9]).value).toBe('["",[],{},3]');
    expect(streamed('data: {"usage":{ "k\\"" : "v" , "n" : [ {} ] , "m" : -1e3 }}\n\n', [9]).value).toBe('{"k\\"":"","n":[],"m":-1e3}');
    const long = `data: {"id":1,"usage":{"pad":"${'p'.repeat(VALUE_BYTES)}","a":[${'{"b":1},'.repeat(VALUE_BYTES)}{}],"completion_tokens":3}}\n\n`;
    const r = streamed(long, [1000]);
    expect(r.out).toBe('data: {"id":1}\n\n');
    expect(r.value).toBe('{"pad":"","a":[],"completion_tokens":3}');
    // Its top level over VALUE_BYTES: not a usage object, not kept.
    expect(streamed(`data: {"usage":{"n":${'1'.repeat(VALUE_BYTES)}}}\n\n`, [1000]).value).toBeNull();
    // White space inside its top level between two bytes of numbers or literals: malformed, not kept (not read as 42, true).
    expect(streamed('data: {"usage":{"completion_tokens":4 2}}\n\n', [9]).value).toBeNull();
    expect(streamed('data: {"usage":[tr\tue]}\n\n', [9]).value).toBeNull();
    expect(streamed('data: {"usage":{"a":1 , "b" : [1 2] ,"c":-1e3 }}\n\n', [9]).value).toBe('{"a":1,"b":[],"c":-1e3}');
  });

  it('more than HOLD_BYTES between a comma and the end of the next key: the comma waits alone, and goes with the member or before the key', () => {
    const far = (key: string): string => `data: {"a":1,${' '.repeat(HOLD_BYTES)}\n: note\ndata: ${' '.repeat(HOLD_BYTES - 5)}"${key}":{"completion_tokens":1}}\n\n`;
    for (const cuts of [[100], [HOLD_BYTES + 20, 2 * HOLD_BYTES + 10], Array.from({ length: 3 * HOLD_BYTES }, (_, i) => i)]) {
      const cut = streamed(far('usage'), cuts);
      expect(cut.out).toBe(`data: {"a":1${' '.repeat(HOLD_BYTES)}\n: note\ndata: ${' '.repeat(HOLD_BYTES - 5)}}\n\n`);
      expect(cut.value).toBe('{"completion_tokens":1}');
      expect(streamed(far('usagf'), cuts).out).toBe(`data: {"a":1${' '.repeat(HOLD_BYTES)}\n: note\ndata: ${' '.repeat(HOLD_BYTES - 5)},"usagf":{"completion_tokens":1}}\n\n`);
      // A key longer than HOLD_BYTES is not `usage`: it goes on as it came, after the comma.
      const long = far('k'.repeat(HOLD_BYTES));
      expect(streamed(long, cuts).out).toBe(long.replace(',', '').replace(`data: ${' '.repeat(HOLD_BYTES - 5)}`, `data: ${' '.repeat(HOLD_BYTES - 5)},`));
    }
    // The JSON stops being an object after such a comma: the comma, then the rest as it came.
    const broken = `data: {"a":1,${' '.repeat(HOLD_BYTES + 1)}x,"usage":1}\n\n`;
    expect(streamed(broken, [50]).out).toBe(broken.replace(',', '').replace(' x', ' ,x'));
  });
});
