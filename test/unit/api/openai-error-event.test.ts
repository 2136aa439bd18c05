import { describe, expect, it } from 'vitest';
import {
  bounded, errorEventMessage, opensWithError, opensWithResponsesError, POD_MESSAGE_CHARS, responsesErrorEventMessage,
} from '../../../src/api/openai-error-event.js';
import { SseUsageScanner } from '../../../src/api/openai-sse-usage.js';
import { ResponsesSseScanner } from '../../../src/api/openai-responses-sse.js';
import { openAiApi } from '../../../src/api/openai.js';
import { responsesApi } from '../../../src/api/openai-responses.js';
import { GeneratedTextRecorder } from '../../helpers/generated-text-recorder.js';

/** Error events as servers send them in a stream they answered 200, and the message each gives. */
const CHAT_ERRORS: readonly [string, string, string][] = [
  ['OpenAI', '{"error":{"message":"The server had an error while processing your request.","type":"server_error","param":null,"code":null}}', 'The server had an error while processing your request.'],
  // vLLM and SGLang: Python's json.dumps (spaces after the separators); older vLLM nests its ErrorResponse, "object": "error" first.
  ['vLLM', '{"error": {"message": "CUDA out of memory", "type": "InternalServerError", "param": null, "code": 500}}', 'CUDA out of memory'],
  ['older vLLM, SGLang', '{"error": {"object": "error", "message": "guided decoding failed", "type": "BadRequestError", "param": null, "code": 400}}', 'guided decoding failed'],
  ['vLLM\'s bare ErrorResponse', '{"object":"error","message":"engine dead","type":"EngineDeadError","param":null,"code":500}', 'engine dead'],
  ['vLLM\'s bare ErrorResponse, json.dumps', '{"object" : "error", "message": "engine dead"}', 'engine dead'],
  ['TGI', '{"error":"Request failed during generation: Server error: CUDA error","error_type":"generation"}', 'Request failed during generation: Server error: CUDA error'],
  ['an error without a message', '{"error":{"code":503,"type":"overloaded"}}', '{"code":503,"type":"overloaded"}'],
];

/** Token chunks and other events that are not errors. */
const NOT_ERRORS = [
  '{"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"error"},"finish_reason":null}]}',
  '{"id":"c1","object":"text_completion","choices":[{"index":0,"text":"\\"error\\": 1","finish_reason":"error"}]}',
  '{"object":"chat.completion.chunk","error":null}',
  '{"error_type":"none"}',
  '{"errors":[1]}',
  '{"objects":"error"}',
  '{"object":"errors"}',
  '[DONE]',
  '',
  '{',
  // A top-level error after other members is not seen on the first bytes (the stream's last event is read for one: openai-error-event-last.test.ts).
  '{"id":"c1","error":{"message":"late"}}',
];

describe('a pod\'s own error event in a chat or completions stream', () => {
  it.each(CHAT_ERRORS)('%s: opens with an error, whose message is read', (_who, data, message) => {
    expect(opensWithError(data)).toBe(true);
    expect(errorEventMessage(data)).toBe(message);
  });

  it('token chunks, [DONE] and other events do not open with an error', () => {
    for (const data of NOT_ERRORS) expect(opensWithError(data), data).toBe(false);
  });

  it('an error member that is empty is no error (as the SDKs read it); data that is not JSON is its own message', () => {
    for (const data of ['{"error":null}', '{"error": ""}', '{"error":false}', '{"object":"error","x":1,"object":"chunk"}']) {
      expect(opensWithError(data), data).toBe(true);
      expect(errorEventMessage(data), data).toBeNull();
    }
    expect(errorEventMessage('{"error": {"message": "cut')).toBe('{"error": {"message": "cut');
  });

  it('a long message is kept to its first characters, a surrogate pair whole', () => {
    const long = 'x'.repeat(POD_MESSAGE_CHARS + 50);
    expect(errorEventMessage(JSON.stringify({ error: { message: long } }))).toBe(`${'x'.repeat(POD_MESSAGE_CHARS)}...`);
    const pair = `${'x'.repeat(POD_MESSAGE_CHARS - 1)}🙂 and more`;
    expect(bounded(pair)).toBe(`${'x'.repeat(POD_MESSAGE_CHARS - 1)}...`);
    expect(bounded('short')).toBe('short');
  });
});

