import { buildInfo } from '../build-info.js';
import type { Exchange } from '../http/exchange.js';
import { dropNamed } from '../http/upstream-headers.js';
import { OtlpExporter } from './otlp-exporter.js';
import { formatTraceparent, newSpanId, newTraceId, parseTraceparent } from './trace-ids.js';
import type { TraceSettings } from './trace-settings.js';
import { performance } from 'node:perf_hooks';

/** One request's span while it runs; encoded to OTLP JSON when it ends (sampled spans only). */
export class RequestSpan {
  readonly traceId: string;
  readonly spanId: string;
  /** The incoming traceparent's span id, or '' for a root span. */
  readonly parentSpanId: string;
  readonly sampled: boolean;
  /** Origin (http://host:port) of the pod the request went to last, '' before one is picked. */
  pod = '';

  constructor(traceId: string, spanId: string, parentSpanId: string, sampled: boolean) {
    this.traceId = traceId;
    this.spanId = spanId;
    this.parentSpanId = parentSpanId;
    this.sampled = sampled;
  }
}

const SPAN_KIND_SERVER = 2;
const STATUS_ERROR = 2;
/** 2^56: the trace-id ratio sampler reads the last 56 bits of the id. */
const RATIO_SPACE = 2 ** 56;

/**
 * Makes one SERVER span per inference request (docs/tracing.md): continues an incoming
 * `traceparent`, puts the child `traceparent` sent to the pod on the exchange, and hands the
 * ended span to the OTLP exporter. Only built when tracing is on; the pipeline holds null otherwise.
 */
export class Tracer {
  readonly exporter: OtlpExporter;
  private readonly s: TraceSettings;
  private readonly parentBased: boolean;
  private readonly rootSampled: 'on' | 'off' | 'ratio';

  /** `log`: where failed exports are reported (at most once a minute; otlp-exporter.ts). */
  constructor(s: TraceSettings, log: ((message: string) => void) | null = null, exporter: OtlpExporter = new OtlpExporter(s, buildInfo.version, log)) {
    this.s = s;
    this.exporter = exporter;
    this.parentBased = s.sampler.startsWith('parentbased_');
    this.rootSampled = s.sampler.endsWith('always_on') ? 'on' : s.sampler.endsWith('always_off') ? 'off' : 'ratio';
  }

  /**
   * Starts the request's span: reads and removes the client's traceparent, sets x.traceparent.
   * A tracestate goes on to the pod only with the trace it belongs to: without a valid
   * traceparent a new trace starts, and the W3C processing model discards the tracestate.
   */
  start(x: Exchange): RequestSpan {
    const fwd = x.forwardHeaders;
    let incoming = '';
    let tracestate = false;
    for (let i = fwd.length - 2; i >= 0; i -= 2) {
      const name = fwd[i];
      if (name === 'tracestate') tracestate = true;
      if (name !== 'traceparent') continue;
      // More than one traceparent is invalid (W3C): then a new trace starts.
      incoming = incoming === '' ? fwd[i + 1] : 'invalid';
      fwd.splice(i, 2);
    }
    const parent = incoming === '' ? null : parseTraceparent(incoming);
    if (parent === null && tracestate) dropNamed(fwd, TRACESTATE);
    const traceId = parent === null ? newTraceId() : parent.traceId;
    const sampled = parent !== null && this.parentBased ? parent.sampled : this.sampleRoot(traceId);
    const span = new RequestSpan(traceId, newSpanId(), parent === null ? '' : parent.spanId, sampled);
    x.traceparent = formatTraceparent(traceId, span.spanId, sampled);
    return span;
  }

  /** Ends the span (after the answer ended and usage settled); queues it when sampled. */
  end(span: RequestSpan, x: Exchange): void {
    if (!span.sampled) return;
    this.exporter.push(encodeSpan(span, x, performance.timeOrigin + performance.now()));
  }

  /** Sends every queued span (drain). */
  close(): Promise<void> {
    return this.exporter.close();
  }

  private sampleRoot(traceId: string): boolean {
    if (this.rootSampled === 'on') return true;
    if (this.rootSampled === 'off') return false;
    return parseInt(traceId.slice(18), 16) < this.s.ratio * RATIO_SPACE;
  }
}

const TRACESTATE: readonly string[] = ['tracestate'];

function str(key: string, value: string): string {
  return `{"key":"${key}","value":{"stringValue":${JSON.stringify(value)}}}`;
}

function int(key: string, value: number): string {
  return `{"key":"${key}","value":{"intValue":"${value}"}}`;
}

function nanos(epochMs: number): string {
  return String(Math.round(epochMs * 1e6));
}

/** The span as OTLP/JSON (HTTP server and GenAI semantic conventions). */
export function encodeSpan(span: RequestSpan, x: Exchange, endEpochMs: number): string {
  const ctx = x.ctx;
  const attrs = [
    str('http.request.method', ctx.method),
    str('url.path', x.url),
    int('http.response.status_code', ctx.statusCode),
    str('http.request.header.x-request-id', ctx.requestId),
  ];
  if (ctx.modelName !== '') attrs.push(str('gen_ai.request.model', ctx.modelName));
  attrs.push(str('gen_ai.operation.name', operationOf(x.url)));
  if (ctx.inputTokens > 0) attrs.push(int('gen_ai.usage.input_tokens', ctx.inputTokens));
  if (ctx.outputTokens > 0) attrs.push(int('gen_ai.usage.output_tokens', ctx.outputTokens));
  if (span.pod !== '') {
    const hostPort = span.pod.slice(span.pod.indexOf('//') + 2);
    const colon = hostPort.lastIndexOf(':');
    attrs.push(str('server.address', hostPort.slice(0, colon).replace(/^\[|\]$/g, '')), int('server.port', Number(hostPort.slice(colon + 1))));
  }
  if (ctx.modelRoute !== '') attrs.push(str('inference_router.model_route', ctx.modelRoute));
  if (ctx.modelServer !== '') attrs.push(str('inference_router.model_server', ctx.modelServer));
  if (ctx.selectedPod !== '') attrs.push(str('inference_router.pod', ctx.selectedPod));
  if (ctx.prefillPod !== '') attrs.push(str('inference_router.prefill_pod', ctx.prefillPod));
  if (ctx.tFirstByte > 0) attrs.push(`{"key":"inference_router.ttfb_ms","value":{"doubleValue":${(ctx.tFirstByte - ctx.t0).toFixed(3)}}}`);
  if (ctx.errorType !== null) attrs.push(str('error.type', ctx.errorType));
  const error = ctx.statusCode >= 500 || ctx.statusCode === 499;
  const status = error ? `{"code":${STATUS_ERROR},"message":${JSON.stringify(ctx.errorMessage)}}` : '{}';
  const parent = span.parentSpanId === '' ? '' : `"parentSpanId":"${span.parentSpanId}",`;
  return `{"traceId":"${span.traceId}","spanId":"${span.spanId}",${parent}"name":${JSON.stringify(`${ctx.method} ${x.url}`)},` +
    `"kind":${SPAN_KIND_SERVER},"startTimeUnixNano":"${nanos(performance.timeOrigin + ctx.t0)}","endTimeUnixNano":"${nanos(endEpochMs)}",` +
    `"attributes":[${attrs.join(',')}],"status":${status}}`;
}

/** gen_ai.operation.name of an OpenAI-style path. */
function operationOf(url: string): string {
  if (url.endsWith('/chat/completions')) return 'chat';
  if (url.endsWith('/completions')) return 'text_completion';
  if (url.endsWith('/embeddings')) return 'embeddings';
  return 'other';
}
