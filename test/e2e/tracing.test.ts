/**
 * OpenTelemetry tracing of the built router against a real HTTP collector (OTLP/HTTP JSON):
 * one SERVER span per request with the GenAI attributes, `traceparent` continued to the pod,
 * an unsampled parent honoured, spans flushed on drain, and nothing sent when tracing is off.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startOtlpCollector, type CollectedSpan, type OtlpCollector } from '../helpers/otlp-collector.js';
import { createTestCa, issueClientCertificate } from '../helpers/test-ca.js';
import { postJson, resourcesFor, startMock, startRouter, waitFor, type MockBackend, type Router } from '../helpers/processes.js';

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const PARENT = '00f067aa0ba902b7';

function spanOf(c: OtlpCollector, requestId: string): Promise<CollectedSpan> {
  return waitFor(`the span of request ${requestId}`, () => c.spans.find((s) => String(s.attrs['http.request.header.x-request-id']) === requestId));
}

/**
 * A mock pod and the built router (`workers`) exporting to `collector` every 20 ms (`env` on top),
 * handed to `body`; the router, the pod and the collector stopped after, whatever `body` did.
 */
async function withTracedRouter(collector: OtlpCollector, workers: number, env: NodeJS.ProcessEnv, body: (router: Router) => Promise<void>): Promise<void> {
  const mock = await startMock('pod-a');
  const router = await startRouter(resourcesFor([{ name: 'pod-a', port: mock.port }]), {
    workers,
    env: { OTEL_EXPORTER_OTLP_ENDPOINT: collector.url, OTEL_BSP_SCHEDULE_DELAY: '20', ...env },
  });
  try {
    await body(router);
  } finally {
    await router.stop();
    await mock.kill();
    await collector.close();
  }
}

