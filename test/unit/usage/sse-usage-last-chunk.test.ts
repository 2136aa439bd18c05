import { describe, expect, it } from 'vitest';
import { SseUsageScanner } from '../../../src/api/openai-sse-usage.js';
import { GeneratedTextRecorder } from '../../helpers/generated-text-recorder.js';

/**
 * Servers that put `usage` on the last content chunk (the one with finish_reason; llama.cpp's
 * server does, with `timings` after it) instead of a separate usage-only chunk: when the router
 * asked for usage on the client's behalf (strip mode), the member is cut out of that event before
 * it is forwarded and the rest of the event goes byte for byte; the count is still read.
 */

const USAGE = '{"completion_tokens":2,"prompt_tokens":9,"total_tokens":11,"prompt_tokens_details":{"cached_tokens":0}}';
const chunk = (content: string): string =>
  `data: {"choices":[{"finish_reason":null,"index":0,"delta":{"content":${JSON.stringify(content)}}}],"created":1,"id":"c1","object":"chat.completion.chunk"}`;
const lastWith = (usage: string): string =>
  `data: {"choices":[{"finish_reason":"stop","index":0,"delta":{}}],"created":1,"id":"c1","object":"chat.completion.chunk"${usage},"timings":{"prompt_n":9,"predicted_ms":1.5}}`;

function feed(bytes: Buffer, cuts: number[], strip: boolean, maxEventBytes?: number): { out: string; scanner: SseUsageScanner } {
  const scanner = new SseUsageScanner({ stripUsageChunk: strip, maxEventBytes });
  const parts: Buffer[] = [];
  let from = 0;
  for (const cut of [...cuts, bytes.length]) {
    const piece = Buffer.from(bytes.subarray(from, cut));
    parts.push(Buffer.from(scanner.push(piece)));
    piece.fill(0x21); // the caller may reuse its buffer
    from = cut;
  }
  parts.push(scanner.end());
  return { out: Buffer.concat(parts).toString(), scanner };
}

function everySplit(text: string, strip: boolean, check: (out: string, scanner: SseUsageScanner) => void, maxEventBytes?: number): void {
  const bytes = Buffer.from(text);
  for (let at = 0; at <= bytes.length; at++) {
    const { out, scanner } = feed(bytes, [at], strip, maxEventBytes);
    check(out, scanner);
  }
  const { out, scanner } = feed(bytes, Array.from({ length: bytes.length }, (_, i) => i), strip, maxEventBytes);
  check(out, scanner);
}

