import { describe, expect, it } from 'vitest';
import { SseUsageScanner } from '../../../src/api/openai-sse-usage.js';
import { openAiStreamErrorEvent } from '../../../src/api/openai-error.js';
import { RouterError } from '../../../src/errors.js';
import { GeneratedTextRecorder } from '../../helpers/generated-text-recorder.js';

/**
 * The error event a stream the router cuts ends with (StreamUsageReader.closingEvent): added
 * only where it leaves every event the client got intact, and then read as one more event.
 * Checked against an SSE parser as the WHATWG spec (and the OpenAI SDKs) reads a stream: lines
 * end with CRLF, LF or CR; a blank line dispatches the event when it has data, and resets its
 * type either way.
 */

/** The type and data (`type|data`) of every event the bytes dispatch; a last line without its end is not read. */
function dispatched(text: string): string[] {
  const out: string[] = [];
  let data: string[] = [];
  let type = '';
  const lines = text.split(/\r\n|\r|\n/);
  lines.pop(); // the last line has no end yet (or is '' after the last end)
  for (const line of lines) {
    if (line === '') {
      if (data.length > 0) out.push(`${type}|${data.join('\n')}`);
      data = [];
      type = '';
      continue;
    }
    if (line.startsWith(':')) continue;
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'data') data.push(value);
    if (field === 'event') type = value;
  }
  return out;
}

const CUT = openAiStreamErrorEvent(new RouterError('upstream_error', 'upstream failed on pod p: ECONNRESET read ECONNRESET', 502));
const CUT_DATA = dispatched(CUT.toString())[0];

const usage = JSON.stringify({ id: 'c', choices: [], usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 } });
const chunk = (t: string): string => JSON.stringify({ id: 'c', choices: [{ index: 0, delta: { content: t } }], usage: null });

/** Streams with every shape of line end and event: comments, `event:` fields, multi-line data, the usage chunk. */
const STREAMS: readonly string[] = ['\n', '\r\n', '\r'].flatMap((eol) => [
  [`data: ${chunk('Hi')}`, `data: ${chunk(' there')}`, `data: ${usage}`, 'data: [DONE]'].map((e) => `${e}${eol}${eol}`).join(''),
  [': keep-alive', `event: delta${eol}data: ${chunk('a')}`, `data: {"choices":${eol}data: [{"delta":{"content":"b"}}]}`, `id: 7${eol}retry: 10${eol}data: ${usage}`, 'data: [DONE]']
    .map((e) => `${e}${eol}${eol}`).join(''),
]);

/**
 * Feeds `stream` cut at `at` (as one or two chunks), then asks for the closing event: returns
 * what the client got (the scanner's output) and the closing bytes (null when refused).
 */
function cutAt(stream: Buffer, at: number, strip: boolean, maxEventBytes?: number): { got: string; closing: Buffer | null; complete: string[] } {
  const scanner = new SseUsageScanner({ stripUsageChunk: strip, maxEventBytes }, new GeneratedTextRecorder());
  const parts: Buffer[] = [];
  for (const piece of [stream.subarray(0, Math.floor(at / 2)), stream.subarray(Math.floor(at / 2), at)]) {
    if (piece.length > 0) parts.push(Buffer.from(scanner.push(Buffer.from(piece))));
  }
  const got = Buffer.concat(parts).toString('latin1');
  return { got, closing: scanner.closingEvent(CUT), complete: dispatched(got) };
}

describe('closingEvent: the router\'s error event after a stream cut anywhere', () => {
  for (const strip of [false, true]) {
    it(`${strip ? 'strip' : 'keep'} mode: when given, the client reads every event it got, then the error event; given at every event's end`, () => {
      for (const text of STREAMS) {
        const stream = Buffer.from(text, 'latin1');
        let given = 0;
        for (let at = 1; at <= stream.length; at++) {
          const { got, closing, complete } = cutAt(stream, at, strip);
          if (closing === null) {
            // Refused: the bytes end within an event that has data, or within a line.
            expect(dispatched(`${got}\n\n`).length > complete.length || !/(\r\n|\r|\n)$/.test(got), `${JSON.stringify(got)}`).toBe(true);
            continue;
          }
          given++;
          const after = dispatched(got + closing.toString('latin1'));
          expect(after, JSON.stringify(got)).toEqual([...complete, CUT_DATA]);
        }
        // Every event's end (and, in strip mode, every cut: a partial event is held back) gets one.
        const ends = text.split(/\r\n\r\n|\n\n|\r\r/).length - 1;
        expect(given).toBeGreaterThanOrEqual(strip ? stream.length - 1 : ends);
      }
    });
  }

  it('keep mode: an event of complete lines without data (a comment, an event: field) is ended by a blank line first; one with data, or a partial line, refuses', () => {
    const at = (text: string): string | null => {
      const scanner = new SseUsageScanner({ stripUsageChunk: false }, new GeneratedTextRecorder());
      scanner.push(Buffer.from(text));
      return scanner.closingEvent(CUT)?.toString() ?? null;
    };
    expect(at(`data: ${chunk('a')}\n\n`)).toBe(CUT.toString());
    expect(at(`data: ${chunk('a')}\r`)).toBeNull(); // a data line, its event not ended
    expect(at(`data: ${chunk('a')}\r\r`)).toBe(CUT.toString());
    expect(at('event: delta\n')).toBe(`\r\n${CUT}`);
    expect(at('event: delta\r')).toBe(`\r\n${CUT}`); // its \n may have been to come: CRLF ends it, then is the blank line
    expect(at(': ping\r\n')).toBe(`\r\n${CUT}`);
    expect(at(`data: ${chunk('a')}\n`)).toBeNull();
    expect(at('data: {"cho')).toBeNull();
    expect(at(': pi')).toBeNull();
  });

  it('an event past the bound: refused while it is forwarded as it comes, in either mode, and after one of its lines was skipped', () => {
    const long = `data: ${chunk('x'.repeat(400))}\n\n`;
    for (const strip of [false, true]) {
      const scanner = new SseUsageScanner({ stripUsageChunk: strip, maxEventBytes: 100 }, new GeneratedTextRecorder());
      scanner.push(Buffer.from(long.slice(0, 300)));
      expect(scanner.closingEvent(CUT), `strip ${strip}`).toBeNull();
      scanner.push(Buffer.from(long.slice(300)));
      expect(scanner.closingEvent(CUT)?.toString(), `strip ${strip}`).toBe(CUT.toString());
    }
    const skipped = new SseUsageScanner({ stripUsageChunk: false, maxEventBytes: 100 }, new GeneratedTextRecorder());
    skipped.push(Buffer.from(`event: delta\n${long.slice(0, -2)}\n`)); // its long line ended, its event not
    expect(skipped.closingEvent(CUT)).toBeNull();
  });

  it('the event is the OpenAI error shape on one data line, the registry\'s type and code', () => {
    expect(CUT.toString()).toBe('data: {"error":{"message":"upstream failed on pod p: ECONNRESET read ECONNRESET","type":"upstream_error","param":null,"code":"upstream_failed"}}\n\n');
    const stopping = openAiStreamErrorEvent(new RouterError('upstream_error', 'the router is stopping', 503, null, 'router_stopping'));
    expect(JSON.parse(dispatched(stopping.toString())[0].slice(1))).toEqual({ error: { message: 'the router is stopping', type: 'upstream_error', param: null, code: 'router_stopping' } });
  });
});
