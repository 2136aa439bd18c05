import type { Exchange } from '../http/exchange.js';
import { putDigits, putNumber } from '../decimal-digits.js';
import { isJsonPlain, jsonString } from './access-log-escape.js';
import { GroupBytes, utf8Bytes as bytes } from './group-bytes.js';
import { Buffer } from 'node:buffer';
import { performance } from 'node:perf_hooks';

/**
 * One span's OTLP/JSON written as bytes straight into an export batch (otlp-exporter.ts), the
 * way the access log writes its records (access-log-line-bytes.ts): the text around the values
 * that repeat from request to request (method and path; model, route and server; the pod) is
 * kept as bytes per group of values, escaped once; ids and numbers are written as they are. No
 * string is built per span, so none is flattened, joined into the batch or encoded again when
 * the batch is sent (docs/tracing.md, "Cost").
 *
 * The span (HTTP server and GenAI semantic conventions; docs/tracing.md): name "METHOD path",
 * kind SERVER, its start and end in nanoseconds since the epoch, the attributes below, and an
 * error status for answers 5xx and 499.
 */

/** What a span needs of the request besides the exchange: ids, sampled or not, and the pod. */
export interface SpanIds {
  readonly traceId: string;
  readonly spanId: string;
  /** The incoming traceparent's span id, or '' for a root span. */
  readonly parentSpanId: string;
  /** Origin (http://host:port) of the pod the request went to last, '' before one is picked. */
  readonly pod: string;
}

const SPAN_KIND_SERVER = 2;
const STATUS_ERROR = 2;

function str(key: string, value: string): string {
  return `{"key":"${key}","value":{"stringValue":${jsonString(value)}}}`;
}

/** gen_ai.operation.name of an OpenAI-style path. */
function operationOf(url: string): string {
  if (url.endsWith('/chat/completions')) return 'chat';
  if (url.endsWith('/completions')) return 'text_completion';
  if (url.endsWith('/embeddings')) return 'embeddings';
  return 'other';
}

/**
 * The span's name and its attributes of the request line, up to the status code's digits. The name
 * is the method and path of an endpoint of the API (`POST /v1/chat/completions`; `known` is '1'),
 * the method alone for any other path (the client chooses those, and span names must stay few),
 * which `url.path` still holds.
 */
const REQUEST = new GroupBytes((url, method, known) =>
  `"name":${jsonString(known === '1' ? `${method} ${url}` : method)},"attributes":[${str('http.request.method', method)},${str('url.path', url)},` +
  `${str('gen_ai.operation.name', operationOf(url))},{"key":"http.response.status_code","value":{"intValue":"`);

/** Each of model, route and server that is known, as an attribute with a leading comma. */
const TARGET = new GroupBytes((model, route, server) =>
  (model === '' ? '' : `,${str('gen_ai.request.model', model)}`) +
  (route === '' ? '' : `,${str('inference_router.model_route', route)}`) +
  (server === '' ? '' : `,${str('inference_router.model_server', server)}`));

/** The pod's address and port (from its origin), its name and the prefill pod's, each known. */
const POD = new GroupBytes((origin, pod, prefill) => {
  let out = '';
  if (origin !== '') {
    const hostPort = origin.slice(origin.indexOf('//') + 2);
    const colon = hostPort.lastIndexOf(':');
    out += `,${str('server.address', hostPort.slice(0, colon).replace(/^\[|\]$/g, ''))}` +
      `,{"key":"server.port","value":{"intValue":"${Number(hostPort.slice(colon + 1))}"}}`;
  }
  if (pod !== '') out += `,${str('inference_router.pod', pod)}`;
  if (prefill !== '') out += `,${str('inference_router.prefill_pod', prefill)}`;
  return out;
});

const TRACE_ID = bytes('{"traceId":"');
const SPAN_ID = bytes('","spanId":"');
const PARENT_SPAN_ID = bytes('","parentSpanId":"');
const START = bytes(`","kind":${SPAN_KIND_SERVER},"startTimeUnixNano":"`);
const END = bytes('","endTimeUnixNano":"');
const TIMES_CLOSE = bytes('",');
// A header attribute is an array of strings in OpenTelemetry's HTTP conventions (a header may repeat).
const REQUEST_ID = bytes('"}},{"key":"http.request.header.x-request-id","value":{"arrayValue":{"values":[{"stringValue":');
const REQUEST_ID_CLOSE = bytes('}]}}}');
const INPUT_TOKENS = bytes(',{"key":"gen_ai.usage.input_tokens","value":{"intValue":"');
const OUTPUT_TOKENS = bytes(',{"key":"gen_ai.usage.output_tokens","value":{"intValue":"');
const INT_CLOSE = bytes('"}}');
const TTFB = bytes(',{"key":"inference_router.ttfb_ms","value":{"doubleValue":');
const ERROR_TYPE = bytes(',{"key":"error.type","value":{"stringValue":');
const VALUE_CLOSE = bytes('}}');
const STATUS_OK = bytes('],"status":{}}');
const STATUS_FAILED = bytes(`],"status":{"code":${STATUS_ERROR},"message":`);
const NOTHING = new Uint8Array(0);
const QUOTE = 0x22;
const DOT = 0x2e;
const CLOSE = 0x7d;

