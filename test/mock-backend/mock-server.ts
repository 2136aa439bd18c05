/**
 * The mock OpenAI-compatible backend server, on uWebSockets.js so that it is never the bottleneck
 * of a benchmark. Routes:
 *   POST /v1/*           OpenAI-shaped answer (chat shape under /v1/chat/completions, Responses API
 *                        shape under /v1/responses, embeddings under /v1/embeddings, completions
 *                        shape otherwise), JSON or SSE (`stream: true`; embeddings never stream)
 *   GET  /stats          { pod, requests, lastBody, lastHeaders, lastPath, metricsRequests }
 *   POST /stats/reset    resets the stats
 *   POST /fail-rate?rate=F  sets the fraction (0..1) of /v1 requests answered 500 from now on
 *   GET  /healthz        200 ok
 *   GET  /metrics        with --metrics-engine: vLLM or SGLang load series (mock-metrics.ts)
 * Per-request overrides (headers): x-mock-latency-ms, x-mock-status, x-mock-output-tokens,
 * x-mock-retry-after (sent as retry-after with an error status), x-mock-hang (never answer),
 * x-mock-close (drop the connection without answering). A stream that fails partway, after N
 * token events: x-mock-error-after N (a chat or completions stream: the server's own error event,
 * in the x-mock-error-shape openai, vllm, object, chunk or llamacpp, then [DONE], and its end), x-mock-cut-after N
 * (the connection closed without the stream's end; with x-mock-cut-mid-event, after the first half
 * of the next event), x-mock-stall-after N (nothing more is sent, the connection stays open).
 * --pd-role prefill or decode: a vLLM pod of prefill/decode disaggregation (mock-pd.ts);
 * sglang-prefill or sglang-decode: an SGLang one (mock-sglang.ts).
 */

import { STATUS_CODES } from 'node:http';
import { loadUws } from 'inference-router/http/uws';
import type { HttpRequest, HttpResponse, TemplatedApp, us_listen_socket, us_socket } from 'uWebSockets.js';
import { DEFAULT_MOCK_OPTIONS, parseBoundedNumber, type MockOptions } from './mock-options.js';
import { mockMetricsText } from './mock-metrics.js';
import { kvFrom, pdRefusal, prefillKvParams } from './mock-pd.js';
import { BootstrapRooms, bootstrapRoom, joinRoom, sglangRefusal } from './mock-sglang.js';
import {
  embeddingsAnswer, errorBody, jsonAnswer, mockPromptTokens, responsesEvents, sseEvents, STREAM_ERROR_SHAPES, streamErrorEvents,
  type AnswerSpec, type MockApi, type StreamErrorShape,
} from './mock-answers.js';

// The native build the router itself loads (never the package's silent JavaScript fallback).
const uWS = loadUws();
/** uWS's LIBUS_LISTEN_EXCLUSIVE_PORT: listen without SO_REUSEPORT (the typings give the option only without a host). */
const EXCLUSIVE_PORT = 1;

export interface MockStats {
  /** /v1 requests received since start or the last reset. */
  requests: number;
  /** Parsed body of the last /v1 request (null when it was not valid JSON). */
  lastBody: unknown;
  /** Headers of the last /v1 request (lower-case names). */
  lastHeaders: Record<string, string> | null;
  /** Path and query string of the last /v1 request, as received. */
  lastPath: string | null;
  /** GET /metrics requests received since start or the last reset (a router scraping the pod's load). */
  metricsRequests: number;
}

export interface MockBackend {
  readonly host: string;
  readonly port: number;
  readonly url: string;
  readonly options: MockOptions;
  readonly stats: MockStats;
  resetStats(): void;
  /** Stops listening and drops every exchange still open (hung, delayed or streaming). */
  close(): void;
}

export interface MockHooks {
  /** Source of randomness for --fail-rate (default Math.random). */
  random?: () => number;
  /** Clock in ms for stream pacing (default performance.now). */
  now?: () => number;
}

const MAX_BODY_BYTES = 64 * 1024 * 1024;

function statusLine(status: number): string {
  return `${status} ${STATUS_CODES[status] ?? 'Status'}`;
}

