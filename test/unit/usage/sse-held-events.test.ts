import { describe, expect, it } from 'vitest';
import { GeneratedTextRecorder as Recorder } from '../../helpers/generated-text-recorder.js';
import { mayCarryUsage, readEventUsage } from '../../../src/api/openai-event-usage.js';
import { HELD_EVENT_CHARS, SseUsageScanner } from '../../../src/api/openai-sse-usage.js';

const chunk = (text: string, extra: Record<string, unknown> = {}): string =>
  `data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', choices: [{ index: 0, delta: { content: text } }], ...extra })}\n\n`;
const usageOnly = (completion: number | null): string =>
  `data: ${JSON.stringify({ id: 'c', choices: [], usage: completion === null ? { prompt_tokens: 4 } : { prompt_tokens: 4, completion_tokens: completion } })}\n\n`;

function run(events: string[], strip: boolean, cutEvery = 0, tokensPerEvent: number | null = null): { rec: Recorder; s: SseUsageScanner; out: string; log: string[][] } {
  const rec = new Recorder();
  const s = new SseUsageScanner({ stripUsageChunk: strip }, rec, tokensPerEvent);
  const bytes = Buffer.from(events.join(''));
  const parts: Buffer[] = [];
  const log: string[][] = [];
  const step = cutEvery > 0 ? cutEvery : bytes.length;
  for (let i = 0; i < bytes.length; i += step) {
    parts.push(Buffer.from(s.push(Buffer.from(bytes.subarray(i, i + step)))));
    log.push([...rec.pieces]);
  }
  parts.push(s.end());
  return { rec, s, out: Buffer.concat(parts).toString(), log };
}

/** What reading every event as it passes gives (the behaviour the held events must match). */
function reference(events: string[]): { text: string; stopped: boolean; prompt: number | null; completion: number | null } {
  const rec = new Recorder();
  const into = { promptTokens: null as number | null, completionTokens: null as number | null, text: '', generated: null };
  for (const e of events) {
    const data = e.startsWith('data: ') ? e.slice(6).trimEnd() : '';
    readEventUsage(data, into, rec);
  }
  return { text: rec.pieces.join(''), stopped: rec.stopped, prompt: into.promptTokens, completion: into.completionTokens };
}