describe('usage on the last content chunk', () => {
  for (const eol of ['\n', '\r\n', '\r']) {
    it(`strip mode: the usage member is cut, everything else is forwarded as it came (${JSON.stringify(eol)})`, () => {
      const events = (usage: string): string => [chunk('Hel'), chunk('lo'), lastWith(usage), 'data: [DONE]'].map((e) => e + eol + eol).join('');
      const sent = events(`,"usage":${USAGE}`);
      const expected = events('');
      everySplit(sent, true, (out, scanner) => {
        expect(out).toBe(expected);
        expect(scanner.completionTokens).toBe(2);
        expect(scanner.promptTokens).toBe(9);
        expect(scanner.strippedEvents).toBe(0);
      });
      // Keep mode (the client asked for usage itself): untouched.
      everySplit(sent, false, (out, scanner) => {
        expect(out).toBe(sent);
        expect(scanner.completionTokens).toBe(2);
      });
    });
  }

  it('the event\'s other fields and a comment stay; the cut JSON parses to the event without usage', () => {
    const data = `{"id":"c1", "usage" : ${USAGE} , "choices":[{"index":0,"delta":{"content":"x"},"finish_reason":"stop"}]}`;
    const sent = `data: ${JSON.stringify({ choices: [{ index: 0, delta: { content: 'w' } }] })}\n\nevent: message\nid: 7\n: note\ndata:${data}\nretry: 10\n\ndata: [DONE]\n\n`;
    everySplit(sent, true, (out, scanner) => {
      const cut = '{"id":"c1", "choices":[{"index":0,"delta":{"content":"x"},"finish_reason":"stop"}]}';
      expect(out).toBe(sent.replace(data, cut));
      const parsed = JSON.parse(data) as Record<string, unknown>;
      delete parsed.usage;
      expect(JSON.parse(cut)).toEqual(parsed);
      expect(scanner.completionTokens).toBe(2);
    });
  });

  it('the last event, without a blank line after it at the end of the stream, is cut too', () => {
    const sent = `${chunk('a')}\n\n${lastWith(`,"usage":${USAGE}`)}\n`;
    everySplit(sent, true, (out) => {
      expect(out).toBe(`${chunk('a')}\n\n${lastWith('')}\n`);
    });
  });

  it('a usage-only chunk is still removed whole; "usage":null members are left alone', () => {
    const withNull = `data: {"choices":[{"index":0,"delta":{"content":"a"}}],"usage":null}\n\n`;
    const sent = `${withNull}${lastWith(`,"usage":${USAGE}`)}\n\ndata: {"choices":[],"usage":${USAGE}}\n\ndata: [DONE]\n\n`;
    everySplit(sent, true, (out, scanner) => {
      expect(out).toBe(`${withNull}${lastWith('')}\n\ndata: [DONE]\n\n`);
      expect(scanner.strippedEvents).toBe(1);
    });
  });

  it('an event whose JSON spans data lines: the member is cut from each line it is on, the lines stay', () => {
    const lines = (usage: string): string => `data: {"choices":[{"index":0,"delta":{"content":"a"}}]${usage}}\n\ndata: [DONE]\n\n`;
    const twoLines = lines(`,\ndata: "usage":${USAGE}`);
    everySplit(twoLines, true, (out, scanner) => {
      expect(out).toBe(lines('\ndata: '));
      expect(scanner.completionTokens).toBe(2);
    });
    everySplit(twoLines, false, (out) => expect(out).toBe(twoLines));
  });

  it('an event that outgrew the bound before it ended: forwarded as it comes, its usage cut as it passes and read there', () => {
    const pad = (usage: string): string => `${chunk('a')}\n\n${lastWith(usage).replace('"created":1', `"created":1,"pad":"${'p'.repeat(300)}"`)}\n\ndata: [DONE]\n\n`;
    const long = pad(`,"usage":${USAGE}`);
    const eventStart = chunk('a').length + 2;
    // More than the bound (256) of it arrived before its end (the line is not read: too long), or less.
    for (const at of [eventStart + 257, eventStart + 300, eventStart + 400, 0, 50, eventStart + 256, long.length]) {
      const { out, scanner } = feed(Buffer.from(long), [at], true, 256);
      expect(out, `at ${at}`).toBe(pad(''));
      expect(scanner.completionTokens).toBe(2);
      expect(scanner.promptTokens).toBe(9);
    }
    for (const at of [eventStart + 300, 0]) expect(feed(Buffer.from(long), [at], false, 256).out).toBe(long); // keep mode: untouched
    // In pieces of 100 bytes: held, then passing; and a stream that ends inside such an event.
    const pieces = Array.from({ length: Math.floor(long.length / 100) }, (_, i) => (i + 1) * 100);
    expect(feed(Buffer.from(long), pieces, true, 256).out).toBe(pad(''));
    const cutShort = long.slice(0, long.indexOf('\n\ndata: [DONE]'));
    const { out, scanner } = feed(Buffer.from(cutShort), [eventStart + 300], true, 256);
    expect(out).toBe(pad('').slice(0, pad('').indexOf('\n\ndata: [DONE]')));
    expect(scanner.completionTokens).toBe(2);
  });

  it('a key named twice, the last one null: every usage member is cut all the same (the count is the last one\'s: none)', () => {
    const twice = (usage: string): string => `${chunk('a')}\n\n${lastWith(usage)}\n\ndata: [DONE]\n\n`;
    everySplit(twice(`,"usage":${USAGE},"usage":null`), true, (out) => {
      expect(out).toBe(twice(''));
    });
    const nullOnly = twice(',"usage":null');
    everySplit(nullOnly, true, (out) => expect(out).toBe(nullOnly));
    // As the router reads a stream: with its generated text counted (events parsed only when they may carry usage).
    const scanner = new SseUsageScanner({ stripUsageChunk: true }, new GeneratedTextRecorder());
    const out = Buffer.concat([scanner.push(Buffer.from(twice(`,"usage":${USAGE},"usage":null`))), scanner.end()]).toString();
    expect(out).toBe(twice(''));
  });
});
