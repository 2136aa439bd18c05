/**
 * The calls call-instructions.ts counts: small pieces of a request's path, each on the inputs a
 * router request of the bench meets (the mock backend's answer head and usage object, a fresh
 * request id), plus the Node globals' cost next to their imported bindings. Each returns a number
 * so that its work cannot be dropped.
 */
import { Buffer as ImportedBuffer } from 'node:buffer';
import { performance as importedPerformance } from 'node:perf_hooks';
import { readFlatCountsBackwards } from 'inference-router/api/flat-json-counts';
import { usageFromJson } from 'inference-router/api/openai-json-usage';
import { countPlain } from 'inference-router/tokens/bpe-count';
import { newRequestId } from 'inference-router/http/request-id';
import type { AccessRecord } from 'inference-router/observe/access-record';
import { writeJsonRecord } from 'inference-router/observe/access-log-line-bytes';
import { headerBlock, responseHeaderName } from 'inference-router/http/upstream-headers';
import { HeadMarks, headersAt, scanHead } from 'inference-router/upstream/http1/head-lines';
import { ResponseParser } from 'inference-router/upstream/http1/response-parser';
import { encodeRateHeaders } from 'inference-router/http/rate-headers';
import { requestHead } from 'inference-router/upstream/http1/request-head';
import type { Decision } from 'inference-router/ratelimit/limiter';
import { SseUsageScanner } from 'inference-router/api/openai-sse-usage';
import type { GeneratedText } from 'inference-router/api/inference-api';

const HEAD = ImportedBuffer.from('HTTP/1.1 200 OK\r\nDate: Thu, 26 Nov 2026 21:00:00 GMT\r\nuWebSockets: 20\r\n'
  + 'content-type: application/json\r\nx-mock-pod: pod-a\r\nContent-Length: 300\r\n\r\n', 'latin1');
const HEAD_TEXT = HEAD.toString('latin1', 0, HEAD.length - 2);
const MARKS = new HeadMarks();
const USAGE = ImportedBuffer.from('{"id":"cmpl-1","choices":[{"text":"hello","index":0}],"usage":{"prompt_tokens":5,"completion_tokens":16,"total_tokens":21}}');
const PROMPT_TOKENS = ImportedBuffer.from('prompt_tokens');
const COMPLETION_TOKENS = ImportedBuffer.from('completion_tokens');

const PARAGRAPH = ('The quick brown fox jumps over the lazy dog, while 42 curious engineers measure what it costs; '
  + "they don't guess. Each request's prompt is counted before it is admitted, and the count must be exact.\n").repeat(5).slice(0, 1000);

/** A limited route's decision, both directions limited (the bench's full router). */
const DECISION: Decision = {
  allowed: true, rejectedBy: null, retryAfterSeconds: 0,
  input: { limit: 100_000_000, remaining: 99_876_543, resetSeconds: 1 },
  output: { limit: 100_000_000, remaining: 99_812_345, resetSeconds: 1 },
};
/** Byte pieces of the lengths of the access log's fixed pieces, and a buffer to copy them into. */
const PIECE_16 = new Uint8Array(16).fill(0x61);
const PIECE_32 = new Uint8Array(32).fill(0x61);
const PIECE_64 = new Uint8Array(64).fill(0x61);
const PIECE_128 = new Uint8Array(128).fill(0x61);
const COPY_INTO = ImportedBuffer.alloc(4096);

/** A byte-by-byte copy loop: against TypedArray.prototype.set, which the access log's pieces go through. */
function loopCopy(buf: Uint8Array, at: number, src: Uint8Array): number {
  for (let k = 0; k < src.length; k++) buf[at + k] = src[k];
  return at + src.length;
}