function isOn(value: string | undefined): boolean {
  return value !== undefined && value !== '' && value !== '0' && value !== 'false';
}

/** How a stream asked to fail partway fails (the x-mock-error-after, -cut-after, -stall-after headers). */
interface StreamFailure {
  readonly kind: 'error' | 'cut' | 'stall';
  /** Token events sent before it. */
  readonly after: number;
  readonly shape: StreamErrorShape;
  /** `cut`: the first half of the next event goes out before the close. */
  readonly midEvent: boolean;
}

/** The failure the request's headers ask of its stream, or null; throws naming a bad header. */
function streamFailure(headers: Record<string, string>): StreamFailure | null {
  const asked = (['error', 'cut', 'stall'] as const).filter((kind) => (headers[`x-mock-${kind}-after`] ?? '') !== '');
  if (asked.length === 0) return null;
  if (asked.length > 1) throw new Error(`x-mock-error-after, x-mock-cut-after and x-mock-stall-after exclude each other, got ${asked.join(', ')}`);
  const kind = asked[0];
  const after = parseBoundedNumber(`x-mock-${kind}-after`, headers[`x-mock-${kind}-after`], 10_000_000, true);
  const shape = headers['x-mock-error-shape'] ?? 'openai';
  if (!(STREAM_ERROR_SHAPES as readonly string[]).includes(shape)) {
    throw new Error(`x-mock-error-shape must be ${STREAM_ERROR_SHAPES.join(', ')}, got ${JSON.stringify(shape)}`);
  }
  return { kind, after, shape: shape as StreamErrorShape, midEvent: isOn(headers['x-mock-cut-mid-event']) };
}

/** One /v1 request from arrival to its last byte. */
class Exchange {
  /** The response was ended, closed or aborted: nothing may touch `res` any more. */
  finished = false;
  timer: NodeJS.Timeout | null = null;
  parts: Buffer[] | null = null;
  size = 0;
  /** Stream state: events to send, index of the next one, index of the last token event, pace. */
  events: string[] | null = null;
  next = 0;
  lastToken = 0;
  startedAt = 0;
  interval = 0;
  /** A decode pod's answer: whose kv_transfer_params it got (x-mock-kv-from), '' when none. */
  kvFrom = '';
  /** An SGLang pod's bootstrap room (its digits), or ''. */
  room = '';

  constructor(
    readonly res: HttpResponse,
    readonly api: MockApi,
    readonly headers: Record<string, string>,
  ) {}

  cancel(): void {
    if (this.timer !== null) {
      clearTimeout(this.timer);
      this.timer = null;
    }
  }
}

class MockServer implements MockBackend {
  readonly stats: MockStats = { requests: 0, lastBody: null, lastHeaders: null, lastPath: null, metricsRequests: 0 };
  host: string;
  port = 0;
  url = '';
  private readonly app: TemplatedApp;
  private listenSocket: us_listen_socket | null = null;
  private readonly open = new Set<Exchange>();
  private readonly random: () => number;
  private readonly now: () => number;
  private sequence = 0;
  /** An sglang-prefill pod's bootstrap rooms. */
  private readonly rooms = new BootstrapRooms();
  /** --fail-rate, changed by POST /fail-rate. */
  private failRate: number;

  constructor(readonly options: MockOptions, hooks: MockHooks) {
    this.host = options.host;
    this.failRate = options.failRate;
    this.random = hooks.random ?? Math.random;
    this.now = hooks.now ?? (() => performance.now());
    this.app = uWS.App()
      .post('/v1/*', (res, req) => this.onInference(res, req))
      .get('/stats', (res) => this.sendJson(res, 200, JSON.stringify({ pod: this.options.name, ...this.stats })))
      .post('/stats/reset', (res) => {
        this.resetStats();
        this.sendJson(res, 200, '{"reset":true}');
      })
      .post('/fail-rate', (res, req) => {
        try {
          this.failRate = parseBoundedNumber('rate', req.getQuery('rate') ?? '', 1, false);
        } catch (error) {
          this.sendJson(res, 400, errorBody(400, (error as Error).message));
          return;
        }
        this.sendJson(res, 200, JSON.stringify({ failRate: this.failRate }));
      })
      .get('/metrics', (res) => {
        this.stats.metricsRequests++;
        if (this.options.metricsEngine === null) {
          this.sendJson(res, 404, errorBody(404, 'mock backend serves /metrics only with --metrics-engine'));
          return;
        }
        res.writeStatus('200 OK').writeHeader('content-type', 'text/plain; version=0.0.4')
          .end(mockMetricsText(this.options, this.sequence, this.open.size));
      })
      .get('/_mock/bootstrap/:room', (res, req) => this.onBootstrap(res, req.getParameter(0) ?? ''))
      .get('/healthz', (res) => {
        res.writeStatus('200 OK').writeHeader('content-type', 'text/plain').end('ok');
      })
      .any('/*', (res, req) => {
        this.sendJson(res, 404, errorBody(404, `mock backend has no route ${req.getMethod().toUpperCase()} ${req.getUrl()}`));
      });
  }

