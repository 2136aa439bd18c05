import { Buffer } from 'node:buffer';
import { describe, expect, it } from 'vitest';
import { eventWithoutMember } from '../../../src/api/sse-member-cut.js';

const USAGE = Buffer.from('usage');
const U = '{"prompt_tokens":5,"completion_tokens":16,"total_tokens":21}';

/** The event without its data's top-level `usage` members, or null when nothing was cut. */
function cut(event: string): string | null {
  const out = eventWithoutMember(Buffer.from(event), USAGE);
  return out === null ? null : out.toString();
}

/** The data of an event as an SSE client reads it: its data lines' values joined with "\n". */
function dataOf(event: string): string {
  return event.split(/\r\n|\r|\n/).filter((l) => l.startsWith('data')).map((l) => l.replace(/^data:? ?/, '')).join('\n');
}

/** The event's data must parse to what it was without `usage`, and every non-data line stays. */
function checkedCut(event: string): string {
  const out = cut(event);
  expect(out).not.toBeNull();
  const expected = JSON.parse(dataOf(event)) as Record<string, unknown>;
  delete expected.usage;
  const parsed = JSON.parse(dataOf(out!)) as Record<string, unknown>;
  expect(parsed).toEqual(expected);
  expect(Object.keys(parsed)).not.toContain('usage');
  const others = (e: string): string[] => e.split(/\r\n|\r|\n/).filter((l) => !l.startsWith('data'));
  expect(others(out!)).toEqual(others(event));
  return out!;
}

describe('eventWithoutMember', () => {
  it('one data line: the member is cut, every other byte stays', () => {
    expect(cut(`id: 1\ndata: {"id":"c1","usage":${U},"timings":{}}\n\n`)).toBe('id: 1\ndata: {"id":"c1","timings":{}}\n\n');
    expect(cut('data: {"id":"c1"}\n\n')).toBeNull();
  });

  it('JSON spread over several data lines (joined with "\\n"): the member is cut from the lines it is on', () => {
    for (const eol of ['\n', '\r\n', '\r']) {
      const lines = (...l: string[]): string => l.join(eol) + eol + eol;
      expect(checkedCut(lines('data: {"id":"c1",', `data: "usage":${U}}`))).toBe(lines('data: {"id":"c1"', 'data: }'));
      expect(checkedCut(lines('data: {"id":"c1",', 'data: "usage":', `data: ${U},`, 'data: "b":2}'))).toBe(lines('data: {"id":"c1",', 'data: ', 'data: ', 'data: "b":2}'));
      expect(checkedCut(lines('data: {"usage":{"prompt_tokens":5,', ': a comment', 'id: 9', 'data: "completion_tokens":16},"b":2}')))
        .toBe(lines('data: {', ': a comment', 'id: 9', 'data: "b":2}'));
      expect(checkedCut(lines('data:{"a":1', 'data:,"usage":null', 'data', 'data:}'))).toBe(lines('data:{"a":1', 'data:', 'data', 'data:}'));
    }
  });

  it('a key named twice: every top-level usage member is cut', () => {
    expect(checkedCut(`data: {"id":"c1","usage":null,"x":1,"usage":${U}}\n\n`)).toBe('data: {"id":"c1","x":1}\n\n');
    expect(checkedCut(`data: {"usage":${U},"usage":${U}}\n\n`)).toBe('data: {}\n\n');
    expect(checkedCut(`data: {"usage":1,"usage":2,"a":3}\n\n`)).toBe('data: {"a":3}\n\n');
    expect(checkedCut(`data: {"a":0,"usage":1 , "usage":2,"b":3,"usage":4}\n\n`)).toBe('data: {"a":0,"b":3}\n\n');
  });

  it('a key spelled with escapes is the same key', () => {
    expect(checkedCut(`data: {"id":"c1","\\u0075sage":${U}}\n\n`)).toBe('data: {"id":"c1"}\n\n');
    expect(checkedCut(`data: {"us\\u0061g\\u0065":${U},"id":"c1"}\n\n`)).toBe('data: {"id":"c1"}\n\n');
    expect(checkedCut(`data: {"usage":null,"\\u0055sage":1,"\\u0075sage":${U}}\n\n`)).toBe('data: {"\\u0055sage":1}\n\n');
    expect(cut('data: {"us\\\\age":1}\n\n')).toBeNull();
  });
});
