import { buildInfo } from '../build-info.js';
import type { Exchange } from '../http/exchange.js';
import { dropNamed } from '../http/upstream-headers.js';
import { OtlpExporter } from './otlp-exporter.js';
import type { ExportLog } from './otlp-post.js';
import { SpanParts, writeSpan, type SpanIds } from './span-bytes.js';
import { formatTraceparent, newSpanId, newTraceId, parseTraceparent } from './trace-ids.js';
import type { TraceSettings } from './trace-settings.js';
import { performance } from 'node:perf_hooks';

/** One request's span while it runs; written as OTLP JSON when it ends (sampled spans only). */
export class RequestSpan implements SpanIds {
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
  /** The groups of the span being written (one at a time). */
  private readonly parts = new SpanParts();

  /** `log`: where failed exports (at most once a minute; otlp-exporter.ts) and TLS files taken up again are reported. */
  constructor(s: TraceSettings, log: ExportLog | null = null, exporter: OtlpExporter = new OtlpExporter(s, buildInfo.version, log)) {
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

  /** Ends the span (after the answer ended and usage settled); writes it into the export batch when sampled. */
  end(span: RequestSpan, x: Exchange): void {
    if (!span.sampled) return;
    const batch = this.exporter.reserve(this.parts.of(span, x));
    if (batch === null) return;
    this.exporter.commit(batch, writeSpan(span, x, performance.timeOrigin + performance.now(), this.parts, batch.buf, batch.start));
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