/** Bytes of the fixed text, the ids and the numbers a span takes at most, with every optional part. */
const FIXED_BOUND = TRACE_ID.length + 32 + SPAN_ID.length + 16 + PARENT_SPAN_ID.length + 16 + START.length + END.length
  + TIMES_CLOSE.length + 2 * 24 + 17 + REQUEST_ID.length + 2 + REQUEST_ID_CLOSE.length + INPUT_TOKENS.length + OUTPUT_TOKENS.length
  + 2 * (17 + INT_CLOSE.length) + TTFB.length + 24 + VALUE_CLOSE.length + ERROR_TYPE.length + 2 + VALUE_CLOSE.length
  + STATUS_FAILED.length + 2 + 2 + STATUS_OK.length;

/** A string value written in JSON takes at most this many bytes per UTF-16 unit (`\u2028`). */
const ESCAPED_UNIT = 6;

/** The groups of one span, looked up before its room is reserved. */
export class SpanParts {
  request: Uint8Array = NOTHING;
  target: Uint8Array = NOTHING;
  pod: Uint8Array = NOTHING;

  /** Looks the span's groups up; returns the bytes the span takes at most. */
  of(span: SpanIds, x: Exchange): number {
    const ctx = x.ctx;
    this.request = REQUEST.of(x.url, ctx.method, x.knownEndpoint ? '1' : '');
    this.target = TARGET.of(ctx.modelName, ctx.modelRoute, ctx.modelServer);
    this.pod = POD.of(span.pod, ctx.selectedPod, ctx.prefillPod);
    return FIXED_BOUND + this.request.length + this.target.length + this.pod.length
      + ESCAPED_UNIT * (ctx.requestId.length + (ctx.errorType?.length ?? 0) + ctx.errorMessage.length);
  }
}

/**
 * Writes the span of `x` that ended at `endEpochMs` into `buf` at `at`, with the groups `parts`
 * looked up for it (`parts.of`, whose bound `buf` has room for); returns where it ends.
 */
export function writeSpan(span: SpanIds, x: Exchange, endEpochMs: number, parts: SpanParts, buf: Buffer, at: number): number {
  const ctx = x.ctx;
  at = put(buf, at, TRACE_ID);
  at += buf.write(span.traceId, at, 'latin1');
  at = put(buf, at, SPAN_ID);
  at += buf.write(span.spanId, at, 'latin1');
  if (span.parentSpanId !== '') {
    at = put(buf, at, PARENT_SPAN_ID);
    at += buf.write(span.parentSpanId, at, 'latin1');
  }
  at = putNanos(buf, put(buf, at, START), performance.timeOrigin + ctx.t0);
  at = putNanos(buf, put(buf, at, END), endEpochMs);
  at = put(buf, at, TIMES_CLOSE);
  at = put(buf, at, parts.request);
  at = putNumber(buf, at, ctx.statusCode);
  at = putString(buf, put(buf, at, REQUEST_ID), ctx.requestId);
  at = put(buf, at, REQUEST_ID_CLOSE);
  at = put(buf, at, parts.target);
  if (ctx.inputTokens > 0) at = put(buf, putNumber(buf, put(buf, at, INPUT_TOKENS), ctx.inputTokens), INT_CLOSE);
  if (ctx.outputTokens > 0) at = put(buf, putNumber(buf, put(buf, at, OUTPUT_TOKENS), ctx.outputTokens), INT_CLOSE);
  at = put(buf, at, parts.pod);
  if (ctx.tFirstByte > 0) at = put(buf, putMillis(buf, put(buf, at, TTFB), ctx.tFirstByte - ctx.t0), VALUE_CLOSE);
  if (ctx.errorType !== null) at = put(buf, putString(buf, put(buf, at, ERROR_TYPE), ctx.errorType), VALUE_CLOSE);
  // A failure the status does not show (a stream cut by the pod after its 200) is an error too, as
  // the HTTP conventions have it for a response of 1xx-3xx with another error.
  if (ctx.statusCode >= 500 || ctx.statusCode === 499 || (ctx.errorType !== null && ctx.statusCode < 400)) {
    at = putString(buf, put(buf, at, STATUS_FAILED), ctx.errorMessage);
    buf[at++] = CLOSE;
    buf[at++] = CLOSE;
    return at;
  }
  return put(buf, at, STATUS_OK);
}

function put(buf: Buffer, at: number, b: Uint8Array): number {
  buf.set(b, at);
  return at + b.length;
}

/** A JSON string literal, with its quotes. */
function putString(buf: Buffer, at: number, s: string): number {
  if (!isJsonPlain(s)) return at + buf.write(jsonString(s), at, 'utf8');
  buf[at++] = QUOTE;
  at += buf.write(s, at, 'latin1');
  buf[at] = QUOTE;
  return at + 1;
}

/** Milliseconds since the epoch as whole nanoseconds (digits only; the caller quotes them). */
function putNanos(buf: Buffer, at: number, epochMs: number): number {
  const ms = Math.floor(epochMs);
  // Below the millisecond the double holds the time to a few tenths of a microsecond.
  const ns = Math.min(Math.floor((epochMs - ms) * 1e6), 999_999);
  return putDigits(buf, putNumber(buf, at, ms), ns, 6);
}

/** A duration in milliseconds, three decimals (what toFixed(3) writes for a duration ≥ 0). */
function putMillis(buf: Buffer, at: number, ms: number): number {
  const micros = Math.round(Math.max(ms, 0) * 1000);
  const whole = Math.floor(micros / 1000);
  at = putNumber(buf, at, whole);
  buf[at] = DOT;
  return putDigits(buf, at + 1, micros - whole * 1000, 3);
}
