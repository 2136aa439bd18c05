import { describe, expect, it } from 'vitest';
import { Buffer } from 'node:buffer';
import { Exchange } from '../../../src/http/exchange.js';
import { RequestContext } from '../../../src/http/request-context.js';
import { SpanParts, writeSpan, type SpanIds } from '../../../src/observe/span-bytes.js';

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const SPAN = '00f067aa0ba902b7';
const PARENT = 'b7ad6b7169203331';

function exchange(opts: { url?: string; method?: string; requestId?: string; known?: boolean } = {}): Exchange {
  const url = opts.url ?? '/v1/chat/completions';
  const ctx = new RequestContext(opts.method ?? 'POST', url, 'HTTP/1.1', opts.requestId ?? 'rid-1', Date.now(), performance.now());
  const x = new Exchange(null as never, ctx, url, ['content-type', 'application/json'], null, '');
  x.knownEndpoint = opts.known ?? true;
  return x;
}

function ids(pod = '', parent = ''): SpanIds {
  return { traceId: TRACE, spanId: SPAN, parentSpanId: parent, pod };
}

/** The span's bytes as span-bytes.ts writes them, checked against the bound it gave. */
function written(span: SpanIds, x: Exchange, endEpochMs: number, at = 5): string {
  const parts = new SpanParts();
  const bound = parts.of(span, x);
  const buf = Buffer.alloc(at + bound + 8, 0x21); // '!' around it: a write past the bound shows
  const end = writeSpan(span, x, endEpochMs, parts, buf, at);
  expect(end - at).toBeLessThanOrEqual(bound);
  expect(buf.subarray(0, at).every((b) => b === 0x21)).toBe(true);
  expect(buf.subarray(end).every((b) => b === 0x21)).toBe(true);
  return buf.toString('utf8', at, end);
}

/**
 * The span as the router wrote it before it wrote bytes (a string of template pieces, through
 * JSON.stringify): the model the bytes are held to, as parsed JSON.
 */
function reference(span: SpanIds, x: Exchange, endEpochMs: number): unknown {
  const ctx = x.ctx;
  const str = (key: string, value: string): string => `{"key":"${key}","value":{"stringValue":${JSON.stringify(value)}}}`;
  const int = (key: string, value: number): string => `{"key":"${key}","value":{"intValue":"${value}"}}`;
  const op = x.url.endsWith('/chat/completions') ? 'chat' : x.url.endsWith('/completions') ? 'text_completion' : x.url.endsWith('/embeddings') ? 'embeddings' : 'other';
  const attrs = [str('http.request.method', ctx.method), str('url.path', x.url), int('http.response.status_code', ctx.statusCode), `{"key":"http.request.header.x-request-id","value":{"arrayValue":{"values":[{"stringValue":${JSON.stringify(ctx.requestId)}}]}}}`];
  if (ctx.modelName !== '') attrs.push(str('gen_ai.request.model', ctx.modelName));
  attrs.push(str('gen_ai.operation.name', op));
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
  const error = ctx.statusCode >= 500 || ctx.statusCode === 499 || (ctx.errorType !== null && ctx.statusCode < 400);
  const status = error ? `{"code":2,"message":${JSON.stringify(ctx.errorMessage)}}` : '{}';
  const parent = span.parentSpanId === '' ? '' : `"parentSpanId":"${span.parentSpanId}",`;
  const nanos = (ms: number): string => String(Math.round(ms * 1e6));
  return JSON.parse(`{"traceId":"${span.traceId}","spanId":"${span.spanId}",${parent}"name":${JSON.stringify(x.knownEndpoint ? `${ctx.method} ${x.url}` : ctx.method)},` +
    `"kind":2,"startTimeUnixNano":"${nanos(performance.timeOrigin + ctx.t0)}","endTimeUnixNano":"${nanos(endEpochMs)}",` +
    `"attributes":[${attrs.join(',')}],"status":${status}}`);
}

/** A span as parsed JSON with its attributes by key and its times as numbers (within a microsecond of the reference's). */
function comparable(json: unknown): Record<string, unknown> {
  const o = json as { attributes: { key: string; value: unknown }[]; startTimeUnixNano: string; endTimeUnixNano: string };
  const attributes = Object.fromEntries(o.attributes.map((a) => [a.key, a.value]));
  expect(Object.keys(attributes)).toHaveLength(o.attributes.length); // no key twice
  const ttfb = (attributes['inference_router.ttfb_ms'] as { doubleValue?: number } | undefined)?.doubleValue;
  if (ttfb !== undefined) attributes['inference_router.ttfb_ms'] = { doubleValue: Math.round(ttfb * 1000) };
  return {
    ...o, attributes,
    startTimeUnixNano: Math.round(Number(BigInt(o.startTimeUnixNano) / 1000n)),
    endTimeUnixNano: Math.round(Number(BigInt(o.endTimeUnixNano) / 1000n)),
  };
}

