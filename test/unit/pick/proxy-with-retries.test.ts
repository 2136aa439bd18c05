/**
 * proxyWithRetries with real sockets: the HTTP/1.1 client's pools talk to real node:http servers,
 * and the real scheduler (passive health, its metrics) hears each attempt's outcome.
 */
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Registry } from 'prom-client';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { openAiApi } from '../../../src/api/openai.js';
import { Exchange } from '../../../src/http/exchange.js';
import { RequestContext } from '../../../src/http/request-context.js';
import { RouterError } from '../../../src/errors.js';
import { SchedulerMetrics } from '../../../src/observe/scheduler-metrics.js';
import { OutlierDetector } from '../../../src/pick/outlier-detector.js';
import { proxyWithRetries } from '../../../src/pick/proxy-with-retries.js';
import { Scheduler } from '../../../src/pick/scheduler.js';
import { DEFAULT_SCHEDULER_CONFIG } from '../../../src/pick/scheduler-config.js';
import { DEFAULT_RETRY, type CompiledServer } from '../../../src/route/route-table.js';
import type { TokenCounter } from '../../../src/tokens/token-counter.js';
import { EndpointState } from '../../../src/upstream/endpoint-registry.js';
import { UpstreamSocket } from '../../../src/upstream/http1/upstream-socket.js';

/** A uWS HttpResponse that only records what it was asked to write. */
class RecordingResponse {
  readonly calls: string[] = [];
  cork(f: () => void): void { f(); }
  writeStatus(s: string | Uint8Array): void { this.calls.push(`status ${Buffer.from(s).toString('latin1')}`); }
  writeHeader(): void {}
  /** What each write() and end() carried (a stream's chunks). */
  readonly bodies: string[] = [];
  write(b: Buffer): boolean {
    this.bodies.push(Buffer.from(b).toString());
    return true;
  }
  end(b?: Buffer): void {
    if (b !== undefined && b.length > 0) this.bodies.push(Buffer.from(b).toString());
    this.calls.push('end');
  }
  endWithoutBody(): void { this.calls.push('end'); }
  onWritable(): void {}
  getWriteOffset(): number { return 0; }
  tryEnd(): [boolean, boolean] { return [true, true]; }
  close(): void { this.calls.push('close'); }
  pause(): void {}
  resume(): void {}
}

const TOKENS: TokenCounter = { countPrompt: () => 1, countText: () => 1, close: async () => {} };
const BODY = Buffer.from(JSON.stringify({ model: 'm', prompt: 'hello' }));

const servers: Server[] = [];
const held: ServerResponse[] = [];
const pods: EndpointState[] = [];

afterEach(async () => {
  for (const p of pods.splice(0)) p.pool.close();
  for (const res of held.splice(0)) res.destroy();
  await Promise.all(servers.splice(0).map((s) => new Promise<void>((r) => {
    s.closeAllConnections();
    s.close(() => r());
  })));
});

/** A pod that holds every request (`hold`), or answers each at once with a completion. */
async function podServer(hold: boolean): Promise<number> {
  const s = createServer((req, res) => {
    req.resume();
    if (hold) {
      held.push(res);
      return;
    }
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ choices: [{ text: 'hi' }], usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } }));
    });
  });
  servers.push(s);
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  return (s.address() as AddressInfo).port;
}

function setUp() {
  const registry = new Registry();
  const lines: string[] = [];
  const scheduler = new Scheduler({
    settings: {
      outlier: { consecutiveFailures: 3, consecutive5xx: 3, baseEjectionMs: 30_000, maxEjectionMs: 300_000 },
      podMetricsIntervalMs: 1_000,
      config: DEFAULT_SCHEDULER_CONFIG,
    },
    clock: () => Date.now(),
    metrics: new SchedulerMetrics(registry, () => []),
    log: (_level, m) => lines.push(m),
  });
  const counter = async (name: string, pod: string): Promise<number> => {
    const m = (await registry.getMetricsAsJSON()).find((x) => x.name === name) as { values: { value: number; labels: Record<string, string> }[] } | undefined;
    return m?.values.filter((v) => v.labels.pod === pod || v.labels.server === pod).reduce((a, v) => a + v.value, 0) ?? 0;
  };
  return { scheduler, lines, counter };
}

