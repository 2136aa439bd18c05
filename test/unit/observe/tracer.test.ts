import { afterEach, describe, expect, it } from 'vitest';
import { Exchange } from '../../../src/http/exchange.js';
import { RequestContext } from '../../../src/http/request-context.js';
import { Tracer } from '../../../src/observe/tracer.js';
import { parseTraceSettings } from '../../../src/observe/trace-settings.js';

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const PARENT = '00f067aa0ba902b7';
const tracers: Tracer[] = [];

function tracer(env: Record<string, string> = {}): Tracer {
  // Nothing listens on port 9 of this host; these tests never flush.
  const t = new Tracer(parseTraceSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9', OTEL_BSP_SCHEDULE_DELAY: '3600000', ...env })!);
  tracers.push(t);
  return t;
}

function exchange(traceparent: string | null, model = 'sf-model'): Exchange {
  const ctx = new RequestContext('POST', '/v1/chat/completions', 'HTTP/1.1', 'rid-1', Date.now(), performance.now());
  ctx.modelName = model;
  const fwd = ['content-type', 'application/json', 'x-other', 'y'];
  if (traceparent !== null) fwd.splice(2, 0, 'traceparent', traceparent);
  return new Exchange(null as never, ctx, '/v1/chat/completions', fwd, null, '');
}

describe('Tracer', () => {
  afterEach(async () => {
    await Promise.all(tracers.splice(0).map((t) => t.close())); // their exports fail: nothing listens
  });

  it('takes the client traceparent out of the forwarded headers and puts the child one on the exchange', () => {
    const x = exchange(`00-${TRACE}-${PARENT}-01`);
    const span = tracer().start(x);
    expect(x.forwardHeaders).toEqual(['content-type', 'application/json', 'x-other', 'y']);
    expect(span).toMatchObject({ traceId: TRACE, parentSpanId: PARENT, sampled: true });
    expect(x.traceparent).toBe(`00-${TRACE}-${span.spanId}-01`);
  });

  it('two client traceparents: both removed, a new trace starts', () => {
    const x = exchange(`00-${TRACE}-${PARENT}-01`);
    x.forwardHeaders.push('traceparent', `00-${TRACE}-${PARENT}-01`);
    const span = tracer().start(x);
    expect(x.forwardHeaders).toEqual(['content-type', 'application/json', 'x-other', 'y']);
    expect(span.traceId).not.toBe(TRACE);
    expect(span.parentSpanId).toBe('');
  });

  it('keeps the tracestate with a valid traceparent, drops it when a new trace starts (W3C processing model)', () => {
    const kept = exchange(`00-${TRACE}-${PARENT}-01`);
    kept.forwardHeaders.push('tracestate', 'vendor=1');
    tracer().start(kept);
    expect(kept.forwardHeaders).toEqual(['content-type', 'application/json', 'x-other', 'y', 'tracestate', 'vendor=1']);
    for (const traceparent of [null, 'garbage', `00-${TRACE.toUpperCase()}-${PARENT}-01`, `ff-${TRACE}-${PARENT}-01`]) {
      const x = exchange(traceparent);
      x.forwardHeaders.push('tracestate', 'vendor=1', 'tracestate', 'other=2');
      const span = tracer().start(x);
      expect(span.parentSpanId).toBe('');
      expect(x.forwardHeaders).toEqual(['content-type', 'application/json', 'x-other', 'y']);
    }
  });

  it.each([
    ['parentbased_always_on', `00-${TRACE}-${PARENT}-00`, false],
    ['parentbased_always_off', `00-${TRACE}-${PARENT}-01`, true],
    ['parentbased_always_off', null, false],
    ['always_on', `00-${TRACE}-${PARENT}-00`, true],
    ['always_off', `00-${TRACE}-${PARENT}-01`, false],
    ['traceidratio', null, true], // ratio 1
  ])('sampler %s with parent %s samples: %s', (sampler, parent, sampled) => {
    const t = tracer({ OTEL_TRACES_SAMPLER: sampler });
    const x = exchange(parent);
    const span = t.start(x);
    expect(span.sampled).toBe(sampled);
    expect(x.traceparent!.endsWith(sampled ? '-01' : '-00')).toBe(true);
    t.end(span, x);
    expect(t.exporter.queued).toBe(sampled ? 1 : 0);
  });

  it('the ratio sampler keeps about the ratio of new traces, none at 0', () => {
    const half = tracer({ OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: '0.5' });
    const none = tracer({ OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '0' });
    let kept = 0;
    for (let i = 0; i < 4000; i++) {
      if (half.start(exchange(null)).sampled) kept++;
      expect(none.start(exchange(null)).sampled).toBe(false);
    }
    expect(kept).toBeGreaterThan(1600);
    expect(kept).toBeLessThan(2400);
  });
});
