import { describe, expect, it } from 'vitest';
import { errorFieldMessage } from '../../../src/api/openai-error-event.js';
import { ResponsesSseScanner } from '../../../src/api/openai-responses-sse.js';
import { SseUsageScanner } from '../../../src/api/openai-sse-usage.js';
import { fieldValue } from '../../../src/api/sse-lines.js';
import { GeneratedTextRecorder } from '../../helpers/generated-text-recorder.js';

/**
 * llama.cpp's server writes the error that ends its stream as an SSE field named `error` instead of
 * `data` (`error: {"code":500,"message":"…","type":"server_error"}`, a blank line, then
 * `data: [DONE]`). The SDKs ignore the field; the router reads it as the pod's error.
 */
const MESSAGE = 'the request exceeds the available context size, try increasing it';
const ERROR_LINE = `error: {"code":400,"message":"${MESSAGE}","type":"exceed_context_size_error","n_prompt_tokens":5000,"n_ctx":4096}`;

const CHUNK = (text: string, tail = ''): string => `data: ${JSON.stringify({ choices: [{ finish_reason: null, index: 0, delta: { content: text } }], created: 1795000000, id: 'chatcmpl-x', model: 'm', object: 'chat.completion.chunk' })}${tail}\n\n`;
const STREAM = `${CHUNK('Hello')}${CHUNK(' world')}${ERROR_LINE}\n\ndata: [DONE]\n\n`;

/** Feeds `parts` (split points in the bytes of `text`) to a scanner; returns what it forwarded. */
function feed(scanner: SseUsageScanner, text: string, cuts: readonly number[]): string {
  const bytes = Buffer.from(text);
  const out: Buffer[] = [];
  let from = 0;
  for (const cut of [...cuts, bytes.length]) {
    if (cut > from) out.push(Buffer.from(scanner.push(Buffer.from(bytes.subarray(from, cut)))));
    from = cut;
  }
  out.push(scanner.end());
  return Buffer.concat(out).toString();
}

describe('an SSE field line by name (fieldValue)', () => {
  const name = Buffer.from('error', 'latin1');
  const value = (line: string): string | null => {
    const buf = Buffer.from(`xx${line}yy`);
    return fieldValue(buf, 2, buf.length - 2, name);
  };

  it('the value after the colon, one space removed; empty without a colon', () => {
    expect(value('error: {"a":1}')).toBe('{"a":1}');
    expect(value('error:{"a":1}')).toBe('{"a":1}');
    expect(value('error:  two spaces')).toBe(' two spaces');
    expect(value('error:')).toBe('');
    expect(value('error')).toBe('');
    expect(value('error: é')).toBe('é');
  });

  it('another field, a longer name or a comment is not it', () => {
    for (const line of ['errors: x', 'error-x: y', 'erro: x', 'err', 'event: error', ': error: x', 'data: error: x', ' error: x', 'Error: x']) {
      expect(value(line), line).toBeNull();
    }
  });
});

describe('the message of an error field (errorFieldMessage)', () => {
  it('its message, its error\'s, its JSON, or the text itself', () => {
    expect(errorFieldMessage(ERROR_LINE.slice('error: '.length))).toBe(MESSAGE);
    expect(errorFieldMessage('{"code":500,"message":"Internal error","type":"server_error"}')).toBe('Internal error');
    expect(errorFieldMessage('{"error":{"message":"nested"}}')).toBe('nested');
    expect(errorFieldMessage('{"code":500}')).toBe('{"code":500}');
    expect(errorFieldMessage('"a string"')).toBe('a string');
    expect(errorFieldMessage('model crashed')).toBe('model crashed');
  });

  it('an empty one says nothing', () => {
    for (const v of ['', 'null', 'false', '""', '{"error":null}']) expect(errorFieldMessage(v), v).toBeNull();
  });
});

describe('the stream readers find the error field wherever the bytes are split', () => {
  it('split in two at every byte, in keep and strip mode, with or without a GeneratedText: forwarded unchanged, the message read', () => {
    for (const strip of [false, true]) {
      for (const recorder of [null, new GeneratedTextRecorder()]) {
        for (let cut = 0; cut <= STREAM.length; cut++) {
          const scanner = new SseUsageScanner({ stripUsageChunk: strip }, recorder);
          expect(feed(scanner, STREAM, [cut])).toBe(STREAM);
          expect(scanner.podError, `cut at ${cut}`).toBe(MESSAGE);
        }
      }
    }
  });

  it('a byte at a time, with CRLF or CR line ends, and with the stream ending on the field without [DONE] or its line end', () => {
    const ones = (n: number): number[] => Array.from({ length: n }, (_, i) => i + 1);
    for (const text of [STREAM.replace(/\n/g, '\r\n'), STREAM.replace(/\n/g, '\r'), `${CHUNK('a')}${ERROR_LINE}\n\n`, `${CHUNK('a')}${ERROR_LINE}`]) {
      const scanner = new SseUsageScanner({ stripUsageChunk: true }, new GeneratedTextRecorder());
      expect(feed(scanner, text, ones(text.length - 1))).toBe(text);
      expect(scanner.podError, JSON.stringify(text)).toBe(MESSAGE);
    }
  });

  it('the first error is kept: an error field after an error event, or another error field, changes nothing', () => {
    const scanner = new SseUsageScanner({ stripUsageChunk: false });
    feed(scanner, `data: {"error":{"message":"first"}}\n\n${ERROR_LINE}\n\nerror: second\n\n`, []);
    expect(scanner.podError).toBe('first');
    const fields = new SseUsageScanner({ stripUsageChunk: false });
    feed(fields, `${ERROR_LINE}\n\nerror: second\n\n`, []);
    expect(fields.podError).toBe(MESSAGE);
  });

  it('an error field in a Responses stream too', () => {
    const scanner = new ResponsesSseScanner(new GeneratedTextRecorder());
    const text = `event: response.output_text.delta\ndata: {"type":"response.output_text.delta","delta":"a"}\n\n${ERROR_LINE}\n\n`;
    expect(feed(scanner, text, [7, 60])).toBe(text);
    expect(scanner.podError).toBe(MESSAGE);
  });

  it('the text "error" in a token, in other fields or in a comment is no error', () => {
    const text = `${CHUNK('error: boom')}${CHUNK('error')}${CHUNK('\nerror: {"message":"x"}\n')}: error: a comment\n\nevent: error\ndata: {"id":"e","choices":[]}\n\n`
      + 'errors: x\n\nerror-code: 500\n\nid: error\n\nerror:\n\ndata: [DONE]\n\n';
    for (let cut = 0; cut <= text.length; cut += 3) {
      const scanner = new SseUsageScanner({ stripUsageChunk: false }, new GeneratedTextRecorder());
      expect(feed(scanner, text, [cut])).toBe(text);
      expect(scanner.podError, `cut at ${cut}`).toBeNull();
    }
  });
});