/** One request through proxyWithRetries; resolves with the status written, or the error it failed with. */
function proxy(scheduler: Scheduler, server: CompiledServer): Promise<{ status: string | null; error: unknown; pod: string }> {
  const res = new RecordingResponse();
  const ctx = new RequestContext('POST', '/v1/completions', 'HTTP/1.1', 'rid', Date.now(), performance.now());
  const x = new Exchange(res as never, ctx, '/v1/completions', [], null, '');
  x.body = BODY;
  const req = openAiApi.parse(BODY, '/v1/completions');
  return new Promise((resolve) => {
    proxyWithRetries(x, openAiApi, TOKENS, server, req, null, scheduler, null, {
      proxied: () => setImmediate(() => resolve({ status: res.calls.find((c) => c.startsWith('status'))?.slice('status '.length) ?? null, error: null, pod: ctx.selectedPod })),
      proxyFailed: (err) => resolve({ status: null, error: err, pod: ctx.selectedPod }),
    });
  });
}

function compiled(endpoints: EndpointState[]): CompiledServer {
  return { key: 'default/llama', model: null, timeoutMs: 60_000, inferenceEngine: null, retry: DEFAULT_RETRY, endpoints, pd: null };
}

/**
 * pod-a with one connection: a request it holds (`first`) and one waiting for that connection
 * (`second`), both through proxyWithRetries.
 */
async function heldAndWaiting(scheduler: Scheduler): Promise<{ a: EndpointState; first: ReturnType<typeof proxy>; second: ReturnType<typeof proxy> }> {
  const a = new EndpointState('pod-a', '127.0.0.1', await podServer(true), { connections: 1 });
  pods.push(a);
  const first = proxy(scheduler, compiled([a]));
  while (held.length < 1) await new Promise((r) => setTimeout(r, 5));
  const second = proxy(scheduler, compiled([a]));
  return { a, first, second };
}

/** A pod with one connection and room for one waiting request, both taken by requests the pod holds. */
async function fullPod(name: string): Promise<EndpointState> {
  const port = await podServer(true);
  const pod = new EndpointState(name, '127.0.0.1', port, { connections: 1, idleTimeoutMs: 4_000, maxQueue: 1 });
  pods.push(pod);
  const ignore = { onHeaders: () => {}, onData: () => {}, onComplete: () => {}, onError: () => {} };
  for (let i = 0; i < 2; i++) pod.pool.dispatch({ path: '/v1/completions', method: 'POST', headers: [], body: BODY }, ignore as never);
  while (held.length < 1) await new Promise((r) => setTimeout(r, 5));
  expect(pod.pool.stats).toMatchObject({ connections: 1, queued: 1 });
  return pod;
}