describe('tracing on (OTEL_TRACES_EXPORTER=otlp)', () => {
  let collector: OtlpCollector;
  let mock: MockBackend;
  let router: Router;
  beforeAll(async () => {
    collector = await startOtlpCollector();
    mock = await startMock('pod-a');
    // One worker: its spans reach the collector in the order the requests ended.
    router = await startRouter(resourcesFor([{ name: 'pod-a', port: mock.port }]), {
      workers: 1,
      env: {
        OTEL_TRACES_EXPORTER: 'otlp', OTEL_EXPORTER_OTLP_ENDPOINT: collector.url, OTEL_SERVICE_NAME: 'ir-e2e',
        OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment=test', OTEL_BSP_SCHEDULE_DELAY: '50',
      },
    });
  });
  afterAll(async () => {
    await router?.stop();
    await mock?.kill();
    await collector?.close();
  });

  it('the start line says tracing is on and where spans go, without the endpoint\'s query', async () => {
    const start = router.stderr().split('\n').find((l) => l.includes('] start: '));
    expect(start).toContain(`tracing on (${new URL(collector.url).origin}/v1/traces)`);
  });

  it('makes a root span with the GenAI attributes and sends its child traceparent to the pod', async () => {
    const r = await postJson(`${router.url}/v1/completions`, { model: 'sf-model', prompt: 'San Francisco is a' }, { 'x-request-id': 'trace-root-1' });
    expect(r.status).toBe(200);
    const answer = await r.json() as { usage: { prompt_tokens: number; completion_tokens: number } };
    const span = await spanOf(collector, 'trace-root-1');
    expect(span.parentSpanId ?? '').toBe('');
    expect(span.kind).toBe(2);
    expect(span.name).toBe('POST /v1/completions');
    expect(span.resource).toMatchObject({ 'service.name': 'ir-e2e', 'deployment.environment': 'test' });
    expect(span.attrs).toMatchObject({
      'http.request.method': 'POST',
      'url.path': '/v1/completions',
      'http.response.status_code': 200,
      'gen_ai.request.model': 'sf-model',
      'gen_ai.operation.name': 'text_completion',
      'gen_ai.usage.output_tokens': answer.usage.completion_tokens,
      'server.address': '127.0.0.1',
      'server.port': mock.port,
      'inference_router.pod': 'pod-a',
      'http.request.header.x-request-id': ['trace-root-1'],
    });
    expect(span.attrs['gen_ai.usage.input_tokens']).toBeGreaterThan(0);
    expect(span.attrs['error.type']).toBeUndefined();
    expect(BigInt(span.endTimeUnixNano)).toBeGreaterThanOrEqual(BigInt(span.startTimeUnixNano));
    expect(span.status.code ?? 0).toBe(0);
    const seen = (await mock.stats()).lastHeaders;
    expect(seen.traceparent).toBe(`00-${span.traceId}-${span.spanId}-01`);
  });

  it('continues an incoming traceparent: same trace, the client span as parent, a new span id upstream', async () => {
    const incoming = `00-${TRACE}-${PARENT}-01`;
    const r = await postJson(`${router.url}/v1/chat/completions`, { model: 'sf-model', messages: [{ role: 'user', content: 'hi' }], stream: true },
      { 'x-request-id': 'trace-child-1', traceparent: incoming, tracestate: 'vendor=1' });
    expect(r.status).toBe(200);
    await r.text();
    const span = await spanOf(collector, 'trace-child-1');
    expect(span.traceId).toBe(TRACE);
    expect(span.parentSpanId).toBe(PARENT);
    expect(span.spanId).not.toBe(PARENT);
    expect(span.attrs['gen_ai.operation.name']).toBe('chat');
    expect(span.attrs['gen_ai.usage.output_tokens']).toBeGreaterThan(0);
    const seen = (await mock.stats()).lastHeaders;
    expect(seen.traceparent).toBe(`00-${TRACE}-${span.spanId}-01`);
    expect(seen.tracestate).toBe('vendor=1');
  });

  it('records the error type of a failed request', async () => {
    const r = await postJson(`${router.url}/v1/completions`, { model: 'no-such-model', prompt: 'x' }, { 'x-request-id': 'trace-error-1' });
    expect(r.status).toBe(404);
    const span = await spanOf(collector, 'trace-error-1');
    expect(span.attrs).toMatchObject({ 'error.type': 'model_not_found', 'http.response.status_code': 404, 'gen_ai.request.model': 'no-such-model' });
    expect(span.attrs['server.address']).toBeUndefined();
  });

  it('honours an unsampled parent: no span exported, the unsampled flag and a new span id go upstream', async () => {
    const r = await postJson(`${router.url}/v1/completions`, { model: 'sf-model', prompt: 'x' },
      { 'x-request-id': 'trace-unsampled-1', traceparent: `00-${TRACE}-${PARENT}-00` });
    expect(r.status).toBe(200);
    await r.text();
    const seen = (await mock.stats()).lastHeaders;
    expect(seen.traceparent).toMatch(new RegExp(`^00-${TRACE}-[0-9a-f]{16}-00$`));
    expect(seen.traceparent).not.toContain(PARENT);
    // A later sampled request's span arrives after anything this worker queued before it.
    const after = await postJson(`${router.url}/v1/completions`, { model: 'sf-model', prompt: 'x' }, { 'x-request-id': 'trace-after-1' });
    await after.text();
    await spanOf(collector, 'trace-after-1');
    expect(collector.spans.some((s) => s.attrs['http.request.header.x-request-id'] === 'trace-unsampled-1')).toBe(false);
  });

  it('exposes the drop counter (zero while the collector keeps up)', async () => {
    const text = await (await fetch(`${router.url}/metrics`)).text();
    expect(text).toMatch(/^inference_router_trace_spans_dropped_total\{reason="queue_full"\} 0$/m);
    expect(text).toMatch(/^inference_router_trace_spans_dropped_total\{reason="export_failed"\} 0$/m);
  });

  it('an invalid incoming traceparent starts a new trace; the tracestate of the old one is not forwarded', async () => {
    const r = await postJson(`${router.url}/v1/completions`, { model: 'sf-model', prompt: 'x' }, { 'x-request-id': 'trace-bad-1', traceparent: 'garbage', tracestate: 'vendor=1' });
    await r.text();
    const span = await spanOf(collector, 'trace-bad-1');
    expect(span.parentSpanId ?? '').toBe('');
    const seen = (await mock.stats()).lastHeaders;
    expect(seen.traceparent).toBe(`00-${span.traceId}-${span.spanId}-01`);
    expect(seen.tracestate).toBeUndefined();
  });

  it('a tracestate without a traceparent is discarded (W3C: it is invalid alone)', async () => {
    const r = await postJson(`${router.url}/v1/completions`, { model: 'sf-model', prompt: 'x' }, { 'x-request-id': 'trace-state-only-1', tracestate: 'vendor=1' });
    await r.text();
    const span = await spanOf(collector, 'trace-state-only-1');
    const seen = (await mock.stats()).lastHeaders;
    expect(seen.traceparent).toBe(`00-${span.traceId}-${span.spanId}-01`);
    expect(seen.tracestate).toBeUndefined();
  });
});

