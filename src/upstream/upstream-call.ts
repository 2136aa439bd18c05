import type { AnswerUsage, InferenceApi, StreamUsageReader } from '../api/inference-api.js';
import type { Exchange, StreamSource } from '../http/exchange.js';
import type { TokenCounter } from '../tokens/token-counter.js';
import { GeneratedTextCount } from '../usage/generated-text-count.js';
import type { EndpointState } from './endpoint-registry.js';
import type { Http1Handler, Http1Request, Http1RequestOptions } from './http1/request.js';
import { ClientGone, isConnectFailure, upstreamFailure } from './upstream-errors.js';
import { malformed } from './http1/errors.js';
import { TurnQueue } from '../turn-queue.js';
import { Buffer } from 'node:buffer';
import { isUsualHeader } from '../header-name.js';

/**
 * Bodies up to this size with a content-length are answered in one write (keeps content-length);
 * also the most of a streamed (chunked or close-delimited) JSON answer kept to read its usage.
 */
const BUFFER_LIMIT = 8 * 1024 * 1024;
/** Of a successful JSON answer larger than BUFFER_LIMIT, at least this much of its end is kept, to read its usage there. */
const TAIL_BYTES = 64 * 1024;

/**
 * How long after a stream's last event (`[DONE]`) the pod has to end its answer (the chunked
 * body's last chunk, or the connection's close); a pod that holds it open longer is cut then, and
 * the client's stream ends whole, not at the ModelServer's timeout with an error event after its
 * `[DONE]`. A pod ends it in the same write as `[DONE]`, or just after.
 */
const FINISHED_STREAM_END_MS = 1000;

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

/** Who hears that a call ended: once per call, with its outcome. */
export interface CallListener {
  callEnded(call: UpstreamCall, outcome: CallOutcome): void;
}

/**
 * One exchange with one pod, as a handler of the HTTP/1.1 client (http1/): hands status, raw
 * headers and body chunks to the client exchange (pausing the pod's socket under backpressure),
 * has the request's API read the usage, and tells its listener once with the outcome.
 *
 * The listener hears it in a microtask, as an awaited Promise would continue: never from inside
 * the HTTP/1.1 client's own calls (a parser, a connection being closed), so what it starts next
 * (a retry on another pod) runs on a settled client. The calls ended in one turn share one
 * microtask (endedCalls), so a call makes no Promise and no closure of its own.
 */
export class UpstreamCall implements Http1Handler, StreamSource {
  private readonly x: Exchange;
  private readonly api: InferenceApi;
  private readonly endpoint: EndpointState;
  private readonly stripUsage: boolean;
  /** The ModelServer's timeout (what a timeout's error says). */
  private readonly timeoutMs: number;
  private req: Http1Request | null = null;
  /** Upstream response headers of a buffered answer (flat [name, value, …]), kept until it ends. */
  private pendingHeaders: string[] | null = null;
  private pendingAscii = false;
  private responseStarted = false;
  /** The stream's last event came: its end was asked for within FINISHED_STREAM_END_MS. */
  private finishing = false;
  private buffered: Buffer[] | null = null;
  /** A successful answer passed through (no length, or one over BUFFER_LIMIT): its chunks, kept to read usage at the end. */
  private passed: Buffer[] | null = null;
  private passedBytes = 0;
  /** The answer is larger than BUFFER_LIMIT: `passed` keeps only its last TAIL_BYTES or more. */
  private passedTail = false;
  /** The passed answer's content-type is JSON (its usage is looked for in its end only then). */
  private passedJson = false;
  private readonly tokens: TokenCounter;
  private scanner: StreamUsageReader | null = null;
  private settled = false;
  private readonly listener: CallListener;
  /** Set when the call settles, for the listener. */
  private outcome = CallOutcome.Done;
  error: unknown = null;
  usage: AnswerUsage | null = null;
  upstreamStatus = 0;
  /** A 503 with retry-after: the pod is overloaded, not broken (passive health, pick/outlier-detector.ts). */
  retryAfter = false;

  constructor(x: Exchange, api: InferenceApi, tokens: TokenCounter, endpoint: EndpointState, stripUsage: boolean, timeoutMs: number, listener: CallListener) {
    this.x = x;
    this.timeoutMs = timeoutMs;
    this.tokens = tokens;
    this.api = api;
    this.endpoint = endpoint;
    this.stripUsage = stripUsage;
    this.listener = listener;
    endpoint.begin();
  }

  /** Sends the request on the pod's pool; the answer comes back through the handler methods. */
  send(opts: Http1RequestOptions): void {
    this.req = this.endpoint.pool.dispatch(opts, this);
  }

  abortForClient(): void {
    this.abort(new ClientGone('client went away'));
  }

  abort(reason: Error): void {
    this.req?.abort(reason);
  }