describe('proxyWithRetries: the router\'s own queue limit is not the pod\'s failure', () => {
  it('a pod whose queue is full is not counted as failing to connect, nor ejected; the answer says the queue was full', async () => {
    const { scheduler, counter, lines } = setUp();
    const a = await fullPod('pod-a');
    const errors: unknown[] = [];
    for (let i = 0; i < 4; i++) errors.push((await proxy(scheduler, compiled([a]))).error);
    // More refusals than the 3 connect failures in a row that eject a pod.
    expect(lines).toEqual([]);
    expect(OutlierDetector.ejected(a, Date.now())).toBe(false);
    expect(a.health.consecutiveFailures).toBe(0);
    expect(a.health.reportFailures).toBe(0);
    expect(await counter('inference_router_upstream_connect_failures_total', 'pod-a')).toBe(0);
    expect(await counter('inference_router_pod_ejections_total', 'pod-a')).toBe(0);
    for (const e of errors) {
      expect(e).toBeInstanceOf(RouterError);
      const { type, code, status, message } = e as RouterError;
      expect([type, code, status]).toEqual(['upstream_error', 'upstream_queue_full', 503]);
      expect(message).toMatch(/^the router's queue for pod pod-a is full \(1 requests already wait for a connection to 127\.0\.0\.1:\d+\); nothing was sent to the pod$/);
    }
  });

  it('the request goes on to another pod, as after a connect failure', async () => {
    const { scheduler, counter } = setUp();
    const a = await fullPod('pod-a');
    const b = new EndpointState('pod-b', '127.0.0.1', await podServer(false), { connections: 4 });
    pods.push(b);
    // pod-b looks busier (requests in flight), so pod-a is picked first.
    for (let i = 0; i < 8; i++) b.begin();
    const r = await proxy(scheduler, compiled([a, b]));
    expect(r).toMatchObject({ status: '200 OK', error: null, pod: 'pod-b' });
    expect(await counter('inference_router_upstream_retries_total', 'default/llama')).toBe(1);
    expect(a.health.consecutiveFailures).toBe(0);
    expect(await counter('inference_router_upstream_connect_failures_total', 'pod-a')).toBe(0);
  });
});

/** `server` with the ModelServer's retry policy: `attempts` more pods, `intervalMs` between attempts. */
function withRetry(server: CompiledServer, attempts: number, intervalMs: number): CompiledServer {
  return { ...server, retry: { attempts, anyFailure: true, intervalMs } };
}

/**
 * As the scheduler picks `pod` for the next attempt, before the request goes out to it: the pod
 * leaves the configuration, and the requests it had in flight (begin() calls) end, closing its pool.
 */
function retireAtRetry(scheduler: Scheduler, pod: EndpointState): void {
  const retried = scheduler.retried.bind(scheduler);
  scheduler.retried = (server: string) => {
    retried(server);
    pod.retire();
    while (pod.inflight > 0) pod.end();
  };
}

describe('proxyWithRetries: a pod whose pool the router closed is not the pod\'s failure', () => {
  it('a pod that left the configuration after it was picked is not counted as failing; the request goes on to another pod', async () => {
    const { scheduler, counter, lines } = setUp();
    const a = await fullPod('pod-a');
    const b = new EndpointState('pod-b', '127.0.0.1', await podServer(false), { connections: 4 });
    const c = new EndpointState('pod-c', '127.0.0.1', await podServer(false), { connections: 4 });
    pods.push(b, c);
    // Picked in the order a, b, c (fewest requests in flight first).
    for (let i = 0; i < 4; i++) b.begin();
    for (let i = 0; i < 8; i++) c.begin();
    // pod-b leaves the configuration while the request waits out the retry interval after pod-a.
    retireAtRetry(scheduler, b);
    const r = await proxy(scheduler, withRetry(compiled([a, b, c]), 3, 20));
    expect(r).toMatchObject({ status: '200 OK', error: null, pod: 'pod-c' });
    expect(lines).toEqual([]);
    expect(b.health.consecutiveFailures).toBe(0);
    expect(b.health.reportFailures).toBe(0);
    expect(await counter('inference_router_upstream_connect_failures_total', 'pod-b')).toBe(0);
  });

  it('with no pod left the answer is 503 upstream_pod_removed', async () => {
    const { scheduler, counter, lines } = setUp();
    const a = await fullPod('pod-a');
    const b = new EndpointState('pod-b', '127.0.0.1', await podServer(false), { connections: 4 });
    pods.push(b);
    for (let i = 0; i < 4; i++) b.begin();
    retireAtRetry(scheduler, b);
    const { error } = await proxy(scheduler, withRetry(compiled([a, b]), 3, 20));
    expect(lines).toEqual([]);
    expect(b.health.consecutiveFailures).toBe(0);
    expect(b.health.reportFailures).toBe(0);
    expect(await counter('inference_router_upstream_connect_failures_total', 'pod-b')).toBe(0);
    expect(error).toBeInstanceOf(RouterError);
    const { type, code, status, message } = error as RouterError;
    expect([type, code, status]).toEqual(['upstream_error', 'upstream_pod_removed', 503]);
    expect(message).toMatch(/^pod pod-b left the configuration before the request was sent to it \(pool for 127\.0\.0\.1:\d+ is closed: the pod left the configuration\); no other pod took the request$/);
  });

  it('requests waiting for a connection when the router stops are answered 503 router_stopping, not counted against the pod', async () => {
    const { scheduler, counter } = setUp();
    const { a, first, second } = await heldAndWaiting(scheduler);
    expect(a.pool.stats).toMatchObject({ connections: 1, queued: 1 });
    // As EndpointRegistry.closeAll does when the drain timeout passed.
    a.pool.close('the router is stopping: ROUTER_DRAIN_TIMEOUT (1000 ms) passed');
    const [, waiting] = await Promise.all([first, second]);
    expect(a.health.reportFailures).toBe(0);
    expect(await counter('inference_router_upstream_connect_failures_total', 'pod-a')).toBe(0);
    const { type, code, status, message } = waiting.error as RouterError;
    expect([type, code, status]).toEqual(['upstream_error', 'router_stopping', 503]);
    expect(message).toMatch(/^the router is stopping: nothing was sent to pod pod-a \(pool for 127\.0\.0\.1:\d+ is closed: the router is stopping: ROUTER_DRAIN_TIMEOUT \(1000 ms\) passed\)$/);
  });
});

/** A port nothing listens on (a server's, closed again): a connection to it is refused. */
async function refusingPort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as AddressInfo).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

