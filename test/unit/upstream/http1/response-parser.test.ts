import { describe, expect, it } from 'vitest';
import { Http1Error } from '../../../../src/upstream/http1/errors.js';
import { ResponseParser, type ParserSink } from '../../../../src/upstream/http1/response-parser.js';
import { FIXTURES, MALFORMED, type Fixture } from './fixtures.js';

class Sink implements ParserSink {
  status = 0;
  headers: string[] = [];
  parts: Buffer[] = [];
  trailers: string[] | null | undefined = undefined;
  heads = 0;
  onHead(status: number, headers: string[]): void { this.status = status; this.headers = headers; this.heads++; }
  onBody(chunk: Buffer): void { this.parts.push(Buffer.from(chunk)); }
  onEnd(trailers: string[] | null): void { this.trailers = trailers; }
}

/** Feeds `pieces` in order; returns the sink, bytes consumed in total and whether finish() was needed. */
function run(f: Pick<Fixture, 'closeDelimited' | 'head'>, pieces: Buffer[]): { sink: Sink; consumed: number; parser: ResponseParser } {
  const sink = new Sink();
  const parser = new ResponseParser(sink, 16 * 1024);
  parser.reset(f.head === true);
  let consumed = 0;
  for (const p of pieces) consumed += parser.execute(p);
  if (f.closeDelimited) parser.finish();
  return { sink, consumed, parser };
}

function check(f: Fixture, pieces: Buffer[]): void {
  const { sink, consumed, parser } = run(f, pieces);
  expect(sink.heads).toBe(1);
  expect(sink.status).toBe(f.status);
  expect(Buffer.concat(sink.parts).toString('latin1')).toBe(f.body);
  expect(sink.trailers).toEqual(f.trailers);
  expect(consumed).toBe(f.bytes.length);
  expect(parser.keepAlive).toBe(f.keepAlive);
}

describe('ResponseParser', () => {
  for (const f of FIXTURES) {
    it(`${f.name}: whole, split at every byte position, and one byte at a time`, () => {
      check(f, [f.bytes]);
      for (let k = 1; k < f.bytes.length; k++) check(f, [f.bytes.subarray(0, k), f.bytes.subarray(k)]);
      check(f, [...f.bytes].map((c) => Buffer.from([c])));
    });
  }

  it('keeps raw header names and values as received, including repeats', () => {
    const { sink } = run({ closeDelimited: false }, [FIXTURES[0].bytes]);
    expect(sink.headers).toEqual(['Content-Type', 'application/json', 'Content-Length', '27', 'X-Multi', 'a', 'X-Multi', 'b']);
  });

  it('says whether every byte of the final head is ASCII, whole or split at every byte, after an interim head', () => {
    const heads: [string, boolean][] = [
      ['HTTP/1.1 200 OK\r\nContent-Length: 2\r\nX-A: plain\r\n\r\nok', true],
      ['HTTP/1.1 200 OK\r\nContent-Length: 2\r\nX-A: caf\u00e9\r\n\r\nok', false],
      ['HTTP/1.1 200 \u00c9t\u00e9\r\nContent-Length: 2\r\n\r\nok', false],
      ['HTTP/1.1 100 Continue\r\nX-Early: \u00ff\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok', true],
      ['HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\nX-Late: a\tb\u0080\r\n\r\nok', false],
    ];
    for (const [text, ascii] of heads) {
      const bytes = Buffer.from(text, 'latin1');
      for (let k = 0; k < bytes.length; k++) {
        const { sink, parser } = run({ closeDelimited: false }, k === 0 ? [bytes] : [bytes.subarray(0, k), bytes.subarray(k)]);
        expect(sink.status, text).toBe(200);
        expect(parser.headAscii, `${JSON.stringify(text)} split at ${k}`).toBe(ascii);
      }
    }
  });

  it('stops at the end of a response and reports the bytes that follow it as not consumed', () => {
    const f = FIXTURES[0];
    const { consumed } = run(f, [Buffer.concat([f.bytes, Buffer.from('HTTP/1.1 200 OK\r\n')])]);
    expect(consumed).toBe(f.bytes.length);
  });

  it('gives a HEAD answer no body even with a content-length', () => {
    const bytes = Buffer.from('HTTP/1.1 200 OK\r\nContent-Length: 1234\r\n\r\n');
    const { sink, consumed, parser } = run({ closeDelimited: false, head: true }, [bytes]);
    expect(sink.trailers).toBeNull();
    expect(consumed).toBe(bytes.length);
    expect(parser.contentLength).toBe(1234);
  });

  it('a 304 has no body', () => {
    const bytes = Buffer.from('HTTP/1.1 304 Not Modified\r\nContent-Length: 10\r\n\r\n');
    const { sink, consumed } = run({ closeDelimited: false }, [bytes]);
    expect(sink.status).toBe(304);
    expect(sink.trailers).toBeNull();
    expect(consumed).toBe(bytes.length);
  });

  it('uses chunked framing when both transfer-encoding and content-length are present, and gives up the connection', () => {
    const bytes = Buffer.from('HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n');
    const { sink, parser } = run({ closeDelimited: false }, [bytes]);
    expect(Buffer.concat(sink.parts).toString()).toBe('hello');
    expect(parser.keepAlive).toBe(false);
  });

  it('an ended connection before the end of a length-delimited body is an error', () => {
    const sink = new Sink();
    const parser = new ResponseParser(sink, 16 * 1024);
    parser.reset(false);
    parser.execute(Buffer.from('HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc'));
    expect(() => parser.finish()).toThrow(/closed the connection before the response ended/);
  });

  for (const m of MALFORMED) {
    it(`malformed: ${m.name} → error with a clear message, at any split`, () => {
      for (const k of [m.bytes.length, 1, Math.floor(m.bytes.length / 2)]) {
        let err: unknown = null;
        try {
          run({ closeDelimited: false }, [m.bytes.subarray(0, k), m.bytes.subarray(k)]);
        } catch (e) {
          err = e;
        }
        expect(err).toBeInstanceOf(Http1Error);
        expect((err as Http1Error).code).toBe(m.code ?? 'HTTP1_MALFORMED_RESPONSE');
        expect((err as Error).message).toMatch(/^malformed response from upstream: /);
        expect((err as Error).message).toMatch(m.message);
      }
    });
  }
});