describe('tracing and drain', () => {
  it('exports to an https:// collector whose certificate the process trusts (NODE_EXTRA_CA_CERTS), over one kept connection', async () => {
    const ca = await createTestCa();
    try {
      const collector = await startOtlpCollector({ tls: { certFile: ca.certFile, keyFile: ca.keyFile } });
      await withTracedRouter(collector, 1, { NODE_EXTRA_CA_CERTS: ca.caFile }, async (router) => {
        for (let i = 0; i < 3; i++) {
          expect((await postJson(`${router.url}/v1/completions`, { model: 'sf-model', prompt: 'x' }, { 'x-request-id': `tls-${i}` })).status).toBe(200);
          await spanOf(collector, `tls-${i}`); // each its own export, after the one before was answered
        }
        expect(collector.requests()).toBe(3);
        expect(collector.connections()).toBe(1);
        const metrics = await (await fetch(`${router.url}/metrics`)).text();
        expect(metrics).not.toMatch(/inference_router_trace_spans_dropped_total\{reason="export_failed"\} [1-9]/);
      });
    } finally {
      ca.remove();
    }
  });

  it('exports over mutual TLS with the OTLP variables: the CA file trusted in place of Node\'s list, the client certificate presented by each worker', async () => {
    const ca = await createTestCa();
    try {
      const client = await issueClientCertificate(ca, 'router-spans');
      const collector = await startOtlpCollector({ tls: { certFile: ca.certFile, keyFile: ca.keyFile, clientCaFile: ca.caFile } });
      const tlsFiles = {
        OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE: ca.caFile, OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE: client.certFile, OTEL_EXPORTER_OTLP_CLIENT_KEY: client.keyFile,
      };
      await withTracedRouter(collector, 2, tlsFiles, async (router) => {
        for (let i = 0; i < 8; i++) {
          expect((await postJson(`${router.url}/v1/completions`, { model: 'sf-model', prompt: 'x' }, { 'x-request-id': `mtls-${i}` })).status).toBe(200);
        }
        for (let i = 0; i < 8; i++) await spanOf(collector, `mtls-${i}`);
        expect(collector.clientNames().length).toBeGreaterThanOrEqual(1);
        expect(new Set(collector.clientNames())).toEqual(new Set(['router-spans']));
        expect(router.stderr()).not.toMatch(/exporting spans .* failed/);
      });
    } finally {
      ca.remove();
    }
  });

  it('refuses TLS files that cannot be used at start, naming the variable and the file (exit 2)', async () => {
    const { startProcess, CLI, tempDir } = await import('../helpers/processes.js');
    const ca = await createTestCa();
    try {
      const base = { OTEL_EXPORTER_OTLP_ENDPOINT: 'https://127.0.0.1:4318' };
      const missing = startProcess([CLI, '--resources', `${tempDir()}/none.yaml`], { ...base, OTEL_EXPORTER_OTLP_CERTIFICATE: `${ca.dir}/absent.pem` });
      expect(await missing.exited).toBe(2);
      expect(missing.stderr()).toContain(`OTEL_EXPORTER_OTLP_CERTIFICATE: expected a readable PEM file of CA certificates; got "${ca.dir}/absent.pem" (cannot read it: ENOENT`);
      const mismatch = startProcess([CLI, '--resources', `${tempDir()}/none.yaml`], { ...base, OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE: ca.caFile, OTEL_EXPORTER_OTLP_CLIENT_KEY: ca.keyFile });
      expect(await mismatch.exited).toBe(2);
      expect(mismatch.stderr()).toContain(`OTEL_EXPORTER_OTLP_CLIENT_KEY: the key in "${ca.keyFile}" is not the key of the certificate in "${ca.caFile}"`);
      const plain = startProcess([CLI, '--resources', `${tempDir()}/none.yaml`], { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318', OTEL_EXPORTER_OTLP_CERTIFICATE: ca.caFile });
      expect(await plain.exited).toBe(2);
      expect(plain.stderr()).toContain('OTEL_EXPORTER_OTLP_CERTIFICATE: TLS files for an endpoint that is not https://');
    } finally {
      ca.remove();
    }
  });

  it('sends each export gzipped with OTEL_EXPORTER_OTLP_COMPRESSION=gzip', async () => {
    const collector = await startOtlpCollector();
    await withTracedRouter(collector, 1, { OTEL_EXPORTER_OTLP_COMPRESSION: 'gzip' }, async (router) => {
      for (let i = 0; i < 3; i++) {
        expect((await postJson(`${router.url}/v1/completions`, { model: 'sf-model', prompt: 'x' }, { 'x-request-id': `gz-${i}` })).status).toBe(200);
      }
      for (let i = 0; i < 3; i++) expect((await spanOf(collector, `gz-${i}`)).attrs['gen_ai.request.model']).toBe('sf-model');
      expect(new Set(collector.encodings())).toEqual(new Set(['gzip']));
    });
  });

  it('flushes queued spans when the router drains', async () => {
    const collector = await startOtlpCollector();
    const mock = await startMock('pod-a');
    const router = await startRouter(resourcesFor([{ name: 'pod-a', port: mock.port }]), {
      workers: 2,
      env: { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${collector.url}/v1/traces`, OTEL_BSP_SCHEDULE_DELAY: '3600000' },
    });
    try {
      for (let i = 0; i < 6; i++) expect((await postJson(`${router.url}/v1/completions`, { model: 'sf-model', prompt: 'x' })).status).toBe(200);
      expect(collector.received()).toBe(0); // a batch of 512 is not full and the delay is an hour
      expect(await router.kill()).toBe(0);
      expect(collector.received()).toBe(6);
      expect(collector.spans.every((s) => s.resource['service.name'] === 'inference-router')).toBe(true);
    } finally {
      await router.stop();
      await mock.kill();
      await collector.close();
    }
  });
});

describe('tracing off', () => {
  it('sends nothing and passes the client traceparent through untouched', async () => {
    const collector = await startOtlpCollector();
    const mock = await startMock('pod-a');
    const router = await startRouter(resourcesFor([{ name: 'pod-a', port: mock.port }]), {
      workers: 1,
      env: { OTEL_SDK_DISABLED: 'true', OTEL_TRACES_EXPORTER: 'otlp', OTEL_EXPORTER_OTLP_ENDPOINT: collector.url, OTEL_BSP_SCHEDULE_DELAY: '1' },
    });
    try {
      const incoming = `00-${TRACE}-${PARENT}-01`;
      for (let i = 0; i < 3; i++) {
        const r = await postJson(`${router.url}/v1/completions`, { model: 'sf-model', prompt: 'x' }, { traceparent: incoming });
        expect(r.status).toBe(200);
        await r.text();
      }
      expect((await mock.stats()).lastHeaders.traceparent).toBe(incoming);
      const metrics = await (await fetch(`${router.url}/metrics`)).text();
      expect(metrics).not.toMatch(/^inference_router_trace_spans_dropped_total\{/m);
      expect(await router.kill()).toBe(0);
      expect(collector.requests()).toBe(0);
    } finally {
      await router.stop();
      await mock.kill();
      await collector.close();
    }
  });

  it('logs that spans cannot be exported (a wrong collector path), not only counting them', async () => {
    const collector = await startOtlpCollector();
    const mock = await startMock('pod-a');
    const router = await startRouter(resourcesFor([{ name: 'pod-a', port: mock.port }]), {
      workers: 1,
      env: { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${collector.url}/v1/wrong`, OTEL_BSP_SCHEDULE_DELAY: '50' },
    });
    try {
      const r = await postJson(`${router.url}/v1/completions`, { model: 'sf-model', prompt: 'x' });
      await r.text();
      await waitFor('the failed export to be logged', () => /tracing: exporting spans to http:\/\/127\.0\.0\.1:\d+\/v1\/wrong failed \(HTTP 404\)/.test(router.stderr()));
    } finally {
      await router.stop();
      await mock.kill();
      await collector.close();
    }
  });

  it('refuses a bad OTEL setting at start, naming it (exit 2)', async () => {
    const { startProcess, CLI, tempDir } = await import('../helpers/processes.js');
    const p = startProcess([CLI, '--resources', `${tempDir()}/none.yaml`], { OTEL_TRACES_EXPORTER: 'otlp', OTEL_TRACES_SAMPLER: 'sometimes' });
    expect(await p.exited).toBe(2);
    expect(p.stderr()).toContain('OTEL_TRACES_SAMPLER');
  });

  it('refuses an export header no export could send (a line break in its value) at start, naming it, not showing the value (exit 2)', async () => {
    const { startProcess, CLI, tempDir } = await import('../helpers/processes.js');
    const p = startProcess([CLI, '--resources', `${tempDir()}/none.yaml`], { OTEL_TRACES_EXPORTER: 'otlp', OTEL_EXPORTER_OTLP_HEADERS: 'x-api-key=secret-1%0Asecret-2' });
    expect(await p.exited).toBe(2);
    expect(p.stderr()).toContain('OTEL_EXPORTER_OTLP_HEADERS: the value of x-api-key is not a valid HTTP header value');
    expect(p.stderr()).not.toContain('secret');
  });

  it('refuses an endpoint with a user and password (they belong in a header) at start, not showing them (exit 2)', async () => {
    const { startProcess, CLI, tempDir } = await import('../helpers/processes.js');
    const p = startProcess([CLI, '--resources', `${tempDir()}/none.yaml`], { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://user:s3cret@127.0.0.1:4318' });
    expect(await p.exited).toBe(2);
    expect(p.stderr()).toContain('OTEL_EXPORTER_OTLP_ENDPOINT must not hold a user or password');
    expect(p.stderr()).not.toContain('s3cret');
  });
});