  listen(): Promise<void> {
    return new Promise((resolve, reject) => {
      // One process, so the port is its own (LIBUS_LISTEN_EXCLUSIVE_PORT): a second mock, or a demo
      // started twice, fails here instead of joining the first's port with SO_REUSEPORT.
      const listen = this.app.listen as unknown as (host: string, port: number, options: number, cb: (socket: us_listen_socket | false) => void) => void;
      listen.call(this.app, this.options.host, this.options.port, EXCLUSIVE_PORT, (socket) => {
        if (socket === false) {
          reject(new Error(`mock backend could not listen on ${this.options.host}:${this.options.port} (in use by another process?)`));
          return;
        }
        this.listenSocket = socket;
        this.port = uWS.us_socket_local_port(socket as unknown as us_socket);
        const host = this.host.includes(':') ? `[${this.host}]` : this.host;
        this.url = `http://${host}:${this.port}`;
        resolve();
      });
    });
  }

  resetStats(): void {
    this.stats.requests = 0;
    this.stats.lastBody = null;
    this.stats.lastHeaders = null;
    this.stats.lastPath = null;
    this.stats.metricsRequests = 0;
  }

  close(): void {
    if (this.listenSocket !== null) {
      uWS.us_listen_socket_close(this.listenSocket);
      this.listenSocket = null;
    }
    for (const exchange of this.open) {
      exchange.cancel();
      if (!exchange.finished) {
        exchange.finished = true;
        exchange.res.close();
      }
    }
    this.open.clear();
  }

  private onInference(res: HttpResponse, req: HttpRequest): void {
    this.stats.requests++;
    const headers: Record<string, string> = {};
    req.forEach((key, value) => {
      headers[key] = value;
    });
    this.stats.lastHeaders = headers;
    const query = req.getQuery();
    this.stats.lastPath = query ? `${req.getUrl()}?${query}` : req.getUrl();
    const url = req.getUrl();
    const api: MockApi = url.endsWith('/chat/completions') ? 'chat' : url.endsWith('/responses') ? 'responses' : url.endsWith('/embeddings') ? 'embeddings' : 'completions';
    const exchange = new Exchange(res, api, headers);
    this.open.add(exchange);
    res.onAborted(() => {
      exchange.finished = true;
      exchange.cancel();
      this.open.delete(exchange);
    });
    res.onData((chunk, isLast) => {
      if (exchange.finished) return;
      exchange.size += chunk.byteLength;
      if (exchange.size > MAX_BODY_BYTES) {
        this.finishJson(exchange, 413, errorBody(413, `mock backend accepts bodies up to ${MAX_BODY_BYTES} bytes`));
        return;
      }
      if (isLast) {
        let body: Buffer;
        if (exchange.parts === null) {
          body = Buffer.from(chunk); // a view, valid during this callback, which parses it
        } else {
          exchange.parts.push(Buffer.from(new Uint8Array(chunk)));
          body = Buffer.concat(exchange.parts, exchange.size);
          exchange.parts = null;
        }
        this.onBody(exchange, body);
      } else {
        (exchange.parts ??= []).push(Buffer.from(new Uint8Array(chunk)));
      }
    });
  }