  onHeaders(statusCode: number, headers: string[], req: Http1Request): boolean {
    this.responseStarted = true;
    this.upstreamStatus = statusCode;
    if (statusCode === 503) this.retryAfter = hasRetryAfter(headers);
    if (isEventStream(headers)) {
      // The usage chunk the router asked for is removed whatever the status: an error stream carries it too.
      this.scanner = this.api.streamUsage(this.stripUsage, new GeneratedTextCount(this.tokens), this.endpoint.streamTokensPerEvent, this.x.body.length);
    } else if (req.contentLength >= 0 && req.contentLength <= BUFFER_LIMIT) {
      this.buffered = [];
      this.pendingHeaders = headers;
      this.pendingAscii = req.headAscii;
      return true;
    } else if (statusCode < 300) {
      this.passed = [];
      this.passedTail = req.contentLength > BUFFER_LIMIT;
      this.passedJson = isJson(headers);
    }
    if (!this.x.startAnswer(statusCode, headers, req.headAscii)) {
      req.abort(new ClientGone('client went away'));
      return false;
    }
    return true;
  }

  onData(chunk: Buffer): boolean {
    if (this.buffered !== null) {
      this.buffered.push(chunk);
      return true;
    }
    if (this.passed !== null) this.keepPassed(chunk);
    const scanner = this.scanner;
    const out = scanner !== null ? scanner.push(chunk) : chunk;
    // The stream's last event came: the pod's end of the answer is due at once, not at the timeout.
    if (scanner !== null && scanner.finished && !this.finishing) {
      this.finishing = true;
      this.req?.endWithin(FINISHED_STREAM_END_MS);
    }
    if (out.length === 0 || !this.x.writable) return true;
    if (scanner !== null) this.x.firstByte();
    // Queued by the exchange for the end of the turn, with this turn's other pieces of the answer
    // (one send); it pauses the pod's socket through pause() and resume() under backpressure and
    // between a turn's allowance and its write (this call is the exchange's `upstream` while it runs).
    this.x.writeChunk(out);
    return true;
  }

  /** StreamSource: the client cannot take more; the pod's socket stops being read. */
  pause(): void {
    this.req?.pause();
  }

  /** StreamSource: the pod's socket is read again (the client can take more). */
  resume(): void {
    this.req?.resume();
  }

  /**
   * Keeps a passing chunk of a JSON answer (by reference): all of them up to BUFFER_LIMIT; beyond,
   * only the last chunks that hold TAIL_BYTES (so at most TAIL_BYTES and one chunk).
   */
  private keepPassed(chunk: Buffer): void {
    const kept = this.passed!;
    kept.push(chunk);
    this.passedBytes += chunk.length;
    if (!this.passedTail) {
      if (this.passedBytes <= BUFFER_LIMIT) return;
      this.passedTail = true;
    }
    while (this.passedBytes - kept[0].length >= TAIL_BYTES) this.passedBytes -= kept.shift()!.length;
  }

  onComplete(): void {
    const x = this.x;
    if (this.buffered !== null) {
      const body = this.buffered.length === 1 ? this.buffered[0] : Buffer.concat(this.buffered);
      this.buffered = null;
      const headers = this.pendingHeaders!;
      if (this.upstreamStatus < 300) this.usage = this.wholeUsage(body, isJson(headers));
      this.pendingHeaders = null;
      x.endBuffered(this.upstreamStatus, headers, body, this.pendingAscii);
    } else {
      const scanner = this.scanner;
      // The answer's framing ended (its content-length, its last chunk) inside an event: the pod
      // cut its stream short. Unless that event is its `[DONE]` (read by end()), the request failed
      // partway, as when the pod breaks the connection; the closing is decided before end() reads
      // the cut event, while the bytes forwarded so far still say where they stop.
      const cut = scanner !== null && scanner.endsInEvent
        ? malformed('the event stream ended inside an event (no blank line after its last data, and no [DONE])') : null;
      const closing = cut !== null ? this.closingEvent(cut) : null;
      const tail = scanner !== null ? scanner.end() : null;
      this.takeStreamUsage();
      if (cut !== null && !scanner!.finished) {
        this.error = cut;
        this.passed = null;
        x.abortAnswer(closing);
        this.settle(CallOutcome.FailedMidResponse);
        return;
      }
      // A stream that ended in full teaches whether the pod reports its output count, and its tokens per event.
      if (this.scanner !== null && this.upstreamStatus < 300) this.endpoint.learnStream(this.usage!.completionTokens, this.scanner.textEvents);
      const passed = this.passed;
      if (passed !== null) {
        this.passed = null;
        if (passed.length > 0) this.usage = this.passedUsage(passed.length === 1 ? passed[0] : Buffer.concat(passed));
      }
      // With the turn's queued pieces of the answer, in one send.
      x.endStream(tail);
    }
    this.settle(CallOutcome.Done);
  }

  /**
   * The usage of a successful answer read whole (`json`: its content type says JSON). One that is
   * to be JSON and is not (cut short, bytes after it) has an output not known: the request is
   * marked, for its metric.
   */
  private wholeUsage(body: Buffer, json: boolean): AnswerUsage {
    const usage = this.api.jsonUsage(body);
    if (usage.unreadable === true && json) this.x.ctx.usageUnread = true;
    return usage;
  }

