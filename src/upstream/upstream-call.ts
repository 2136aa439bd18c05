import type { Dispatcher } from 'undici';
import type { IncomingHttpHeaders } from 'node:http';
import type { AnswerUsage, InferenceApi, StreamUsageReader } from '../api/inference-api.js';
import type { Exchange } from '../http/exchange.js';
import type { TokenCounter } from '../tokens/token-counter.js';
import { GeneratedTextCount } from '../usage/generated-text-count.js';
import type { EndpointState } from './endpoint-registry.js';
import { ClientGone, isConnectFailure, UpstreamTimeout } from './upstream-errors.js';

/**
 * Bodies up to this size with a content-length are answered in one write (keeps content-length);
 * also the most of a streamed (chunked or close-delimited) JSON answer kept to read its usage.
 */
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

/**
 * One exchange with one pod, as an undici dispatch handler: hands status, headers and body chunks
 * to the client exchange (with backpressure), has the request's API read the usage, and resolves
 * `done` once with the outcome.
 */
export class UpstreamCall implements Dispatcher.DispatchHandler {
  private readonly x: Exchange;
  private readonly api: InferenceApi;
  private readonly endpoint: EndpointState;
  private readonly stripUsage: boolean;
  private controller: Dispatcher.DispatchController | null = null;
  /** An abort asked for before undici handed us the controller. */
  private pendingAbort: Error | null = null;
  /** Upstream response headers of a buffered answer, kept until it ends. */
  private pendingHeaders: IncomingHttpHeaders | null = null;
  private timer: NodeJS.Timeout | null = null;
  private responseStarted = false;
  private buffered: Buffer[] | null = null;
  /** A successful answer passed through without a length: its chunks, kept to read usage at the end. */
  private passed: Buffer[] | null = null;
  private passedBytes = 0;
  private readonly tokens: TokenCounter;
  private scanner: StreamUsageReader | null = null;
  private settled = false;
  private resolveDone!: (o: CallOutcome) => void;
  readonly done: Promise<CallOutcome>;
  error: unknown = null;
  usage: AnswerUsage | null = null;
  upstreamStatus = 0;

  constructor(x: Exchange, api: InferenceApi, tokens: TokenCounter, endpoint: EndpointState, stream: boolean, stripUsage: boolean, timeoutMs: number) {
    this.x = x;
    this.tokens = tokens;
    this.api = api;
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
      this.scanner = this.api.streamUsage(this.stripUsage && statusCode < 300, new GeneratedTextCount(this.tokens));
    } else if (length !== undefined && Number(length) <= BUFFER_LIMIT) {
      this.buffered = [];
      this.pendingHeaders = headers;
      return;
    } else if (statusCode < 300) {
      this.passed = [];
    }
    if (!this.x.startAnswer(statusCode, headers)) controller.abort(new ClientGone('client went away'));
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.buffered !== null) {
      this.buffered.push(chunk);
      return;
    }
    if (this.passed !== null) this.keepPassed(chunk);
    const out = this.scanner !== null ? this.scanner.push(chunk) : chunk;
    const x = this.x;
    if (out.length === 0 || !x.writable) return;
    if (this.scanner !== null) x.firstByte();
    if (!x.writeChunk(out)) {
      controller.pause();
      x.onWritable(this.resumeUpstream);
    }
  }

  /** Keeps a passing chunk of a JSON answer (by reference) up to BUFFER_LIMIT; beyond, gives up. */
  private keepPassed(chunk: Buffer): void {
    this.passedBytes += chunk.length;
    if (this.passedBytes > BUFFER_LIMIT) this.passed = null;
    else this.passed!.push(chunk);
  }

  // Bound once per exchange, not per chunk.
  private readonly resumeUpstream = (): boolean => {
    this.controller?.resume();
    return true;
  };

  onResponseEnd(): void {
    const x = this.x;
    this.clearTimer();
    if (this.buffered !== null) {
      const body = this.buffered.length === 1 ? this.buffered[0] : Buffer.concat(this.buffered);
      this.buffered = null;
      if (this.upstreamStatus < 300) this.usage = this.api.jsonUsage(body);
      const headers = this.pendingHeaders!;
      this.pendingHeaders = null;
      x.endBuffered(this.upstreamStatus, headers, body);
    } else {
      const tail = this.scanner !== null ? this.scanner.end() : null;
      this.takeStreamUsage();
      const passed = this.passed;
      if (passed !== null) {
        this.passed = null;
        if (passed.length > 0) this.usage = this.api.jsonUsage(passed.length === 1 ? passed[0] : Buffer.concat(passed));
      }
      x.endAnswer(tail);
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
    this.passed = null;
    if (!x.headersSent) {
      // Nothing reached the client yet (headers are held until the first body byte): the
      // pipeline answers the error.
      this.buffered = null;
      x.abortAnswer();
      this.settle(!this.responseStarted && isConnectFailure(err) ? CallOutcome.RetryableConnectFailure : CallOutcome.FailedBeforeResponse);
      return;
    }
    // Mid-stream: the status line is gone; cut the connection so the client sees a broken answer.
    x.abortAnswer();
    this.settle(CallOutcome.FailedMidResponse);
  }

  /** What a stream reported (or generated) so far. */
  private takeStreamUsage(): void {
    if (this.scanner !== null && this.usage === null) this.usage = this.scanner.usage();
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