describe('proxyWithRetries: the answer when every attempt failed', () => {
  it('a pod not reached after the router refused to send to another: 502 upstream_unreachable naming the pods tried, not the refusal', async () => {
    const { scheduler, counter } = setUp();
    const a = await fullPod('pod-a');
    const b = new EndpointState('pod-b', '127.0.0.1', await refusingPort(), { connections: 4 });
    pods.push(b);
    // pod-b looks busier (requests in flight), so pod-a (its queue full) is picked first.
    for (let i = 0; i < 8; i++) b.begin();
    const { error } = await proxy(scheduler, compiled([a, b]));
    expect(await counter('inference_router_upstream_connect_failures_total', 'pod-b')).toBe(1);
    expect(await counter('inference_router_upstream_connect_failures_total', 'pod-a')).toBe(0);
    const { type, code, status, message } = error as RouterError;
    expect([type, code, status]).toEqual(['upstream_error', 'upstream_unreachable', 502]);
    expect(message).toBe('cannot connect to any pod of ModelServer default/llama (tried pod-a: its queue in the router is full, pod-b: connection refused)');
  });

  it('the router\'s refusal after a pod not reached stays the answer (the last attempt\'s)', async () => {
    const { scheduler } = setUp();
    const a = new EndpointState('pod-a', '127.0.0.1', await refusingPort(), { connections: 4 });
    pods.push(a);
    const b = await fullPod('pod-b');
    for (let i = 0; i < 8; i++) b.begin();
    // pod-a (fewer in flight) is picked first and refuses the connection; pod-b's queue is full.
    const { error } = await proxy(scheduler, compiled([a, b]));
    const { code, status } = error as RouterError;
    expect([code, status]).toEqual(['upstream_queue_full', 503]);
  });

  it('a pod that left the configuration while it had requests, its pool then closed by the stopping router: 503 router_stopping', async () => {
    const { scheduler } = setUp();
    const { a, first, second } = await heldAndWaiting(scheduler);
    // Retired with requests in flight: its pool stays open until they end...
    a.retire();
    expect(a.pool.stats).toMatchObject({ connections: 1, queued: 1 });
    // ...but the drain timeout passes first (EndpointRegistry.closeAll).
    a.pool.close('the router is stopping: ROUTER_DRAIN_TIMEOUT (1000 ms) passed');
    const [, waiting] = await Promise.all([first, second]);
    const { code, status } = waiting.error as RouterError;
    expect([code, status]).toEqual(['router_stopping', 503]);
  });
});

describe('proxyWithRetries: a pod that timed out, then pods not taking the request', () => {
  /** With a retry policy (every failure retried) and a timeout the holding pod passes. */
  function withRetry(endpoints: EndpointState[]): CompiledServer {
    return { ...compiled(endpoints), timeoutMs: 300, retry: { attempts: 2, anyFailure: true, intervalMs: 0 } };
  }

  async function timingOut(): Promise<{ scheduler: Scheduler; t: EndpointState; q: EndpointState; r: EndpointState }> {
    const { scheduler } = setUp();
    // Picked in this order (fewest in flight first): t holds the request past the timeout, q's
    // queue is full (the router refuses), r refuses the connection.
    const t = new EndpointState('pod-t', '127.0.0.1', await podServer(true), { connections: 4 });
    const q = await fullPod('pod-q');
    const r = new EndpointState('pod-r', '127.0.0.1', await refusingPort(), { connections: 4 });
    pods.push(t, r);
    for (let i = 0; i < 4; i++) q.begin();
    for (let i = 0; i < 8; i++) r.begin();
    return { scheduler, t, q, r };
  }

  it('timed out, then a pod not reached: the timeout is the answer', async () => {
    const { scheduler, t, r } = await timingOut();
    const { error } = await proxy(scheduler, withRetry([t, r]));
    expect([(error as RouterError).code, (error as RouterError).status]).toEqual(['upstream_timeout', 504]);
  });

  it('timed out, then the router refused a pod, then a pod not reached: still the timeout, not "cannot connect to any pod"', async () => {
    const { scheduler, t, q, r } = await timingOut();
    const { error } = await proxy(scheduler, withRetry([t, q, r]));
    const { code, status, message } = error as RouterError;
    expect([code, status, message]).toEqual(['upstream_timeout', 504, 'inference timed out after 0.3s']);
  });
});

