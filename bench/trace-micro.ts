/**
 * Micro benchmark that chose the tracing implementation (docs/observability.md): CPU per traced
 * request of
 *  1. the router's tracer (src/observe/tracer.ts + otlp-exporter.ts: span JSON built at end,
 *     OTLP/HTTP JSON batches), and
 *  2. the official SDK: @opentelemetry/sdk-trace-base BasicTracerProvider + BatchSpanProcessor +
 *     @opentelemetry/exporter-trace-otlp-http, W3C propagator from @opentelemetry/core,
 * doing the same work per request: read the incoming traceparent (half the requests have one),
 * start a SERVER span, make the traceparent for the pod, set the same 13 attributes, end it;
 * spans go to a mock collector in another process (its CPU is not counted). CPU is this
 * process's user+system time over the whole run, export included; heap growth is sampled.
 *
 * The SDK is not a dependency of the router: install it anywhere and point at it, e.g.
 *   mkdir /tmp/otel && cd /tmp/otel && npm i @opentelemetry/sdk-trace-base @opentelemetry/exporter-trace-otlp-http \
 *     @opentelemetry/api @opentelemetry/core @opentelemetry/resources
 *   npm run build && node dist/bench/trace-micro.js --sdk-dir /tmp/otel/node_modules
 */
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { Exchange } from 'inference-router/http/exchange';
import { RequestContext } from 'inference-router/http/request-context';
import { Tracer } from 'inference-router/observe/tracer';
import { parseTraceSettings } from 'inference-router/observe/trace-settings';
import { ROOT } from './targets.js';
import { readCommandLine, type CommandSpec } from './cli-args.js';
import { stopChildrenOnInterrupt } from './interrupt.js';

const COMMAND: CommandSpec = {
  usage: 'Usage: node dist/bench/trace-micro.js [--sdk-dir DIR/node_modules] [--rate N] [--requests N] [--gzip]',
  values: ['--sdk-dir', '--rate', '--requests'],
  flags: ['--gzip'],
};
const { N, SDK_DIR, RATE, GZIP } = readCommandLine(COMMAND, (line) => ({
  N: line.positiveNumber('--requests') ?? 100_000,
  SDK_DIR: line.value('--sdk-dir') ?? null,
  RATE: line.positiveNumber('--rate') ?? 20_000,
  /** Also the router's tracer with OTEL_EXPORTER_OTLP_COMPRESSION=gzip, alternating with it without. */
  GZIP: line.has('--gzip'),
}));
const INCOMING = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';

interface Collector { url: string; received(): Promise<number>; stop(): void }

async function startCollector(): Promise<Collector> {
  const helper = join(ROOT, 'dist/test/helpers/otlp-collector.js');
  const child = spawn(process.execPath, ['--input-type=module', '-e',
    `const m = await import(${JSON.stringify(helper)}); const c = await m.startOtlpCollector({ keepSpans: false }); console.log(c.url); process.stdin.on('data', () => console.log(c.received()));`],
  { stdio: ['pipe', 'pipe', 'inherit'] });
  const line = (): Promise<string> => new Promise((resolve) => child.stdout.once('data', (d: string) => resolve(d.trim())));
  child.stdout.setEncoding('utf8');
  const url = await line();
  return {
    url,
    received: async () => { const l = line(); child.stdin.write('\n'); return Number(await l); },
    stop: () => child.kill(),
  };
}

function request(i: number): Exchange {
  const ctx = new RequestContext('POST', '/v1/completions', 'HTTP/1.1', `req-${i}`, Date.now(), performance.now());
  const fwd = i % 2 === 0 ? ['content-type', 'application/json', 'traceparent', INCOMING] : ['content-type', 'application/json'];
  return new Exchange(null as never, ctx, '/v1/completions', fwd, null, '');
}

function finishContext(x: Exchange): void {
  const c = x.ctx;
  c.modelName = 'sf-model'; c.modelRoute = 'default/sf-route'; c.modelServer = 'default/sf-server'; c.selectedPod = 'pod-a';
  c.inputTokens = 5; c.outputTokens = 16; c.statusCode = 200;
}

interface Impl { name: string; one(i: number): void; flush(): Promise<void> }

function ours(url: string, compression: 'gzip' | 'none'): Impl {
  const tracer = new Tracer(parseTraceSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: url, OTEL_EXPORTER_OTLP_COMPRESSION: compression })!);
  return {
    name: `router tracer (purpose-built OTLP/HTTP JSON${compression === 'gzip' ? ', gzip' : ''})`,
    one(i) {
      const x = request(i);
      const span = tracer.start(x);
      span.pod = 'http://127.0.0.1:9000';
      x.forwardHeaders.push('traceparent', x.traceparent!);
      finishContext(x);
      tracer.end(span, x);
    },
    flush: () => tracer.exporter.flush(),
  };
}

