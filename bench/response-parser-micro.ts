/**
 * Micro benchmark of the http1 client's response parser on the bench mock's answer (a head of
 * five headers and a 312-byte JSON body):
 *  1. the whole answer in one read, as nearly every answer of an inference server arrives: the
 *     head read from its bytes (head-lines.ts scanHead);
 *  2. the same answer in two reads, split inside the head: the head read from its text
 *     (headerLines), the reading every head took before the byte reading;
 *  3. the head alone, whole.
 *
 * Run: npm run build && node dist/bench/response-parser-micro.js
 */
import { performance } from 'node:perf_hooks';
import { ResponseParser, type ParserSink } from 'inference-router/upstream/http1/response-parser';
import { takesNoArguments } from './cli-args.js';

takesNoArguments('Usage: node dist/bench/response-parser-micro.js   (no options)');

const N = 1_000_000;
const BODY = '{"id":"cmpl-mock-95224","object":"text_completion","created":1795684340,"model":"sf-model","pod":"mock","choices":[{"index":0,"text":"tok tok tok tok tok tok tok tok tok tok tok tok tok tok tok tok ","logprobs":null,"finish_reason":"length"}],"usage":{"prompt_tokens":5,"completion_tokens":16,"total_tokens":21}}';
const HEAD = `HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nx-mock-pod: mock\r\nDate: Thu, 26 Nov 2026 09:12:19 GMT\r\nuWebSockets: 20\r\nContent-Length: ${BODY.length}\r\n\r\n`;
const ANSWER = Buffer.from(HEAD + BODY, 'latin1');
const SPLIT = HEAD.indexOf('Date');
const FIRST = ANSWER.subarray(0, SPLIT);
const REST = ANSWER.subarray(SPLIT);
const HEAD_ONLY = Buffer.from(HEAD.replace(`Content-Length: ${BODY.length}`, 'Content-Length: 0'), 'latin1');

let seen = 0;
const sink: ParserSink = {
  onHead(status, headers) { seen += status + headers.length; },
  onBody(chunk) { seen += chunk.length; },
  onEnd() { seen++; },
};
const parser = new ResponseParser(sink, 16 * 1024);

function time(name: string, fn: () => void): number {
  for (let i = 0; i < 200_000; i++) fn(); // warm-up
  const t0 = performance.now();
  for (let i = 0; i < N; i++) fn();
  const ns = ((performance.now() - t0) * 1e6) / N;
  console.log(`${name.padEnd(52)} ${ns.toFixed(0).padStart(6)} ns/response`);
  return ns;
}

const whole = time('answer in one read (head read from its bytes)', () => {
  parser.reset(false);
  parser.execute(ANSWER);
});
const split = time('answer in two reads (head read from its text)', () => {
  parser.reset(false);
  parser.execute(FIRST);
  parser.execute(REST);
});
time('head alone, in one read', () => {
  parser.reset(false);
  parser.execute(HEAD_ONLY);
});
console.log(`one read / two reads: ${(whole / split).toFixed(2)}`);
if (seen === 0) throw new Error('the sink saw nothing');