describe('proxyWithRetries: a stream cut partway, and a pod\'s error event in its stream', () => {
  const CHUNK = `data: ${JSON.stringify({ id: 'c', object: 'text_completion', choices: [{ index: 0, text: 'hi', finish_reason: null }] })}\n\n`;
  const STREAM_BODY = Buffer.from(JSON.stringify({ model: 'm', prompt: 'hello', stream: true }));

  /** A pod that answers a stream's first event, then (x-then) holds it, resets its connection, or sends an error event and ends. */
  async function streamingPod(): Promise<number> {
    const s = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write(CHUNK);
        const then = req.headers['x-then'];
        if (then === 'reset') setTimeout(() => req.socket.resetAndDestroy(), 50);
        else if (then === 'error-event') res.end('data: {"error": {"message": "CUDA error: out of memory", "type": "InternalServerError", "code": 500}}\n\ndata: [DONE]\n\n');
        else held.push(res);
      });
    });
    servers.push(s);
    await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
    return (s.address() as AddressInfo).port;
  }

  /** One streamed request through proxyWithRetries: its response, its context, and its end. */
  function proxyStream(scheduler: Scheduler, server: CompiledServer, then: string) {
    const res = new RecordingResponse();
    const ctx = new RequestContext('POST', '/v1/completions', 'HTTP/1.1', 'rid', Date.now(), performance.now());
    const x = new Exchange(res as never, ctx, '/v1/completions', ['x-then', then], null, '');
    x.body = STREAM_BODY;
    const req = openAiApi.parse(STREAM_BODY, '/v1/completions');
    const ended = new Promise<unknown>((resolve) => {
      proxyWithRetries(x, openAiApi, TOKENS, server, req, null, scheduler, null, {
        proxied: () => setImmediate(() => resolve(null)),
        proxyFailed: (err) => resolve(err),
      });
    });
    return { res, ctx, ended };
  }

  const lastEvent = (res: RecordingResponse): unknown => JSON.parse(res.bodies.join('').split('\n\n').filter((e) => e !== '').at(-1)!.slice('data: '.length));

  it('cut by the router as it stops (the pod\'s pool closed at the drain timeout): recorded router_stopping, its stream ends with that error event, the pod is not counted', async () => {
    const { scheduler, counter } = setUp();
    const a = new EndpointState('pod-a', '127.0.0.1', await streamingPod(), { connections: 4 });
    pods.push(a);
    const { res, ctx, ended } = proxyStream(scheduler, compiled([a]), 'hold');
    while (res.bodies.length === 0) await new Promise((r) => setTimeout(r, 5));
    // As EndpointRegistry.closeAll does when the drain timeout passed.
    a.pool.close('the router is stopping: ROUTER_DRAIN_TIMEOUT (1000 ms) passed');
    expect(await ended).toBeNull();
    expect(ctx.statusCode).toBe(200);
    expect(ctx.errorType).toBe('upstream_error');
    expect(ctx.errorMessage).toBe('the router is stopping: ROUTER_DRAIN_TIMEOUT (1000 ms) passed; the router cut its exchange with pod pod-a (after the response started)');
    expect(res.bodies.join('')).toMatch(/^data: \{"id"/);
    expect(lastEvent(res)).toEqual({ error: { message: 'the router is stopping: ROUTER_DRAIN_TIMEOUT (1000 ms) passed; the router cut its exchange with pod pod-a', type: 'upstream_error', param: null, code: 'router_stopping' } });
    expect(res.calls.at(-1)).toBe('close');
    expect(a.health.reportFailures).toBe(0);
    expect(await counter('inference_router_upstream_resets_total', 'pod-a')).toBe(0);
    expect(await counter('inference_router_upstream_timeouts_total', 'pod-a')).toBe(0);
  });

  it('cut by the pod (a reset): recorded as the pod\'s failure and counted, its stream ends with the upstream_failed error event', async () => {
    const { scheduler, counter } = setUp();
    const a = new EndpointState('pod-a', '127.0.0.1', await streamingPod(), { connections: 4 });
    pods.push(a);
    const { res, ctx, ended } = proxyStream(scheduler, compiled([a]), 'reset');
    expect(await ended).toBeNull();
    expect([ctx.statusCode, ctx.errorType]).toEqual([200, 'upstream_error']);
    expect(ctx.errorMessage).toMatch(/^upstream failed on pod pod-a: ECONNRESET .*\(after the response started\)$/);
    expect(lastEvent(res)).toMatchObject({ error: { type: 'upstream_error', param: null, code: 'upstream_failed', message: expect.stringMatching(/^upstream failed on pod pod-a: ECONNRESET /) } });
    expect(res.calls.at(-1)).toBe('close');
    expect(a.health.reportFailures).toBe(1);
    expect(await counter('inference_router_upstream_resets_total', 'pod-a')).toBe(1);
  });

  it('a pod\'s own error event in its 200 stream: passed through unchanged, recorded upstream_error naming the pod and its message, not counted against the pod', async () => {
    const { scheduler, counter } = setUp();
    const a = new EndpointState('pod-a', '127.0.0.1', await streamingPod(), { connections: 4 });
    pods.push(a);
    const { res, ctx, ended } = proxyStream(scheduler, compiled([a]), 'error-event');
    expect(await ended).toBeNull();
    expect([ctx.statusCode, ctx.errorType]).toEqual([200, 'upstream_error']);
    expect(ctx.errorMessage).toBe('upstream pod pod-a sent an error event in its stream: CUDA error: out of memory');
    expect(res.bodies.join('')).toBe(`${CHUNK}data: {"error": {"message": "CUDA error: out of memory", "type": "InternalServerError", "code": 500}}\n\ndata: [DONE]\n\n`);
    expect(res.calls).not.toContain('close');
    expect(a.health.reportFailures).toBe(0);
    expect(await counter('inference_router_upstream_resets_total', 'pod-a')).toBe(0);
  });
});