  /** A decode pod joins a bootstrap room of this sglang-prefill pod: 200 once its prefill request came, else 404. */
  private onBootstrap(res: HttpResponse, room: string): void {
    if (this.options.pdRole !== 'sglang-prefill') {
      this.sendJson(res, 404, errorBody(404, 'mock backend has bootstrap rooms only with --pd-role sglang-prefill'));
      return;
    }
    let aborted = false;
    res.onAborted(() => { aborted = true; });
    void this.rooms.decodeJoined(room).then((ok) => {
      if (aborted) return;
      res.cork(() => this.sendJson(res, ok ? 200 : 404, ok ? JSON.stringify({ pod: this.options.name }) : errorBody(404, `no prefill request of bootstrap room ${room}`)));
    });
  }

  private onBody(exchange: Exchange, raw: Buffer): void {
    let body: unknown = null;
    try {
      // A UTF-8 byte order mark before the JSON is skipped, as vLLM's server (Python's json on bytes) does.
      body = JSON.parse(raw.toString('utf8', raw[0] === 0xef && raw[1] === 0xbb && raw[2] === 0xbf ? 3 : 0));
    } catch {
      body = null;
    }
    this.stats.lastBody = body;
    const headers = exchange.headers;
    if (isOn(headers['x-mock-hang'])) return; // accepted, never answered (until close or abort)
    if (isOn(headers['x-mock-close'])) {
      exchange.finished = true;
      this.open.delete(exchange);
      exchange.res.close();
      return;
    }
    if (typeof body !== 'object' || body === null || Array.isArray(body)) {
      this.finishJson(exchange, 400, errorBody(400, 'mock backend expects a JSON object body'));
      return;
    }
    let latencyMs: number;
    let outputTokens: number;
    let status = 0;
    let failure: StreamFailure | null;
    try {
      latencyMs = override(headers, 'x-mock-latency-ms', this.options.latencyMs, 3_600_000, false);
      outputTokens = override(headers, 'x-mock-output-tokens', this.options.outputTokens, 10_000_000, true);
      status = override(headers, 'x-mock-status', 0, 599, true);
      failure = streamFailure(headers);
      if (failure?.kind === 'error' && (exchange.api === 'responses' || exchange.api === 'embeddings')) {
        throw new Error('x-mock-error-after applies to chat and completions streams');
      }
    } catch (error) {
      this.finishJson(exchange, 400, errorBody(400, (error as Error).message));
      return;
    }
    const role = this.options.pdRole;
    const refusal = role === null ? null
      : role === 'prefill' || role === 'decode' ? pdRefusal(role, body as Record<string, unknown>)
        : sglangRefusal(role, body as Record<string, unknown>, raw.toString('utf8'));
    if (refusal === null && role !== null && role.startsWith('sglang')) exchange.room = bootstrapRoom(raw.toString('utf8'))!;
    if (refusal !== null) {
      this.finishJson(exchange, 400, errorBody(400, refusal));
      return;
    }
    // As a model server does: the answer stops at the length the request allows.
    const allowed = requestedMaxTokens(body as Record<string, unknown>, exchange.api);
    if (allowed !== null && allowed < outputTokens) outputTokens = allowed;
    if (status !== 0 && status < 200) {
      this.finishJson(exchange, 400, errorBody(400, `x-mock-status must be from 200 to 599, got ${status}`));
      return;
    }
    if (status === 0 && this.failRate > 0 && this.random() < this.failRate) status = 500;
    const retryAfter = headers['x-mock-retry-after'] ?? '';
    const act = status !== 0
      ? () => this.finishJson(exchange, status, errorBody(status, `mock backend ${this.options.name} answered ${status} as asked`), retryAfter)
      : () => this.answer(exchange, body as Record<string, unknown>, outputTokens, failure);
    if (latencyMs > 0) {
      exchange.timer = setTimeout(() => {
        exchange.timer = null;
        if (!exchange.finished) exchange.res.cork(act);
      }, latencyMs);
    } else {
      exchange.res.cork(act);
    }
  }