describe('SSE events held unparsed until their text is needed', () => {
  it('tells events that can hold no usage', () => {
    expect(mayCarryUsage('{"choices":[{"delta":{"content":"x"}}]}')).toBe(false);
    expect(mayCarryUsage('{"choices":[{"delta":{"content":"x"}}],"usage":null}')).toBe(false);
    expect(mayCarryUsage('{"choices":[], "usage" :\n null}')).toBe(false);
    expect(mayCarryUsage('{"choices":[{"text":"usage"}],"x":"usage"}')).toBe(false); // a value, not a key
    expect(mayCarryUsage('{"choices":[],"usage":{"completion_tokens":1}}')).toBe(true);
    expect(mayCarryUsage('{"usage":null,"usage":{"completion_tokens":1}}')).toBe(true);
    expect(mayCarryUsage('{"usage":5}')).toBe(true);
    expect(mayCarryUsage('{"us\\u0061ge":{"completion_tokens":1}}')).toBe(true);
    expect(mayCarryUsage('{"\\u0075sage":5}')).toBe(true);
    // Escaped text (as Python's json.dumps writes what is not ASCII) cannot spell the key.
    expect(mayCarryUsage('{"choices":[{"delta":{"content":"caf\\u00e9 \\u4e2d\\u6587"}}]}')).toBe(false);
    expect(mayCarryUsage('{"choices":[{"delta":{"content":"\\ud83d\\ude00"}}],"usage":null}')).toBe(false);
  });

  it('a stream of escaped text is held unparsed and its text read in the end', () => {
    const e = (t: string): string => `data: {"choices":[{"index":0,"delta":{"content":"${t}"}}]}\n\n`;
    const { rec, log } = run([e('caf\\u00e9 '), e('\\u4e2d\\u6587'), 'data: [DONE]\n\n'], false, 7);
    expect(log.at(-1)).toEqual([]); // nothing was parsed while the events passed
    expect(rec.pieces.join('')).toBe('café 中文');
  });

  it('a stream that ends with its usage never hands the content text on (it is not needed)', () => {
    const { rec, s, out } = run([chunk('a'), chunk('b', { usage: null }), chunk('c', { usage: null }), usageOnly(3), 'data: [DONE]\n\n'], true);
    expect(rec.stopped).toBe(true);
    expect(rec.calls).toBe(0);
    expect(s.usage()).toMatchObject({ promptTokens: 4, completionTokens: 3 });
    expect(out).toBe(chunk('a') + chunk('b', { usage: null }) + chunk('c', { usage: null }) + 'data: [DONE]\n\n'); // the usage chunk stripped
  });

  it('a stream without usage hands every piece on, in order, by the end', () => {
    const { rec, log } = run([chunk('one '), chunk('two '), chunk('three'), 'data: [DONE]\n\n'], false, 7);
    expect(log.at(-1)).toEqual([]); // nothing was parsed while the events passed
    expect(rec.pieces.join('')).toBe('one two three');
    expect(rec.stopped).toBe(false);
  });

  it('usage without a completion count reads the held events first (order kept), then its own text', () => {
    const events = [chunk('x'), chunk('y'), chunk('z', { usage: { prompt_tokens: 2 } }), chunk('w')];
    const { rec, s } = run(events, false);
    expect(rec.pieces).toEqual(['x', 'y', 'z', 'w']);
    expect(s.usage()).toMatchObject({ promptTokens: 2, completionTokens: null });
  });

  it(`more than ${HELD_EVENT_CHARS} characters of held data are read as they pass (bounded memory)`, () => {
    const piece = 'p'.repeat(1000);
    const events = Array.from({ length: 80 }, () => chunk(piece));
    const { rec, log } = run(events, false, 4096);
    const handedBeforeEnd = log.at(-1)!.length;
    expect(handedBeforeEnd).toBeGreaterThan(0);
    expect(handedBeforeEnd).toBeLessThan(80);
    expect(rec.pieces).toHaveLength(80);
  });

  it(`expecting a count (tokens per event given), past ${HELD_EVENT_CHARS} characters events are dropped unread; a count at the end is all that is read`, () => {
    const piece = 'p'.repeat(1000);
    const events = [...Array.from({ length: 80 }, () => chunk(piece, { usage: null })), usageOnly(80), 'data: [DONE]\n\n'];
    const { rec, s, out } = run(events, true, 4096, 1);
    expect(rec.calls).toBe(0);
    expect(rec.uncountedTokens).toBe(0);
    expect(rec.stopped).toBe(true);
    expect(s.droppedEvents).toBeGreaterThan(10);
    expect(s.usage()).toMatchObject({ promptTokens: 4, completionTokens: 80 });
    expect(out).toBe(events.filter((e) => e !== usageOnly(80)).join('')); // every byte forwarded, the usage chunk stripped
  });

  it('expecting a count that never comes: each dropped event (not [DONE]) is estimated at the tokens per event given', () => {
    const piece = 'q'.repeat(1000);
    const events = [...Array.from({ length: 80 }, () => chunk(piece)), 'data: [DONE]\n\n'];
    const { rec, s } = run(events, false, 4096, 1);
    const u = s.usage();
    expect(u.completionTokens).toBeNull();
    expect(rec.uncountedTokens).toBe(80);
    expect(rec.pieces).toEqual([]);
    expect(s.droppedEvents).toBe(80);
    expect(s.textEvents).toBe(80);
    const dense = run(events, false, 4096, 2.5);
    dense.s.usage();
    expect(dense.rec.uncountedTokens).toBe(200);
    // Under the bound nothing is dropped: the same stream cut short is read as without the option.
    const short = run(events.slice(0, 20), false, 4096, 1);
    short.s.usage();
    expect(short.rec.uncountedTokens).toBe(0);
    expect(short.rec.pieces).toHaveLength(20);
    expect(short.s.textEvents).toBe(20);
  });

  it('expecting a count: usage without one hands the dropped events on before its own text; a later count stops it all', () => {
    const piece = 'r'.repeat(1000);
    const events = [...Array.from({ length: 70 }, () => chunk(piece)), chunk('mid', { usage: { prompt_tokens: 4 } }), chunk('tail'), usageOnly(72)];
    const rec = new Recorder();
    const s = new SseUsageScanner({ stripUsageChunk: false }, rec, 1);
    s.push(Buffer.from(events.slice(0, 71).join('')));
    expect(rec.uncountedTokens).toBe(70);
    expect(rec.pieces).toEqual(['mid']);
    s.push(Buffer.from(events.slice(71).join('')));
    s.end();
    expect(rec.stopped).toBe(true);
    expect(s.usage()).toMatchObject({ completionTokens: 72 });
    expect(s.textEvents).toBe(71); // the usage chunk with a count is not one, nor is 'mid' (it carries usage)
  });

  it('usage() in the middle of a stream (an upstream error) hands the held text on first', () => {
    const rec = new Recorder();
    const s = new SseUsageScanner({ stripUsageChunk: false }, rec);
    s.push(Buffer.from(chunk('half ') + chunk('way')));
    expect(rec.pieces).toEqual([]);
    const u = s.usage();
    expect(u.generated).toBe(rec);
    expect(rec.pieces.join('')).toBe('half way');
  });

  it('events with \\u escapes are read at once (a "usage" key could be spelled with them)', () => {
    const escaped = 'data: {"choices":[],"us\\u0061ge":{"prompt_tokens":1,"completion_tokens":2}}\n\n';
    const { rec, s, out } = run([chunk('a'), escaped], true);
    expect(s.usage()).toMatchObject({ promptTokens: 1, completionTokens: 2 });
    expect(rec.stopped).toBe(true);
    expect(out).toBe(chunk('a'));
  });

  it('agrees with reading every event at once on 500 random streams, cut at random sizes', () => {
    let x = 99;
    const r = (): number => {
      x ^= x << 13; x >>>= 0; x ^= x >>> 17; x ^= x << 5; x >>>= 0;
      return x / 2 ** 32;
    };
    const texts = ['a', 'bb ', 'ü', '🙂', '"usage"', '\\u', ''];
    for (let n = 0; n < 500; n++) {
      const events: string[] = [];
      const count = Math.floor(r() * 12);
      for (let i = 0; i < count; i++) {
        const k = r();
        if (k < 0.7) events.push(chunk(texts[Math.floor(r() * texts.length)] + i, r() < 0.5 ? { usage: null } : {}));
        else if (k < 0.8) events.push(chunk(`c${i}`, { usage: r() < 0.5 ? { prompt_tokens: 3, completion_tokens: i } : { prompt_tokens: 3 } }));
        else if (k < 0.9) events.push(usageOnly(r() < 0.7 ? i : null));
        else events.push(r() < 0.5 ? 'data: [DONE]\n\n' : ': comment\n\n');
      }
      const want = reference(events);
      for (const [strip, tokensPerEvent] of [[false, null], [true, null], [false, 1], [true, 3]] as const) {
        // Streams this short stay under the bound: expecting a count changes nothing.
        const { rec, s } = run(events, strip, 1 + Math.floor(r() * 200), tokensPerEvent);
        const u = s.usage();
        expect({ text: rec.pieces.join(''), stopped: rec.stopped, p: u.promptTokens, c: u.completionTokens }, JSON.stringify(events))
          .toEqual({ text: want.text, stopped: want.stopped, p: want.prompt, c: want.completion });
      }
    }
  });
});