describe('proxyWithRetries: the router\'s own want of file descriptors is not the pod\'s failure', () => {
  it('connects that fail with EMFILE are not counted nor eject the pod; the answer is 503 router_out_of_descriptors', async () => {
    const { scheduler, counter, lines } = setUp();
    const a = new EndpointState('pod-a', '127.0.0.1', await podServer(false), { connections: 1 });
    pods.push(a);
    // The socket's connect fails as it does when the process has no descriptor left.
    const connect = vi.spyOn(UpstreamSocket.prototype, 'connect').mockImplementation(function (this: UpstreamSocket) {
      process.nextTick(() => this.destroy(Object.assign(new Error('connect EMFILE 127.0.0.1 - Local (undefined:undefined)'), { code: 'EMFILE', syscall: 'connect' })));
      return this;
    });
    try {
      const errors: unknown[] = [];
      for (let i = 0; i < 4; i++) errors.push((await proxy(scheduler, compiled([a]))).error);
      expect(lines).toEqual([]);
      expect(OutlierDetector.ejected(a, Date.now())).toBe(false);
      expect(a.health.consecutiveFailures).toBe(0);
      expect(await counter('inference_router_upstream_connect_failures_total', 'pod-a')).toBe(0);
      for (const e of errors) {
        const { type, code, status, message } = e as RouterError;
        expect([type, code, status]).toEqual(['upstream_error', 'router_out_of_descriptors', 503]);
        expect(message).toBe('the router could not open a connection to pod pod-a: the router\'s worker has no file descriptor free (its open-file limit) '
          + '(connect EMFILE 127.0.0.1 - Local (undefined:undefined)); raise the router\'s limit (ulimit -n, LimitNOFILE); nothing was sent to the pod');
      }
    } finally {
      connect.mockRestore();
    }
    // With descriptors again, the pod answers.
    expect((await proxy(scheduler, compiled([a]))).status).toBe('200 OK');
  });
});