  private answer(exchange: Exchange, body: Record<string, unknown>, outputTokens: number, failure: StreamFailure | null): void {
    const spec: AnswerSpec = {
      api: exchange.api,
      id: `${exchange.api === 'chat' ? 'chatcmpl' : exchange.api === 'responses' ? 'resp' : 'cmpl'}-${this.options.name}-${++this.sequence}`,
      created: Math.floor(Date.now() / 1000),
      model: typeof body.model === 'string' ? body.model : 'mock-model',
      pod: this.options.name,
      outputTokens,
      promptTokens: mockPromptTokens(body, exchange.api),
      usage: this.options.usage,
      shape: this.options.answerShape,
    };
    if (exchange.api === 'embeddings') {
      this.finishJson(exchange, 200, embeddingsAnswer(spec, body));
      return;
    }
    if (this.options.pdRole === 'sglang-prefill') {
      // Answers once a decode pod joined its room: the KV cache went there.
      void this.rooms.prefillArrived(exchange.room).then((joined) => {
        if (exchange.finished) return;
        exchange.res.cork(() => this.finishJson(exchange, joined ? 200 : 500, joined ? jsonAnswer(spec)
          : errorBody(500, `mock sglang-prefill pod: no decode pod joined bootstrap room ${exchange.room}`)));
      });
      return;
    }
    if (this.options.pdRole === 'sglang-decode' && exchange.kvFrom === '') {
      const host = body.bootstrap_host as string;
      void joinRoom(host, this.options.bootstrapPort, exchange.room).then((pod) => {
        if (exchange.finished) return;
        if (pod === null) {
          exchange.res.cork(() => this.finishJson(exchange, 500, errorBody(500, `mock sglang-decode pod: KV transfer failed: no prefill of bootstrap room ${exchange.room} at ${host}`)));
          return;
        }
        exchange.kvFrom = pod;
        exchange.res.cork(() => this.answer(exchange, body, outputTokens, failure));
      });
      return;
    }
    if (this.options.pdRole === 'prefill') {
      const answer = JSON.parse(jsonAnswer(spec)) as Record<string, unknown>;
      const params = prefillKvParams(body, this.options.name, this.host, this.port, this.sequence);
      if (params !== null) answer.kv_transfer_params = params;
      this.finishJson(exchange, 200, JSON.stringify(answer));
      return;
    }
    if (this.options.pdRole === 'decode') exchange.kvFrom = kvFrom(body);
    if (body.stream !== true) {
      this.finishJson(exchange, 200, jsonAnswer(spec), '', exchange.kvFrom);
      return;
    }
    if (exchange.api === 'responses') {
      // Paced per token: the output_text.done and the events after it go out with the last delta.
      const events = responsesEvents(spec);
      // The token events of a Responses stream come after its four opening events.
      if (failure !== null) this.failStream(exchange, events, 4 + Math.min(failure.after, outputTokens), failure);
      else this.startStream(exchange, events, events.length - 4);
      return;
    }
    const streamOptions = body.stream_options;
    const includeUsage = typeof streamOptions === 'object' && streamOptions !== null
      && (streamOptions as { include_usage?: unknown }).include_usage === true;
    const events = sseEvents(spec, includeUsage);
    if (failure === null) {
      this.startStream(exchange, events, outputTokens);
      return;
    }
    const sent = Math.min(failure.after, outputTokens);
    if (failure.kind === 'error') this.startStream(exchange, [...events.slice(0, sent), ...streamErrorEvents(failure.shape, this.options.name, sent)], sent);
    else this.failStream(exchange, events, sent, failure);
  }

  /**
   * A stream cut or stalled after its first `sent` events, all written at once: then (`cut`) the
   * connection closed without the stream's end, a turn later so that the events go out before it
   * (with `midEvent`, after the first half of the next event), or (`stall`) nothing more until the
   * client leaves. Call corked.
   */
  private failStream(exchange: Exchange, events: string[], sent: number, failure: StreamFailure): void {
    const res = exchange.res;
    res.writeStatus('200 OK')
      .writeHeader('content-type', 'text/event-stream')
      .writeHeader('cache-control', 'no-cache')
      .writeHeader('x-mock-pod', this.options.name);
    const next = events[sent] ?? '';
    res.write(events.slice(0, sent).join('') + (failure.kind === 'cut' && failure.midEvent ? next.slice(0, next.length >> 1) : ''));
    if (failure.kind === 'stall') return;
    exchange.timer = setTimeout(() => {
      exchange.timer = null;
      if (exchange.finished) return;
      exchange.finished = true;
      this.open.delete(exchange);
      exchange.res.close();
    }, 10);
  }