describe('a pod\'s own error event in a Responses stream', () => {
  it('an error event and response.failed open with an error; their message is read', () => {
    const error = '{"type":"error","code":"ERR_SOMETHING","message":"Something went wrong","param":null,"sequence_number":7}';
    const failed = '{"type": "response.failed", "sequence_number": 9, "response": {"id": "r1", "status": "failed", "error": {"code": "server_error", "message": "The model failed"}, "usage": null}}';
    expect(opensWithResponsesError(error)).toBe(true);
    expect(responsesErrorEventMessage(error)).toBe('Something went wrong');
    expect(opensWithResponsesError(failed)).toBe(true);
    expect(responsesErrorEventMessage(failed)).toBe('The model failed');
    expect(responsesErrorEventMessage('{"type":"response.failed","response":{"error":null}}')).toBe('response.failed without an error');
  });

  it('other Responses events do not', () => {
    for (const data of [
      '{"type":"response.output_text.delta","sequence_number":4,"delta":"error"}',
      '{"type":"response.completed","response":{"error":null}}',
      '{"type":"response.incomplete","response":{"incomplete_details":{"reason":"max_output_tokens"}}}',
      '{"type":"errors"}',
      '{"error":{"message":"a chat error event"}}',
    ]) expect(opensWithResponsesError(data), data).toBe(false);
  });
});

const CHUNK = (text: string): string => `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', choices: [{ index: 0, delta: { content: text }, finish_reason: null }] })}\n\n`;

/** Feeds `text` in pieces of `size` bytes; returns the scanner and what it forwarded. */
function scan(scanner: SseUsageScanner, text: string, size: number): { out: string; scanner: SseUsageScanner } {
  const bytes = Buffer.from(text);
  const parts: Buffer[] = [];
  for (let i = 0; i < bytes.length; i += size) parts.push(Buffer.from(scanner.push(Buffer.from(bytes.subarray(i, i + size)))));
  parts.push(scanner.end());
  return { out: Buffer.concat(parts).toString(), scanner };
}

describe('the stream readers report the pod\'s error event and forward the stream unchanged', () => {
  const stream = `${CHUNK('Hello')}${CHUNK(' wor')}data: {"error": {"object": "error", "message": "CUDA error: an illegal memory access", "type": "InternalServerError", "param": null, "code": 500}}\n\n`
    + 'data: {"error":{"message":"a second one"}}\n\ndata: [DONE]\n\n';

  it('in keep and strip mode, with or without a GeneratedText, in pieces of any size: the first error\'s message', () => {
    for (const size of [1, 7, 64, stream.length]) {
      for (const strip of [false, true]) {
        for (const text of [null, new GeneratedTextRecorder()]) {
          const r = scan(new SseUsageScanner({ stripUsageChunk: strip }, text), stream, size);
          expect(r.out).toBe(stream);
          expect(r.scanner.podError).toBe('CUDA error: an illegal memory access');
        }
      }
    }
  });

  it('a stream without one has none; neither has an error event the stream carried as text of a token', () => {
    const clean = `${CHUNK('{"error": {"message": "x"}}')}data: [DONE]\n\n`;
    const r = scan(new SseUsageScanner({ stripUsageChunk: false }, new GeneratedTextRecorder()), clean, 5);
    expect(r.scanner.podError).toBeNull();
  });

  it('the API\'s readers: chat and completions, and Responses in its own shapes', () => {
    const chat = openAiApi.streamUsage(true, new GeneratedTextRecorder(), null, 0);
    chat.push(Buffer.from(`${CHUNK('a')}data: {"object":"error","message":"engine dead"}\n\ndata: [DONE]\n\n`));
    chat.end();
    expect(chat.podError).toBe('engine dead');
    const responses = responsesApi.streamUsage(false, new GeneratedTextRecorder(), null, 10);
    expect(responses).toBeInstanceOf(ResponsesSseScanner);
    responses.push(Buffer.from('event: response.output_text.delta\ndata: {"type":"response.output_text.delta","delta":"a"}\n\n'
      + 'event: error\ndata: {"type":"error","code":"server_error","message":"The model crashed","param":null}\n\n'));
    expect(responses.podError).toBe('The model crashed');
    // A chat-shaped error is not a Responses one.
    const other = responsesApi.streamUsage(false, new GeneratedTextRecorder(), null, 10);
    other.push(Buffer.from('data: {"error":{"message":"x"}}\n\n'));
    expect(other.podError).toBeNull();
  });
});