function sdk(url: string, dir: string): Impl {
  const req = createRequire(join(dir, 'x.js'));
  const [api, core, base, otlp, resources] = ['api', 'core', 'sdk-trace-base', 'exporter-trace-otlp-http', 'resources'].map((p) => req(`@opentelemetry/${p}`));
  const processor = new base.BatchSpanProcessor(new otlp.OTLPTraceExporter({ url: `${url}/v1/traces` }));
  const provider = new base.BasicTracerProvider({ resource: resources.resourceFromAttributes({ 'service.name': 'inference-router' }), spanProcessors: [processor] });
  const tracer = provider.getTracer('inference-router', '0.1.0');
  const prop = new core.W3CTraceContextPropagator();
  const ROOT_CONTEXT = api.ROOT_CONTEXT;
  const getter = api.defaultTextMapGetter;
  const setter = api.defaultTextMapSetter;
  return {
    name: `official SDK (sdk-trace-base + exporter-trace-otlp-http)`,
    one(i) {
      const x = request(i);
      const carrier: Record<string, string> = {};
      const fwd = x.forwardHeaders;
      for (let k = 0; k < fwd.length; k += 2) if (fwd[k] === 'traceparent') { carrier.traceparent = fwd[k + 1]; fwd.splice(k, 2); break; }
      const parent = prop.extract(ROOT_CONTEXT, carrier, getter);
      const span = tracer.startSpan(`POST ${x.url}`, { kind: api.SpanKind.SERVER, startTime: performance.timeOrigin + x.ctx.t0 }, parent);
      const out: Record<string, string> = {};
      prop.inject(api.trace.setSpan(ROOT_CONTEXT, span), out, setter);
      fwd.push('traceparent', out.traceparent);
      finishContext(x);
      const c = x.ctx;
      span.setAttributes({
        'http.request.method': c.method, 'url.path': x.url, 'http.response.status_code': c.statusCode,
        'http.request.header.x-request-id': c.requestId, 'gen_ai.request.model': c.modelName, 'gen_ai.operation.name': 'text_completion',
        'gen_ai.usage.input_tokens': c.inputTokens, 'gen_ai.usage.output_tokens': c.outputTokens,
        'server.address': '127.0.0.1', 'server.port': 9000,
        'inference_router.model_route': c.modelRoute, 'inference_router.model_server': c.modelServer, 'inference_router.pod': c.selectedPod,
      });
      span.end();
    },
    flush: () => processor.forceFlush(),
  };
}

/** Runs `n` requests at RATE per second (in 5 ms steps, catching up), as a loaded worker would. */
async function measure(impl: Impl, n: number, c: Collector): Promise<{ cpuUsPerReq: number; heapMiB: number; delivered: number }> {
  for (let i = 0; i < 20_000; i += 100) {
    for (let k = 0; k < 100; k++) impl.one(i + k); // warm-up
    await new Promise((r) => setTimeout(r, 5));
  }
  await impl.flush();
  const before = await c.received();
  global.gc?.();
  const heap0 = process.memoryUsage().heapUsed;
  let heapMax = heap0;
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  let done = 0;
  while (done < n) {
    const due = Math.min(n, Math.floor(((performance.now() - t0) * RATE) / 1000));
    for (; done < due; done++) impl.one(done);
    heapMax = Math.max(heapMax, process.memoryUsage().heapUsed);
    await new Promise((r) => setTimeout(r, 5));
  }
  await impl.flush();
  const cpu = process.cpuUsage(cpu0);
  await new Promise((r) => setTimeout(r, 200)); // the collector's last answer
  return { cpuUsPerReq: (cpu.user + cpu.system) / n, heapMiB: (heapMax - heap0) / 2 ** 20, delivered: (await c.received()) - before };
}

async function main(): Promise<void> {
  stopChildrenOnInterrupt('trace-micro');
  const collector = await startCollector();
  try {
    const impls = [ours(collector.url, 'none')];
    if (GZIP) impls.push(ours(collector.url, 'gzip'));
    if (SDK_DIR !== null) impls.push(sdk(collector.url, SDK_DIR));
    else console.log('(no --sdk-dir: the official SDK is not measured)');
    console.log(`${N} traced requests each at ${RATE}/s, CPU of this process per request (export included), 3 rounds alternating`);
    const rows: Record<string, number[]> = {};
    for (let round = 0; round < 3; round++) {
      for (const impl of impls) {
        const r = await measure(impl, N, collector);
        (rows[impl.name] ??= []).push(r.cpuUsPerReq);
        console.log(`  round ${round + 1} ${impl.name}: ${r.cpuUsPerReq.toFixed(2)} µs/request, peak heap growth ${r.heapMiB.toFixed(1)} MiB, ${r.delivered} of ${N} spans delivered`);
      }
    }
    for (const [name, v] of Object.entries(rows)) {
      const med = [...v].sort((a, b) => a - b)[1];
      console.log(`median ${name}: ${med.toFixed(2)} µs/request`);
    }
    console.log(JSON.stringify(rows));
  } finally {
    collector.stop();
  }
  process.exit(0);
}

void main();
