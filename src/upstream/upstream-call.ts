import type { Dispatcher } from 'undici';
import type { IncomingHttpHeaders } from 'node:http';
import { statusLine } from '../errors.js';
import type { Exchange } from '../http/exchange.js';
import { writeRateHeaders } from '../http/respond.js';
import { forwardResponseHeader } from '../http/upstream-headers.js';
import { SseUsageScanner } from '../usage/sse-usage.js';
import { usageFromJson } from '../usage/json-usage.js';
import type { EndpointState } from './endpoint-registry.js';
import { ClientGone, isConnectFailure, UpstreamTimeout } from './upstream-errors.js';

const EMPTY = Buffer.alloc(0);

/** Bodies up to this size with a content-length are answered in one write (keeps content-length). */
const BUFFER_LIMIT = 8 * 1024 * 1024;

export const enum CallOutcome {
  /** The answer (any status) went through to the client, or the client left. */
  Done,
  /** Nothing reached the pod (connection failure): the pipeline may try another one. */
  RetryableConnectFailure,
  /** Failed before anything was sent to the client: the pipeline answers the error. */
  FailedBeforeResponse,
  /** Failed after the response started: the client connection was closed. */
  FailedMidResponse,
}

export interface UsageSeen {
  promptTokens: number | null;
  completionTokens: number | null;
  /** Generated text, for counting when the backend reports no usage. */
  text: string;
}

/**
 * One exchange with one pod, as an undici dispatch handler: streams the answer to the uWS
 * response with backpressure, learns usage, and resolves `done` once with the outcome.
 */
export class UpstreamCall implements Dispatcher.DispatchHandler {
  private readonly x: Exchange;
  private readonly endpoint: EndpointState;
  private readonly stripUsage: boolean;
  private controller: Dispatcher.DispatchController | null = null;
  /** An abort asked for before undici handed us the controller. */
  private pendingAbort: Error | null = null;
  /** Upstream response headers, kept until they are written to the client. */
  private pendingHeaders: IncomingHttpHeaders | null = null;
  /** The bytes the corked writers below send (set just before cork, cleared after). */
  private pending: Buffer = EMPTY;
  private writeOk = true;
  private timer: NodeJS.Timeout | null = null;
  private responseStarted = false;
  private buffered: Buffer[] | null = null;
  private scanner: SseUsageScanner | null = null;
  private settled = false;
  private resolveDone!: (o: CallOutcome) => void;
  readonly done: Promise<CallOutcome>;
  error: unknown = null;
  usage: UsageSeen | null = null;
  upstreamStatus = 0;

  constructor(x: Exchange, endpoint: EndpointState, stream: boolean, stripUsage: boolean, timeoutMs: number) {
    this.x = x;
    this.endpoint = endpoint;
    this.stripUsage = stripUsage;
    this.done = new Promise((resolve) => { this.resolveDone = resolve; });
    // A non-streaming exchange is bounded as a whole; a stream by undici's headers/body timeouts.
    if (!stream) this.timer = setTimeout(onTimeout, timeoutMs, this);
    endpoint.inflight++;
  }

  abortForClient(): void {
    this.abort(new ClientGone('client went away'));
  }

  abort(reason: Error): void {
    if (this.controller !== null && !this.controller.aborted) this.controller.abort(reason);
    else if (this.controller === null) this.pendingAbort = reason;
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.controller = controller;
    if (this.pendingAbort !== null) controller.abort(this.pendingAbort);
  }

  onResponseStart(controller: Dispatcher.DispatchController, statusCode: number, headers: IncomingHttpHeaders): void {
    this.responseStarted = true;
    this.upstreamStatus = statusCode;
    const contentType = String(headers['content-type'] ?? '');
    const isSse = contentType.startsWith('text/event-stream');
    const length = headers['content-length'];
    if (isSse) {
      this.scanner = new SseUsageScanner({ stripUsageChunk: this.stripUsage && statusCode < 300 });
    } else if (length !== undefined && Number(length) <= BUFFER_LIMIT) {
      this.buffered = [];
      this.pendingHeaders = headers;
      return;
    }
    this.writeHead(headers);
    if (!this.x.writable) controller.abort(new ClientGone('client went away'));
  }

  /** Status line and headers to the client (streamed answers): one corked write. */
  private writeHead(headers: IncomingHttpHeaders): void {
    const x = this.x;
    x.ctx.statusCode = this.upstreamStatus;
    if (!x.writable) return;
    x.headersSent = true;
    this.pendingHeaders = headers;
    x.res.cork(this.writeHeadCorked);
  }

