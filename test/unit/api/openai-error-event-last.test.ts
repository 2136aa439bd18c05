import { describe, expect, it } from 'vitest';
import { lastEventErrorMessage, opensWithError } from '../../../src/api/openai-error-event.js';
import { ResponsesSseScanner } from '../../../src/api/openai-responses-sse.js';
import { SseUsageScanner } from '../../../src/api/openai-sse-usage.js';
import { GeneratedTextRecorder } from '../../helpers/generated-text-recorder.js';

/**
 * An error event whose `error` member is not its first: not seen by the per-event test on the first
 * bytes, it is looked for in the stream's last event (before `[DONE]`, or before the stream ends).
 */
const LATE = [
  // As OpenRouter sends it: a chunk, its choice ended with finish_reason "error".
  ['a chunk with the error between its id and its choices', '{"id":"gen-1","object":"chat.completion.chunk","created":1795000000,"model":"m","provider":"p","error":{"code":"server_error","message":"Provider disconnected"},"choices":[{"index":0,"delta":{"content":""},"finish_reason":"error"}]}', 'Provider disconnected'],
  ['an error after the id', '{"id":"c1","error":{"message":"late"}}', 'late'],
  ['an error after the object, json.dumps', '{"object": "chat.completion.chunk", "error": {"message": "CUDA error", "code": 500}}', 'CUDA error'],
  ['a string error after others', '{"id":"c1","error":"Request failed during generation","error_type":"generation"}', 'Request failed during generation'],
  ['"object": "error" after others', '{"message":"engine dead","object":"error"}', 'engine dead'],
] as const;

/** Events that are no error, though their text says "error". */
const CLEAN = [
  '{"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"error"},"finish_reason":null}]}',
  '{"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"{\\"error\\": {\\"message\\": \\"x\\"}}"},"finish_reason":null}]}',
  '{"id":"c1","object":"text_completion","choices":[{"index":0,"text":"\\"error\\": 1","finish_reason":"error"}]}',
  '{"id":"c1","choices":[{"index":0,"error":{"message":"nested"}}]}',
  '{"id":"c1","choices":[],"usage":{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3},"error":null}',
  '{"id":"c1","error":""}',
  '{"id":"c1","error_type":"x","errors":["error"]}',
  '["error"]',
  '"error"',
  '{"id":"c1","error":{"message":"cut',
];

const CHUNK = (text: string): string => `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', choices: [{ index: 0, delta: { content: text }, finish_reason: null }], usage: null })}\n\n`;
const USAGE = 'data: {"id":"c1","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}}\n\n';

/** Feeds `text` in pieces of `size` bytes; returns the scanner's pod error and what it forwarded. */
function scan(scanner: SseUsageScanner, text: string, size: number): { out: string; podError: string | null } {
  const bytes = Buffer.from(text);
  const parts: Buffer[] = [];
  for (let i = 0; i < bytes.length; i += size) parts.push(Buffer.from(scanner.push(Buffer.from(bytes.subarray(i, i + size)))));
  parts.push(scanner.end());
  return { out: Buffer.concat(parts).toString(), podError: scanner.podError };
}

describe('an error member after others (lastEventErrorMessage)', () => {
  it.each(LATE)('%s: not seen on the first bytes, read from the whole event', (_what, data, message) => {
    expect(opensWithError(data)).toBe(false);
    expect(lastEventErrorMessage(data)).toBe(message);
  });

  it('events that merely contain "error", or nest it, or set it empty, or are not JSON objects, are none', () => {
    for (const data of CLEAN) expect(lastEventErrorMessage(data), data).toBeNull();
  });
});

describe('the chat and completions reader tests the stream\'s last event', () => {
  const scanners = (): SseUsageScanner[] => [
    new SseUsageScanner({ stripUsageChunk: false }), new SseUsageScanner({ stripUsageChunk: true }),
    new SseUsageScanner({ stripUsageChunk: false }, new GeneratedTextRecorder()), new SseUsageScanner({ stripUsageChunk: true }, new GeneratedTextRecorder(), 1),
  ];

  it.each(LATE)('%s: before [DONE], or as the stream\'s end, in pieces of any size; forwarded unchanged', (_what, data, message) => {
    for (const text of [`${CHUNK('a')}${CHUNK('b')}data: ${data}\n\ndata: [DONE]\n\n`, `${CHUNK('a')}data: ${data}\n\n`, `${CHUNK('a')}data: ${data}`]) {
      for (const size of [1, 5, 64, text.length]) {
        for (const scanner of scanners()) {
          const r = scan(scanner, text, size);
          expect(r.out).toBe(text);
          expect(r.podError, `${text} in pieces of ${size}`).toBe(message);
        }
      }
    }
  });

  it('a stream whose events merely contain "error" has none, with or without [DONE] or its usage', () => {
    const body = CLEAN.map((data) => `data: ${data}\n\n`).join('');
    for (const clean of CLEAN) {
      for (const text of [`${body}data: ${clean}\n\n${USAGE}data: [DONE]\n\n`, `${CHUNK('a')}data: ${clean}\n\ndata: [DONE]\n\n`, `${CHUNK('a')}data: ${clean}\n\n`]) {
        for (const scanner of scanners()) expect(scan(scanner, text, 7).podError, text).toBeNull();
      }
    }
  });

  it('only the last event is tested: an error member after others in an earlier one is not seen', () => {
    const text = `${CHUNK('a')}data: ${LATE[1][1]}\n\n${CHUNK('b')}data: [DONE]\n\n`;
    for (const scanner of scanners()) expect(scan(scanner, text, 9).podError).toBeNull();
  });

  it('an error the first bytes found is kept; the last event is not tested again', () => {
    const text = `data: {"error":{"message":"first"}}\n\ndata: ${LATE[1][1]}\n\ndata: [DONE]\n\n`;
    for (const scanner of scanners()) expect(scan(scanner, text, 4).podError).toBe('first');
  });

  it('a Responses stream\'s last event is not read for a chat-shaped error member', () => {
    const scanner = new ResponsesSseScanner(new GeneratedTextRecorder());
    const text = 'event: response.completed\ndata: {"type":"response.completed","sequence_number":3,"error":{"message":"x"},"response":{"status":"completed","error":null}}\n\n';
    expect(scan(scanner, text, 11).podError).toBeNull();
  });
});