/** A copy by DataView words, four bytes at a time, then the rest byte by byte. */
function wordCopy(dst: DataView, at: number, src: DataView, n: number): number {
  let k = 0;
  for (; k + 4 <= n; k += 4) dst.setInt32(at + k, src.getInt32(k, true), true);
  for (; k < n; k++) dst.setUint8(at + k, src.getUint8(k));
  return at + n;
}
const COPY_INTO_VIEW = new DataView(COPY_INTO.buffer, COPY_INTO.byteOffset, COPY_INTO.length);
const PIECE_VIEWS = [PIECE_16, PIECE_32, PIECE_64, PIECE_128].map((p) => new DataView(p.buffer, p.byteOffset, p.length));

/** An upstream connection's shared read buffer, holding one answer of the bench's size (head and body). */
const READ_BUFFER = ImportedBuffer.allocUnsafeSlow(64 * 1024);
const READ_LENGTH = 460;
/** Its ArrayBuffer, read once (a `.buffer` read is a call into C++). */
const READ_ARRAY_BUFFER = READ_BUFFER.buffer;

/** A request body as uWS hands it over (an ArrayBuffer it reuses after the callback), and where it is kept. */
const BODY_CHUNK = new ArrayBuffer(120);
const BODY_KEPT = ImportedBuffer.allocUnsafeSlow(120);

/** An access-log record as the bench's full router writes one (two pods in turn, a fresh request id each), and the batch it goes to. */
const RECORD: AccessRecord = {
  timestamp: 1_795_000_000_000, method: 'POST', path: '/v1/completions', protocol: 'HTTP/1.1', status_code: 200, error: null,
  model_name: 'sf-model', model_route: 'default/sf-route', model_server: 'default/sf-server', selected_pod: 'pod-a',
  request_id: '', request_id_made: true, input_tokens: 5, output_tokens: 16, duration_total: 1, duration_request_processing: 0,
  duration_upstream_processing: 1, duration_response_processing: 0,
};
const LOG_BATCH = ImportedBuffer.allocUnsafeSlow(4096);
let recordsWritten = 0;

/** Pods named as a larger deployment's are: more than the two the bench has. */
const PODS = Array.from({ length: 16 }, (_, i) => `sf-server-7d9f8c6b5-${String.fromCharCode(0x61 + i)}x2k9`);

function writeBenchRecord(): number {
  RECORD.request_id = newRequestId();
  RECORD.selected_pod = (recordsWritten & 1) === 0 ? 'pod-a' : 'pod-b';
  return writeRecord();
}

/** The same record, with 16 pods in turn. */
function writeRecordOfManyPods(): number {
  RECORD.request_id = newRequestId();
  RECORD.selected_pod = PODS[recordsWritten & 15];
  return writeRecord();
}

function writeRecord(): number {
  RECORD.timestamp += 0.05; // 20,000 records a second
  recordsWritten++;
  return writeJsonRecord(RECORD, LOG_BATCH, 0);
}

/**
 * A chat answer of vLLM of about `size` bytes, members in vLLM's order: usage, then the members
 * vLLM adds, null (its `model_dump()` keeps them).
 */
function vllmChatAnswer(size: number): Buffer {
  const head = '{"id":"chatcmpl-5f1c","object":"chat.completion","created":1764680000,"model":"meta-llama/Llama-3.1-8B-Instruct",'
    + '"choices":[{"index":0,"message":{"role":"assistant","content":"';
  const tail = '","refusal":null,"annotations":null,"audio":null,"function_call":null,"tool_calls":[],"reasoning":null},"logprobs":null,'
    + '"finish_reason":"stop","stop_reason":null,"token_ids":null}],"service_tier":null,"system_fingerprint":null,'
    + '"usage":{"prompt_tokens":12,"total_tokens":240,"completion_tokens":228,"prompt_tokens_details":null},'
    + '"prompt_logprobs":null,"prompt_token_ids":null,"kv_transfer_params":null}';
  const words = 'The quick brown fox jumps over the lazy dog. ';
  const content = words.repeat(Math.ceil(size / words.length)).slice(0, Math.max(0, size - head.length - tail.length));
  return ImportedBuffer.from(head + content + tail);
}
const VLLM_1K = vllmChatAnswer(1024);
const VLLM_100K = vllmChatAnswer(100 * 1024);
/** SGLang's chat answer: usage, then `metadata` with the weight version. */
const SGLANG_1K = ImportedBuffer.from(VLLM_1K.toString().replace(/,"service_tier".*$/, '')
  + ',"usage":{"prompt_tokens":12,"total_tokens":240,"completion_tokens":228,"prompt_tokens_details":null,"reasoning_tokens":0},'
  + '"metadata":{"weight_version":"default"}}');