  /** Sends the head and the first token chunk; paces the rest. Call corked. */
  private startStream(exchange: Exchange, events: string[], tokenEvents: number): void {
    const res = exchange.res;
    res.writeStatus('200 OK')
      .writeHeader('content-type', 'text/event-stream')
      .writeHeader('cache-control', 'no-cache')
      .writeHeader('x-mock-pod', this.options.name);
    if (exchange.kvFrom !== '') res.writeHeader('x-mock-kv-from', exchange.kvFrom);
    const tps = this.options.tokensPerSecond;
    if (tps === 0 || tokenEvents <= 1) {
      res.write(events.join(''));
      this.end(exchange);
      return;
    }
    exchange.events = events;
    exchange.lastToken = tokenEvents - 1;
    exchange.interval = 1000 / tps;
    exchange.startedAt = this.now();
    res.write(events[0]);
    exchange.next = 1;
    this.schedule(exchange);
  }

  private schedule(exchange: Exchange): void {
    const due = exchange.startedAt + exchange.next * exchange.interval;
    exchange.timer = setTimeout(() => this.tick(exchange), Math.max(0, due - this.now()));
  }

  private tick(exchange: Exchange): void {
    exchange.timer = null;
    if (exchange.finished || exchange.events === null) return;
    const events = exchange.events;
    exchange.res.cork(() => {
      const index = exchange.next++;
      // The last token chunk goes out with the usage chunk and [DONE].
      if (index < exchange.lastToken) {
        exchange.res.write(events[index]);
        this.schedule(exchange);
        return;
      }
      exchange.res.write(events.slice(index).join(''));
      this.end(exchange);
    });
  }

  private end(exchange: Exchange): void {
    exchange.events = null;
    exchange.finished = true;
    this.open.delete(exchange);
    exchange.res.end();
  }

  /** `retryAfter`: a retry-after header's value ('' = none); `kvFrom`: the x-mock-kv-from header's ('' = none). */
  private finishJson(exchange: Exchange, status: number, body: string, retryAfter = '', kvFrom = ''): void {
    exchange.cancel();
    this.open.delete(exchange);
    exchange.finished = true;
    const res = exchange.res.writeStatus(statusLine(status))
      .writeHeader('content-type', 'application/json')
      .writeHeader('x-mock-pod', this.options.name);
    if (retryAfter !== '') res.writeHeader('retry-after', retryAfter);
    if (kvFrom !== '') res.writeHeader('x-mock-kv-from', kvFrom);
    res.end(body);
  }

  private sendJson(res: HttpResponse, status: number, body: string): void {
    res.writeStatus(statusLine(status)).writeHeader('content-type', 'application/json').end(body);
  }
}

/** A header override of a numeric option; throws naming the header when the value is bad. */
function override(headers: Record<string, string>, name: string, fallback: number, max: number, integer: boolean): number {
  const value = headers[name];
  if (value === undefined || value === '') return fallback;
  return parseBoundedNumber(name, value, max, integer);
}

/** Starts a mock backend in this process. Options not given take the CLI defaults. */
export async function startMockBackend(options: Partial<MockOptions> = {}, hooks: MockHooks = {}): Promise<MockBackend> {
  const server = new MockServer(Object.freeze({ ...DEFAULT_MOCK_OPTIONS, ...options }), hooks);
  await server.listen();
  return server;
}

/**
 * The most output tokens the request allows (`max_tokens`; chat's `max_completion_tokens` first;
 * the Responses API's `max_output_tokens`), or null when it names none (or not a positive integer).
 */
function requestedMaxTokens(body: Record<string, unknown>, api: string): number | null {
  const v = api === 'responses' ? body.max_output_tokens
    : api === 'chat' ? body.max_completion_tokens ?? body.max_tokens
      : body.max_tokens;
  return typeof v === 'number' && Number.isInteger(v) && v >= 1 ? v : null;
}