function expectSameSpan(span: SpanIds, x: Exchange, end: number): Record<string, unknown> {
  const json = JSON.parse(written(span, x, end));
  const got = comparable(json);
  const want = comparable(reference(span, x, end));
  for (const key of ['startTimeUnixNano', 'endTimeUnixNano'] as const) {
    expect(Math.abs((got[key] as number) - (want[key] as number))).toBeLessThanOrEqual(1);
    got[key] = want[key];
  }
  const gotTtfb = (got.attributes as Record<string, { doubleValue: number } | undefined>)['inference_router.ttfb_ms'];
  const wantTtfb = (want.attributes as Record<string, { doubleValue: number } | undefined>)['inference_router.ttfb_ms'];
  if (gotTtfb !== undefined && wantTtfb !== undefined) {
    expect(Math.abs(gotTtfb.doubleValue - wantTtfb.doubleValue)).toBeLessThanOrEqual(1); // toFixed(3) rounds a half its own way
    gotTtfb.doubleValue = wantTtfb.doubleValue;
  }
  expect(got).toEqual(want);
  return json;
}

/** Random text: plain ASCII mostly, with quotes, backslashes, controls, DEL, C1, U+2028, non-BMP. */
function randomText(rnd: () => number, max: number): string {
  const pool = ['a', 'Z', '/', ' ', '-', '"', '\\', '\n', '\u0000', '\u001f', '\u007f', '\u0085', '\u2028', '\u2029', 'é', '中', '😀', '\ud800'];
  let s = '';
  const n = Math.floor(rnd() * max);
  for (let i = 0; i < n; i++) s += rnd() < 0.6 ? String.fromCharCode(0x61 + Math.floor(rnd() * 26)) : pool[Math.floor(rnd() * pool.length)];
  return s;
}