/** The usage object alone, the bytes readFlatCountsBackwards reads. */
const USAGE_OBJECT = USAGE.subarray(USAGE.indexOf('{"prompt_tokens"'), USAGE.length - 1);

const CR = 13;
const LF = 10;

/** Walks a head from CR to CR up to the blank line; the index past it. */
function crLoop(b: Buffer): number {
  const n = b.length;
  let j = 0;
  for (;;) {
    while (j < n && b[j] !== CR) j++;
    if (j + 2 >= n) return -1;
    if (b[j + 2] === CR) return j + 4;
    j += 2;
  }
}

/** As crLoop, stopping at CR, LF or NUL (as scanHead does). */
function lineEndLoop(b: Buffer): number {
  const n = b.length;
  let j = 0;
  let c = 0;
  for (;;) {
    while (j < n && !((c = b[j]) <= CR && (c === CR || c === LF || c === 0))) j++;
    if (j + 2 >= n) return -1;
    if (b[j + 2] === CR) return j + 4;
    j += 2;
  }
}

function byteSum(b: Buffer): number {
  let s = 0;
  for (let i = b.length - 1; i >= 0; i--) s += b[i];
  return s;
}

/** The header names of HEAD, cut fresh as the parser cuts them for each answer. */
function freshNames(): string[] {
  scanHead(HEAD, 0, MARKS);
  return headersAt(HEAD_TEXT, MARKS);
}

/** The header list of the last head ANSWER_PARSER read. */
let parsedHeaders: string[] = [];
/** The upstream client's parser, reading HEAD as the answer to a HEAD request (the head alone is the whole answer). */
const ANSWER_PARSER = new ResponseParser({
  onHead(_status: number, headers: string[]) { parsedHeaders = headers; },
  onBody() {},
  onEnd() {},
}, 64 * 1024);

/** HEAD read by the parser (scan, text, header list, framing), then each name's forwarding decision as the exchange makes it. */
function parsedAndDecided(): number {
  ANSWER_PARSER.reset(true);
  ANSWER_PARSER.execute(HEAD);
  const h = parsedHeaders;
  let n = 0;
  for (let i = 0; i < h.length; i += 2) if (responseHeaderName(h[i]) !== null) n++;
  return n;
}

/** The forwarded header lines of HEAD as the exchange joins them for its one writeHeader call, with a fresh request id. */
function forwardedLines(): string {
  const h = freshNames();
  let first: string | null = null;
  let lines = '';
  for (let i = 0; i < h.length; i += 2) {
    const name = responseHeaderName(h[i]);
    if (name === null) continue;
    if (first === null) {
      first = name;
      lines = h[i + 1];
    } else {
      lines += '\r\n' + name + ': ' + h[i + 1];
    }
  }
  return lines + '\r\nx-request-id: ' + newRequestId();
}

/** A request to a pod as the bench's full router sends one: its forwarded headers, the router's, the body. */
const REQ_FORWARD = ['accept', '*/*', 'user-agent', 'wrk/4.2'];
const REQ_BODY = ImportedBuffer.from('{"model":"sf-model","prompt":"San Francisco is a","max_tokens":16}');

