/**
 * The calls call-instructions.ts counts: small pieces of a request's path, each on the inputs a
 * router request of the bench meets (the mock backend's answer head and usage object, a fresh
 * request id), plus the Node globals' cost next to their imported bindings. Each returns a number
 * so that its work cannot be dropped.
 */
import { Buffer as ImportedBuffer } from 'node:buffer';
import { performance as importedPerformance } from 'node:perf_hooks';
import { readFlatCounts } from 'inference-router/api/flat-json-counts';
import { newRequestId } from 'inference-router/http/request-id';
import { responseHeaderName } from 'inference-router/http/upstream-headers';
import { HeadMarks, headersAt, scanHead } from 'inference-router/upstream/http1/head-lines';

const HEAD = ImportedBuffer.from('HTTP/1.1 200 OK\r\nDate: Thu, 26 Nov 2026 21:00:00 GMT\r\nuWebSockets: 20\r\n'
  + 'content-type: application/json\r\nx-mock-pod: pod-a\r\nContent-Length: 300\r\n\r\n', 'latin1');
const HEAD_TEXT = HEAD.toString('latin1', 0, HEAD.length - 2);
const MARKS = new HeadMarks();
const USAGE = ImportedBuffer.from('{"id":"cmpl-1","choices":[{"text":"hello","index":0}],"usage":{"prompt_tokens":5,"completion_tokens":16,"total_tokens":21}}');
const USAGE_START = USAGE.indexOf('{"prompt_tokens"');
const PROMPT_TOKENS = ImportedBuffer.from('prompt_tokens');
const COMPLETION_TOKENS = ImportedBuffer.from('completion_tokens');

/** The header names of HEAD, cut fresh as the parser cuts them for each answer. */
function freshNames(): string[] {
  scanHead(HEAD, 0, MARKS);
  return headersAt(HEAD_TEXT, MARKS);
}

export const CALLS: Readonly<Record<string, () => number>> = {
  /** The head's header lines cut from its text (the baseline of the next case). */
  'answer head: cut names': () => freshNames().length,
  /** The same, then each name's forwarding decision as the exchange makes it. */
  'answer head: cut names and forward decisions': () => {
    const h = freshNames();
    let n = 0;
    for (let i = 0; i < h.length; i += 2) if (responseHeaderName(h[i]) !== null) n++;
    return n;
  },
  'scanHead of the answer head': () => scanHead(HEAD, 0, MARKS),
  'readFlatCounts of the usage object': () => (readFlatCounts(USAGE, USAGE_START, USAGE.length - 2, PROMPT_TOKENS, COMPLETION_TOKENS) ? 1 : 0),
  'newRequestId': () => newRequestId().length,
  'performance.now(), the global': () => (performance.now() > 0 ? 1 : 0),
  'performance.now(), imported': () => (importedPerformance.now() > 0 ? 1 : 0),
  'Buffer.isBuffer, the global': () => (Buffer.isBuffer(HEAD) ? 1 : 0),
  'Buffer.isBuffer, imported': () => (ImportedBuffer.isBuffer(HEAD) ? 1 : 0),
};