function seeded(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

describe('span-bytes: a span written as OTLP/JSON bytes', () => {
  it('writes what the string encoder wrote for a usual request, every optional attribute present', () => {
    const x = exchange();
    const c = x.ctx;
    c.modelName = 'sf-model'; c.modelRoute = 'default/sf-route'; c.modelServer = 'default/sf-server';
    c.selectedPod = 'pod-a'; c.prefillPod = 'prefill-0'; c.inputTokens = 5; c.outputTokens = 1_234_567_890; c.statusCode = 200;
    c.tFirstByte = c.t0 + 12.3456;
    const json = expectSameSpan(ids('http://10.0.0.7:8000', PARENT), x, performance.timeOrigin + performance.now());
    expect(json).toMatchObject({ traceId: TRACE, spanId: SPAN, parentSpanId: PARENT, name: 'POST /v1/chat/completions', kind: 2, status: {} });
  });

  it('leaves out what is not known: no parent, model, tokens, pod or first byte (a request refused early)', () => {
    const x = exchange({ url: '/v1/embeddings', method: 'GET' });
    x.ctx.statusCode = 404;
    const json = expectSameSpan(ids(), x, performance.timeOrigin + performance.now()) as { attributes: unknown[]; parentSpanId?: string };
    expect(json.parentSpanId).toBeUndefined();
    expect(json.attributes).toHaveLength(5); // method, path, operation, status, request id
  });

  it('an error answer: the error type and the status with its message; 499 counts as an error, 4xx does not', () => {
    for (const [code, type, failed] of [[502, 'upstream_error', true], [499, 'client_closed', true], [429, 'rate_limit', false]] as const) {
      const x = exchange();
      x.ctx.fail(type, `pod said "no"\nat once \u2028`, code);
      const json = expectSameSpan(ids('http://[::1]:8000'), x, performance.timeOrigin + performance.now()) as { status: unknown };
      expect(json.status).toEqual(failed ? { code: 2, message: 'pod said "no"\nat once \u2028' } : {});
    }
  });

  it('an answer that failed after its status went out (a stream the pod cut after its 200) is an error', () => {
    const x = exchange();
    x.ctx.statusCode = 200;
    x.ctx.fail('upstream_error', 'pod pod-a cut the stream', 200);
    const json = expectSameSpan(ids(), x, performance.timeOrigin + performance.now()) as { status: unknown };
    expect(json.status).toEqual({ code: 2, message: 'pod pod-a cut the stream' });
  });

  it('a path that is none of the API\'s endpoints (the client chose it) names the span by the method alone; url.path has it', () => {
    for (let i = 0; i < 50; i++) {
      const x = exchange({ url: `/v1/rnd-${i}/x`, known: false });
      x.ctx.statusCode = 200;
      const json = expectSameSpan(ids(), x, performance.timeOrigin + performance.now()) as { name: string };
      expect(json.name).toBe('POST');
    }
  });

  it('an IPv6 pod: its address without brackets, its port as an integer', () => {
    const x = exchange();
    const json = expectSameSpan(ids('http://[fd00::1]:9000'), x, performance.timeOrigin + performance.now()) as { attributes: { key: string; value: unknown }[] };
    const attrs = Object.fromEntries(json.attributes.map((a) => [a.key, a.value]));
    expect(attrs['server.address']).toEqual({ stringValue: 'fd00::1' });
    expect(attrs['server.port']).toEqual({ intValue: '9000' });
  });

  it('any text in any value: valid JSON with the same values, within its bound, nothing written outside it (400 random spans)', () => {
    const rnd = seeded(13);
    for (let i = 0; i < 400; i++) {
      const x = exchange({ url: `/v1/${randomText(rnd, 40)}`, method: rnd() < 0.5 ? 'POST' : randomText(rnd, 8) || 'P', requestId: randomText(rnd, 60) });
      const c = x.ctx;
      c.modelName = randomText(rnd, 50); c.modelRoute = randomText(rnd, 20); c.modelServer = randomText(rnd, 20);
      c.selectedPod = randomText(rnd, 20); c.prefillPod = rnd() < 0.3 ? randomText(rnd, 10) : '';
      c.inputTokens = Math.floor(rnd() * 1e6); c.outputTokens = rnd() < 0.5 ? 0 : Math.floor(rnd() * 1e12);
      if (rnd() < 0.5) c.tFirstByte = c.t0 + rnd() * 5000;
      if (rnd() < 0.3) c.fail('upstream_error', randomText(rnd, 300), rnd() < 0.5 ? 502 : 499);
      else c.statusCode = 200;
      expectSameSpan(ids(rnd() < 0.5 ? '' : 'http://10.1.2.3:8000', rnd() < 0.5 ? '' : PARENT), x, performance.timeOrigin + performance.now() + rnd() * 1e5);
    }
  });

  it('times in nanoseconds since the epoch, start no later than end, to the microsecond', () => {
    const x = exchange();
    const end = performance.timeOrigin + x.ctx.t0 + 1.0004567;
    const json = JSON.parse(written(ids(), x, end)) as { startTimeUnixNano: string; endTimeUnixNano: string };
    expect(json.startTimeUnixNano).toMatch(/^\d{19}$/);
    const micros = (BigInt(json.endTimeUnixNano) - BigInt(json.startTimeUnixNano)) / 1000n;
    expect(Number(micros)).toBeGreaterThanOrEqual(999);
    expect(Number(micros)).toBeLessThanOrEqual(1001);
    expect(Math.abs(Number(BigInt(json.endTimeUnixNano) / 1_000_000n) - Math.floor(end))).toBeLessThanOrEqual(1);
  });

  it('many different paths, models and pods: each span names its own (the groups are looked up, not mixed up)', () => {
    for (let i = 0; i < 3000; i++) {
      const x = exchange({ url: `/v1/completions?n=${i}` });
      x.ctx.modelName = `m${i % 7}`;
      x.ctx.selectedPod = `pod-${i % 13}`;
      const json = JSON.parse(written(ids(`http://10.0.${i % 13}.1:8000`), x, performance.timeOrigin + performance.now())) as { name: string; attributes: { key: string; value: { stringValue?: string } }[] };
      const attrs = Object.fromEntries(json.attributes.map((a) => [a.key, a.value.stringValue]));
      expect(json.name).toBe(`POST /v1/completions?n=${i}`);
      expect(attrs).toMatchObject({ 'url.path': `/v1/completions?n=${i}`, 'gen_ai.request.model': `m${i % 7}`, 'inference_router.pod': `pod-${i % 13}`, 'server.address': `10.0.${i % 13}.1` });
    }
  });
});