/** The request's head as the HTTP/1.1 client makes it (a string of pieces), with a fresh request id. */
function routerHead(): string {
  return requestHead('POST', '/v1/completions', '127.0.0.1:40123', [...REQ_FORWARD, 'x-request-id', newRequestId(), 'content-type', 'application/json'], REQ_BODY);
}

/** The same text joined from an array of its pieces (a flat string, no rope to flatten). */
function joinedHead(): string {
  const parts: string[] = ['POST', ' ', '/v1/completions', ' HTTP/1.1\r\nhost: ', '127.0.0.1:40123', '\r\n'];
  for (let i = 0; i < REQ_FORWARD.length; i += 2) parts.push(REQ_FORWARD[i], ': ', REQ_FORWARD[i + 1], '\r\n');
  parts.push('x-request-id: ', newRequestId(), '\r\ncontent-type: application/json\r\n', 'content-length: ', String(REQ_BODY.length), '\r\n\r\n');
  return parts.join('');
}

/** The request's one buffer: the head written as latin1, then the body by `body.copy` (as before) or TypedArray `set`. */
function requestBytes(head: string, bySet: boolean): number {
  const out = ImportedBuffer.allocUnsafe(head.length + REQ_BODY.length);
  out.write(head, 0, 'latin1');
  if (bySet) out.set(REQ_BODY, head.length);
  else REQ_BODY.copy(out, head.length);
  return out.length;
}

/**
 * A streamed chat answer of `tokens` token events as the mock backend sends it when the router
 * asks for the usage (`"usage":null` on each token chunk, then the usage chunk and `[DONE]`), in
 * one read: as the bench's SSE scenarios' pod answers.
 */
function sseAnswer(tokens: number): Buffer {
  const head = '{"id":"chatcmpl-pod-a-1","object":"chat.completion.chunk","created":1795000000,"model":"sf-model","pod":"pod-a","choices":';
  let text = '';
  for (let i = 0; i < tokens; i++) {
    const finish = i === tokens - 1 ? '"length"' : 'null';
    text += `data: ${head}[{"index":0,"delta":{${i === 0 ? '"role":"assistant",' : ''}"content":"tok "},"logprobs":null,"finish_reason":${finish}}],"usage":null}\n\n`;
  }
  text += `data: ${head}[],"usage":{"prompt_tokens":5,"completion_tokens":${tokens},"total_tokens":${5 + tokens}}}\n\ndata: [DONE]\n\n`;
  return ImportedBuffer.from(text);
}
const SSE_16 = sseAnswer(16);
const SSE_64 = sseAnswer(64);

/** A GeneratedText that keeps nothing: the reader's own work is counted, not the tokenizer's. */
const NO_TEXT: GeneratedText = { add: () => undefined, stop: () => undefined, uncounted: () => undefined, tokens: () => 0, estimatedTokens: 0 };