  private readonly writeHeadCorked = (): void => {
    const res = this.x.res;
    const headers = this.pendingHeaders!;
    res.writeStatus(statusLine(this.upstreamStatus));
    for (const name in headers) {
      if (!forwardResponseHeader(name)) continue;
      const v = headers[name];
      if (v === undefined) continue;
      if (Array.isArray(v)) for (const one of v) res.writeHeader(name, one);
      else res.writeHeader(name, v);
    }
    res.writeHeader('x-request-id', this.x.ctx.requestId);
    if (this.x.decision !== null) writeRateHeaders(res, this.x.decision);
  };

  /** A buffered answer: status, headers and body in one corked write (one send). */
  private readonly endBufferedCorked = (): void => {
    this.writeHeadCorked();
    this.x.res.end(this.pending, this.x.closeConnection);
  };

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.buffered !== null) {
      this.buffered.push(chunk);
      return;
    }
    const out = this.scanner !== null ? this.scanner.push(chunk) : chunk;
    if (out.length === 0 || !this.x.writable) return;
    const x = this.x;
    if (this.scanner !== null && x.ctx.tFirstByte === 0) x.ctx.tFirstByte = performance.now();
    this.pending = out;
    x.res.cork(this.writePending);
    this.pending = EMPTY;
    if (!this.writeOk) {
      controller.pause();
      x.res.onWritable(this.resumeUpstream);
    }
  }

  // Bound once per exchange, not per chunk.
  private readonly writePending = (): void => {
    this.writeOk = this.x.res.write(this.pending);
  };
  private readonly resumeUpstream = (): boolean => {
    this.writeOk = true;
    this.controller?.resume();
    return true;
  };

  onResponseEnd(): void {
    const x = this.x;
    x.ctx.tUpstreamEnd = performance.now();
    this.clearTimer();
    if (this.buffered !== null) {
      const body = this.buffered.length === 1 ? this.buffered[0] : Buffer.concat(this.buffered);
      this.buffered = null;
      if (this.upstreamStatus < 300) this.usage = usageFromJson(body);
      x.ctx.statusCode = this.upstreamStatus;
      if (x.writable) {
        x.headersSent = true;
        x.ctx.finished = true;
        this.pending = body;
        x.res.cork(this.endBufferedCorked);
        this.pending = EMPTY;
      }
    } else {
      const tail = this.scanner !== null ? this.scanner.end() : null;
      this.takeStreamUsage();
      if (x.writable) {
        x.ctx.finished = true;
        x.res.cork(() => {
          if (tail !== null && tail.length > 0) x.res.write(tail);
          x.res.end(undefined, x.closeConnection);
        });
      }
    }
    this.settle(CallOutcome.Done);
  }

  onResponseError(_controller: Dispatcher.DispatchController, err: Error): void {
    this.clearTimer();
    this.error = err;
    this.takeStreamUsage();
    const x = this.x;
    if (err instanceof ClientGone || x.ctx.aborted) {
      this.settle(CallOutcome.Done);
      return;
    }
    if (!x.headersSent) {
      this.buffered = null;
      this.settle(!this.responseStarted && isConnectFailure(err) ? CallOutcome.RetryableConnectFailure : CallOutcome.FailedBeforeResponse);
      return;
    }
    // Mid-stream: the status line is gone; cut the connection so the client sees a broken answer.
    if (x.writable) {
      x.ctx.finished = true;
      x.res.cork(() => { x.res.close(); });
    }
    this.settle(CallOutcome.FailedMidResponse);
  }

  /** What a stream reported (or generated) so far. */
  private takeStreamUsage(): void {
    const sc = this.scanner;
    if (sc !== null) this.usage = { promptTokens: sc.promptTokens, completionTokens: sc.completionTokens, text: sc.text };
  }

  private settle(outcome: CallOutcome): void {
    if (this.settled) return;
    this.settled = true;
    this.endpoint.inflight--;
    this.resolveDone(outcome);
  }

  private clearTimer(): void {
    if (this.timer !== null) {
      clearTimeout(this.timer);
      this.timer = null;
    }
  }

  /** Called by the exchange timer. */
  timedOut(): void {
    this.timer = null;
    this.abort(new UpstreamTimeout('upstream timeout'));
  }
}

function onTimeout(call: UpstreamCall): void {
  call.timedOut();
}