  /**
   * The usage of a successful answer that passed through: read from all of it, or, when it was
   * too large to keep, from the end of a JSON answer; null (and the request marked, for its
   * metric) when that end does not hold it. A large answer of another type (audio, say) has none.
   */
  private passedUsage(kept: Buffer): AnswerUsage | null {
    if (!this.passedTail) return this.wholeUsage(kept, this.passedJson);
    if (!this.passedJson) return null;
    const usage = this.api.tailUsage(kept);
    if (usage === null) this.x.ctx.usageUnread = true;
    return usage;
  }

  onError(err: Error): void {
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
    if (this.scanner !== null && this.scanner.finished) {
      // The stream said it is whole ([DONE]), then the pod broke the connection or held it past
      // FINISHED_STREAM_END_MS without ending the answer: the client's stream ends as it would have.
      x.endStream(this.scanner.end());
      this.settle(CallOutcome.Done);
      return;
    }
    // Mid-stream: the status line is gone; cut the connection so the client sees a broken answer,
    // a stream after an error event its client raises.
    x.abortAnswer(this.closingEvent(err));
    this.settle(CallOutcome.FailedMidResponse);
  }

  /**
   * The error event a stream cut by `err` ends with (the failure as the answer to the request would
   * have said it, had nothing been sent), with what must come before it; null when the answer is
   * not a stream of events, or when its bytes so far end within an event (StreamUsageReader.closingEvent).
   */
  private closingEvent(err: Error): Buffer | null {
    const scanner = this.scanner;
    if (scanner === null) return null;
    return scanner.closingEvent(this.api.streamErrorEvent(upstreamFailure(err, this.timeoutMs, this.endpoint.name)));
  }

  /** The pod's own error event in its stream: its message, or null (none, or not a stream). */
  get podError(): string | null {
    return this.scanner === null ? null : this.scanner.podError;
  }

  /** What a stream reported (or generated) so far. */
  private takeStreamUsage(): void {
    if (this.scanner !== null && this.usage === null) this.usage = this.scanner.usage();
  }

  private settle(outcome: CallOutcome): void {
    if (this.settled) return;
    this.settled = true;
    this.req = null;
    this.endpoint.end();
    this.outcome = outcome;
    endedCalls.push(this);
    if (!endedQueued) {
      endedQueued = true;
      // A resolved Promise's then, not queueMicrotask: Node's queueMicrotask makes an
      // AsyncResource and a bound function per call.
      void RESOLVED.then(tellEndedCalls);
    }
  }

  /** Tells the listener (tellEndedCalls). */
  tell(): void {
    this.listener.callEnded(this, this.outcome);
  }

}

/** Calls settled since the last tellEndedCalls, in the order they settled. */
const endedCalls = new TurnQueue<UpstreamCall>();
let endedQueued = false;
const RESOLVED = Promise.resolve();

/**
 * Tells each settled call's listener. A listener may start a call that settles at once (a retry
 * that cannot be sent): it joins this drain (TurnQueue.drainEach).
 */
function tellEndedCalls(): void {
  endedQueued = false;
  endedCalls.drainEach(tell);
}

function tell(call: UpstreamCall): void {
  call.tell();
}

/**
 * The index in the pod's flat [name, value, …] list of the value of the first header named `lower`
 * (in any case; `capital`, its usual spelling, compared first), or -1.
 */
function headerValueIndex(headers: string[], lower: string, capital: string): number {
  for (let i = 0; i < headers.length; i += 2) if (isUsualHeader(headers[i], lower, capital)) return i + 1;
  return -1;
}

/** True when the answer's content-type is text/event-stream (a stream whose usage is scanned). */
function isEventStream(headers: string[]): boolean {
  const v = headerValueIndex(headers, 'content-type', 'Content-Type');
  return v >= 0 && isEventStreamType(headers[v]);
}

/** The answer's content-type is JSON: `application/json`, or a `+json` type, in any case (looked for on answers passed through only). */
function isJson(headers: string[]): boolean {
  const v = headerValueIndex(headers, 'content-type', 'Content-Type');
  if (v < 0) return false;
  const type = headers[v].split(';', 1)[0].trim().toLowerCase();
  return type === 'application/json' || type.endsWith('+json');
}

/** The answer has a retry-after header (looked for on 503s only). */
export function hasRetryAfter(headers: string[]): boolean {
  return headerValueIndex(headers, 'retry-after', 'Retry-After') >= 0;
}

const EVENT_STREAM = 'text/event-stream';

/**
 * A media type is case-insensitive (RFC 9110 §8.3.1): `Text/Event-Stream` is one too. Only a value
 * that starts with a `t` or `T` but not in lower case is lower-cased (application/json is not).
 */
function isEventStreamType(value: string): boolean {
  if (value.startsWith(EVENT_STREAM)) return true;
  return (value.charCodeAt(0) | 0x20) === 0x74 && value.length >= EVENT_STREAM.length
    && value.slice(0, EVENT_STREAM.length).toLowerCase() === EVENT_STREAM;
}