/** A stream through the router's reader in strip mode (the usage chunk it asked for removed), as a pod's answer of one read. */
function readStream(answer: Buffer): number {
  const reader = new SseUsageScanner({ stripUsageChunk: true }, NO_TEXT, null);
  const out = reader.push(answer);
  return out.length + reader.end().length + (reader.usage().completionTokens ?? 0);
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
  /** The whole head through the response parser, then the exchange's forwarding decisions (the two read the framing names). */
  'answer head: parsed and forward decisions': () => parsedAndDecided(),
  /** The forwarded lines joined (the baseline of the next case). */
  'answer head: forwarded lines': () => forwardedLines().length,
  /** The same, then headerBlock's check that they are ASCII (skipped for a head scanHead found all ASCII). */
  'answer head: forwarded lines and headerBlock': () => headerBlock(forwardedLines()).length,
  'scanHead of the answer head': () => scanHead(HEAD, 0, MARKS),
  /** What a byte loop over the same head costs at the least: scanHead's baselines. */
  'answer head: a loop to each CR': () => crLoop(HEAD),
  'answer head: a loop to each CR or LF or NUL': () => lineEndLoop(HEAD),
  'answer head: its end by Buffer.indexOf': () => HEAD.indexOf('\r\n\r\n'),
  /** The usage object read from its end (returns where it starts). */
  'readFlatCountsBackwards of the usage object': () => readFlatCountsBackwards(USAGE, USAGE.length - 2, PROMPT_TOKENS, COMPLETION_TOKENS),
  /** The baseline of the last: a loop summing the object's bytes. */
  'usage object: a loop summing its bytes': () => byteSum(USAGE_OBJECT),
  /** The whole answer's usage as the router reads it: the object at the answer's end. */
  'usageFromJson of the answer': () => usageFromJson(USAGE).completionTokens ?? -1,
  /** vLLM's chat answers, of 1 KB and 100 KB: usage, then three null members (run the latter with a few hundred calls). */
  'usageFromJson of a vLLM chat answer of 1 KB': () => usageFromJson(VLLM_1K).completionTokens ?? -1,
  'usageFromJson of a vLLM chat answer of 100 KB': () => usageFromJson(VLLM_100K).completionTokens ?? -1,
  /** SGLang's chat answer of 1 KB: usage, then a small metadata object. */
  'usageFromJson of an SGLang chat answer of 1 KB': () => usageFromJson(SGLANG_1K).completionTokens ?? -1,
  /** The access-log line of the bench's request, written as bytes (with its request id: see the next case). */
  'writeJsonRecord of a record': () => writeBenchRecord(),
  /** The same with 16 pods in turn, as a larger deployment has. */
  'writeJsonRecord of a record of 16 pods in turn': () => writeRecordOfManyPods(),
  /** The bench's prompt counted as the router counts a small prompt (o200k_base pre-tokens). */
  'count the prompt': () => countPlain('San Francisco is a'),
  /** A paragraph of 1,000 characters of English, counted the same way. */
  'count 1000 characters': () => countPlain(PARAGRAPH),
  'newRequestId': () => newRequestId().length,
  'encodeRateHeaders of a route limit on both directions': () => encodeRateHeaders(DECISION, null).length,
  'copy 16 bytes: TypedArray set': () => (COPY_INTO.set(PIECE_16, 100), 1),
  'copy 16 bytes: a loop': () => loopCopy(COPY_INTO, 100, PIECE_16),
  'copy 16 bytes: DataView words': () => wordCopy(COPY_INTO_VIEW, 100, PIECE_VIEWS[0], 16),
  'copy 32 bytes: DataView words': () => wordCopy(COPY_INTO_VIEW, 100, PIECE_VIEWS[1], 32),
  'copy 64 bytes: DataView words': () => wordCopy(COPY_INTO_VIEW, 100, PIECE_VIEWS[2], 64),
  'copy 23 bytes: DataView words': () => wordCopy(COPY_INTO_VIEW, 100, PIECE_VIEWS[1], 23),
  'copy 32 bytes: TypedArray set': () => (COPY_INTO.set(PIECE_32, 100), 1),
  'copy 32 bytes: a loop': () => loopCopy(COPY_INTO, 100, PIECE_32),
  'copy 64 bytes: TypedArray set': () => (COPY_INTO.set(PIECE_64, 100), 1),
  'copy 64 bytes: a loop': () => loopCopy(COPY_INTO, 100, PIECE_64),
  'copy 128 bytes: TypedArray set': () => (COPY_INTO.set(PIECE_128, 100), 1),
  'copy 128 bytes: a loop': () => loopCopy(COPY_INTO, 100, PIECE_128),
  'performance.now() through the global': () => (performance.now() > 0 ? 1 : 0),
  'performance.now() imported': () => (importedPerformance.now() > 0 ? 1 : 0),
  /** A request's bytes to a pod (the head with a fresh request id): its body copied behind the head by Buffer's copy or by TypedArray set; a joined head. */
  'request bytes: head then body by copy': () => requestBytes(routerHead(), false),
  'request bytes: head then body by set': () => requestBytes(routerHead(), true),
  'request bytes: joined head then body by set': () => requestBytes(joinedHead(), true),
  /** Ways to keep one read of an upstream connection (the bytes the parser and the handler may hold). */
  'read kept: Buffer.from of a subarray': () => ImportedBuffer.from(READ_BUFFER.subarray(0, READ_LENGTH)).length,
  'read kept: allocUnsafe and copy': () => {
    const out = ImportedBuffer.allocUnsafe(READ_LENGTH);
    READ_BUFFER.copy(out, 0, 0, READ_LENGTH);
    return out.length;
  },
  'read kept: allocUnsafe and set of a Uint8Array view': () => {
    const out = ImportedBuffer.allocUnsafe(READ_LENGTH);
    out.set(new Uint8Array(READ_BUFFER.buffer, READ_BUFFER.byteOffset, READ_LENGTH));
    return out.length;
  },
  'read kept: allocUnsafe and set of a Uint8Array of the ArrayBuffer read once': () => {
    const out = ImportedBuffer.allocUnsafe(READ_LENGTH);
    out.set(new Uint8Array(READ_ARRAY_BUFFER, READ_BUFFER.byteOffset, READ_LENGTH));
    return out.length;
  },
  'read kept: a view of its own buffer (Buffer.from of the ArrayBuffer)': () => ImportedBuffer.from(READ_BUFFER.buffer, 128, READ_LENGTH).length,
  'read kept: a view of its own buffer (subarray)': () => READ_BUFFER.subarray(128, 128 + READ_LENGTH).length,
  /** Ways to copy a request body's chunk out of uWS's ArrayBuffer into the body's buffer. */
  'body chunk: Buffer.from of the ArrayBuffer then copy': () => {
    const chunk = ImportedBuffer.from(BODY_CHUNK);
    chunk.copy(BODY_KEPT, 0);
    return chunk.length;
  },
  'body chunk: a Uint8Array of the ArrayBuffer then set': () => {
    const chunk = new Uint8Array(BODY_CHUNK);
    BODY_KEPT.set(chunk, 0);
    return chunk.length;
  },
  'Buffer.byteLength of ASCII header lines': () => ImportedBuffer.byteLength('application/json\r\nx-mock-pod: pod-a\r\nx-request-id: 0f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9', 'utf8'),
  'Buffer.isBuffer through the global': () => (Buffer.isBuffer(HEAD) ? 1 : 0),
  'Buffer.isBuffer imported': () => (ImportedBuffer.isBuffer(HEAD) ? 1 : 0),
  /** A stream's events through the reader: the difference of the two over 48 events is the reader's work per event. */
  'SSE reader: a stream of 16 token events': () => readStream(SSE_16),
  'SSE reader: a stream of 64 token events': () => readStream(SSE_64),
  /** A turn's queue of one item (an answer, a request's write), emptied after its drain. */
  'turn queue: push then drain then length = 0': () => {
    LENGTH_QUEUE.push(QUEUED);
    let n = 0;
    for (let i = 0; i < LENGTH_QUEUE.length; i++) n += LENGTH_QUEUE[i].n;
    LENGTH_QUEUE.length = 0;
    return n;
  },
  'turn queue: store at a count then drain then count = 0': () => {
    COUNTED_QUEUE[counted++] = QUEUED;
    let n = 0;
    for (let i = 0; i < counted; i++) {
      n += (COUNTED_QUEUE[i] as { n: number }).n;
      COUNTED_QUEUE[i] = null;
    }
    counted = 0;
    return n;
  },
};

const QUEUED = { n: 1 };
const LENGTH_QUEUE: { n: number }[] = [];
const COUNTED_QUEUE: ({ n: number } | null)[] = [];
let counted = 0;
