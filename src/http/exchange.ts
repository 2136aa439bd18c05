import type { HttpResponse } from 'uWebSockets.js';
import { statusLineBytes, type ErrorType, type RouterError } from '../errors.js';
import type { Decision } from '../ratelimit/limiter.js';
import { drainState } from './drain-state.js';
import { TurnQueue } from '../turn-queue.js';
import { atTurnEnd } from '../turn-end.js';
import type { RequestContext } from './request-context.js';
import { connectionNamesIn, headerBlock, isRateLimitHeader, responseHeaderName } from './upstream-headers.js';
import { errorBody, JSON_TYPE, TEXT_TYPE } from './error-body.js';
import { endAnswer, endPlain } from './plain-answer.js';
import { encodeRateHeaders, RATE_HEADERS_FIRST_NAME } from './rate-headers.js';
import { performance } from 'node:perf_hooks';
import { Buffer } from 'node:buffer';

const PIPELINED = 'the router closed the connection: the client sent another request before this answer ended (HTTP pipelining is not supported; wait for each answer)';

/**
 * Where a streamed answer's bytes come from: paused while the client cannot take more, and
 * between a turn's allowance of bytes (STREAM_TURN_BYTES) and the turn's write. Bytes it read
 * before a pause are still delivered.
 */
export interface StreamSource {
  pause(): void;
  resume(): void;
}

/**
 * One inference request in flight: the uWS response, the log context and what the pipeline
 * learns along the way. Fixed shape; created once per request by the front.
 *
 * The exchange owns every write to the client and every change of the answer's status,
 * `headersSent` and `ctx.finished`. Its writes are corked (safe after awaits) and do nothing
 * once the client left or the answer ended; only the rest of a large whole answer, written from
 * uWS's onWritable as the client takes it, goes without a cork (one piece per call).
 */
export class Exchange {
  readonly res: HttpResponse;
  readonly ctx: RequestContext;
  /** Path without the query string. */
  readonly url: string;
  /** `url` is one of the API's endpoints (api-registry.ts), whatever the query: a span is named by it (span-bytes.ts). */
  knownEndpoint = false;
  /** Flat [name, value, …] of request headers to forward upstream (lower-case names). */
  readonly forwardHeaders: string[];
  /** Values of the headers route rules match on, by lower-case name. */
  readonly matchHeaders: Map<string, string> | null;
  /** Raw Authorization header ("" when absent); never forwarded when auth is on. */
  readonly authorization: string;

  body: Buffer = EMPTY;
  /**
   * The body pool's memory `body` lies in (body-pool.ts), held until the request's record is
   * written (releaseBody); null for a body in memory of its own.
   */
  pooledBody: Buffer | null = null;
  /**
   * The path and query as the HTTP/1.1 client writes them to the pod: one character per byte
   * (latin1). `ctx.path` (what the log shows) unless that holds characters outside ASCII; then
   * the front sets the UTF-8 bytes the client sent.
   */
  upstreamPath: string;
  /** Status and headers have been written to the client. */
  headersSent = false;
  /** Status and headers of a streamed answer, held until its first body byte (or its end). */
  private heldStatus = 0;
  private heldHeaders: string[] | null = null;
  private heldAscii = false;
  /** A whole answer queued for the end of the turn (endBuffered). */
  private queuedStatus = 0;
  private queuedHeaders: string[] | null = null;
  private queuedAscii = false;
  private queuedBody: Buffer = EMPTY;
  private queuedError: RouterError | null = null;
  /** queuedError refuses the request itself (its framing, its size): its record keeps it even when it goes unsent. */
  private queuedRefusal = false;
  /**
   * Bytes of a streamed answer waiting for the end of the turn (writeChunk, endStream), in order,
   * and whether the answer ends with them: written with the turn's other answers and chunks, so
   * the client's process is woken once for them (flushAnswers).
   */
  private streamOut: Buffer | null = null;
  private streamOutMore: Buffer[] | null = null;
  private streamEnds = false;
  private streamQueued = false;
  /**
   * Where the answer's end stands once it was made (endStream, or endBuffered of a body over
   * WHOLE_AT_ONCE_MAX): OUT_QUEUED until the end of the turn writes it, OUT_GOING while the
   * connection has not taken its last bytes yet, else OUT_NONE. While not OUT_NONE the request's
   * record waits (holdRecord).
   */
  private out = OUT_NONE;
  /** A whole answer's body while it goes out (OUT_GOING): the rest is written from it, never copied. */
  private outBody: Buffer = EMPTY;
  /** Bytes of `outBody` handed to the connection so far. */
  private outSent = 0;
  /** The record's writer, held until the answer is out (holdRecord). */
  private heldRecord: ((x: Exchange) => void) | null = null;
  /** uWS onWritable handler of an answer going out: made at its first wait, then reused. */
  private outWritableFn: ((offset: number) => boolean) | null = null;
  /**
   * A write of this streamed answer did not go out whole (the client reads slower than the pod
   * sends): uWS kept the rest in its own buffer, which it empties as the client reads, also after
   * the answer's end, and which nothing reports on (see answerOut).
   */
  private pushedBack = false;
  /** The last bytes of a pushed-back stream, kept back to learn when uWS's buffer is empty (endAfterProbes). */
  private endHeld: Buffer = EMPTY;
  /**
   * Bytes of a streamed answer the source may still bring before the turn's write (STREAM_TURN_BYTES,
   * or STREAM_WRITABLE_BYTES while the connection holds bytes the client did not take): at 0 or
   * below the source is paused until the write says whether the client takes them.
   */
  private streamAllowance = STREAM_TURN_BYTES;
  /** The exchange paused the stream's source (allowance spent, or waiting for uWS's onWritable). */
  private sourcePaused = false;
  /** uWS onWritable handler of a stream waiting for the client: made at its first wait, then reused. */
  private streamWritableFn: (() => boolean) | null = null;
  /** Limiter decision of a limited route (for the x-ratelimit-* headers), else null. */
  decision: Decision | null = null;
  /** Which limit `decision` is of: x-ratelimit-scope (null = route). */
  rateScope: 'route' | 'tenant' | null = null;
  /**
   * The upstream exchange in progress: cancelled when the client goes away, paused while the
   * client cannot take more of a streamed answer.
   */
  upstream: (StreamSource & { abortForClient(): void }) | null = null;
  /** The request reached a pod (anything but a connection failure): its input tokens stay charged. */
  reachedPod = false;
  /** Close the connection after the answer (oversized body); also always while draining. */
  forceClose = false;
  /** The request's Accept names application/json: router-made errors answer the OpenAI error shape. */
  acceptJson = false;
  /** The front has handed the exchange on (to the pipeline or straight to finish): it no longer records it itself. */
  handedOn = false;
  /** The request body's Content-Length (-1: chunked), and its bytes received so far: what an upload cut short says. */
  bodyLength = -1;
  bodyBytes = 0;
  /** The `traceparent` sent to the pod (tracing on: set by the tracer), else null. */
  traceparent: string | null = null;
  /**
   * The request's trace span (tracing on: set by the pipeline), ended by the worker when it writes
   * the request's record, so that the span ends with the answer (a slow client's last byte, or
   * its cut) as the record does; else null. Opaque here (observe/tracer.ts RequestSpan).
   */
  traceSpan: object | null = null;
  /** Links of the list of requests whose body is still arriving (arriving-bodies.ts, their only writer). */
  arrivingPrev: Exchange | null = null;
  arrivingNext: Exchange | null = null;

  constructor(res: HttpResponse, ctx: RequestContext, url: string, forwardHeaders: string[], matchHeaders: Map<string, string> | null, authorization: string) {
    this.res = res;
    this.ctx = ctx;
    this.url = url;
    this.forwardHeaders = forwardHeaders;
    this.matchHeaders = matchHeaders;
    this.authorization = authorization;
    this.upstreamPath = ctx.path;
  }

  header(name: string): string {
    return this.matchHeaders?.get(name) ?? '';
  }

  get closeConnection(): boolean {
    return this.forceClose || drainState.draining;
  }

  /** True while the client can still be written to. */
  get writable(): boolean {
    return !this.ctx.aborted && !this.ctx.finished;
  }

  /**
   * uWS onAborted: the connection closed before the answer ended. Records 499 client_closed (or
   * 444 pipelining_refused when uWS closed it because the client pipelined another request);
   * cancels the upstream call. `uploading`: it closed while the request body was arriving (the
   * client left or stalled into the idle timeout, or uWS refused the body's framing), which the
   * message says, with how much of the body came.
   */
  clientGone(pipelined = false, uploading = false): void {
    const ctx = this.ctx;
    ctx.aborted = true;
    // An answer whose end was made but whose last bytes had not gone out yet did not end either.
    const out = this.out;
    const errorUnsent = this.queuedError !== null;
    if (!ctx.finished || out !== OUT_NONE) {
      if (pipelined) ctx.fail('pipelining_refused', PIPELINED, 444);
      else {
        ctx.statusCode = 499;
        if (ctx.errorType === null) ctx.fail('client_closed', uploading ? this.uploadCutMessage() : this.outMessage('the client went away before the answer ended'), 499);
      }
    } else if (errorUnsent && pipelined && !this.queuedRefusal) {
      // An error answer queued for the end of the turn went unsent as well: uWS closed the
      // connection for the request pipelined behind it. A refusal of the request itself (its
      // framing, its size) keeps its record, which says what was refused.
      ctx.fail('pipelining_refused', PIPELINED, 444);
    }
    if (this.upstream !== null) this.upstream.abortForClient();
    if (errorUnsent) this.queuedError = null; // nothing to write any more; its held record goes now
    if (out !== OUT_NONE || errorUnsent) this.answerOut();
  }

  /**
   * The request's record waits for the answer: true when the answer's end was made but its last
   * bytes have not gone out yet (a large whole answer, or a stream's end, not yet written; or a
   * client that does not take them as fast as they come; or an error answer queued for the end of
   * the turn, sendErrorAtTurnEnd); `record` is then called once they
   * did, or once the client left or the router cut the connection (its outcome recorded first).
   * False when the record may be written now. `record` is the worker's one function, not a
   * closure per request.
   */
  holdRecord(record: (x: Exchange) => void): boolean {
    if (this.out === OUT_NONE && this.queuedError === null) return false;
    this.heldRecord = record;
    return true;
  }

  /** The answer is out (or cut): ends its wait and writes the held record, if any. */
  private answerOut(): void {
    // Its last bytes may still be in uWS's buffer: closing the connections now would drop them.
    if (this.pushedBack && drainState.draining && !this.ctx.aborted) drainState.tailMayBeBuffered = true;
    if (this.out === OUT_GOING) {
      goingOut.delete(this);
      // Its duration covers the time the client took to take the answer.
      this.ctx.tEnd = performance.now();
    }
    this.out = OUT_NONE;
    this.outBody = EMPTY;
    this.endHeld = EMPTY;
    const record = this.heldRecord;
    if (record === null) return;
    this.heldRecord = null;
    record(this);
  }

  /** The message of a connection closed while the request body was arriving: how much of it came. */
  private uploadCutMessage(): string {
    const of = this.bodyLength >= 0 ? `${this.bodyBytes} of ${this.bodyLength} bytes` : `${this.bodyBytes} bytes of a chunked body`;
    return `the connection closed while the request body was arriving (${of} received)`;
  }

  /**
   * `what`, and how much of a whole answer's body went out while it is going out (`outBody` is
   * set only then); `what` alone otherwise.
   */
  private outMessage(what: string): string {
    const body = this.outBody;
    return body.length === 0 ? what : `${what} (${this.outSent} of ${body.length} bytes of the body handed to the connection)`;
  }

  /**
   * Ends every answer still going out to a client that does not take it (a drain that reached
   * ROUTER_DRAIN_TIMEOUT): each is recorded as `upstream_error` with `message`, with the status
   * it was sent with, its connection closed, and its held record written. Returns how many.
   */
  static cutAnswersGoingOut(message: string): number {
    let n = 0;
    for (const x of goingOut) {
      x.cutGoingOut(message);
      n++;
    }
    return n;
  }

  private cutGoingOut(message: string): void {
    const ctx = this.ctx;
    ctx.fail('upstream_error', this.outMessage(message), ctx.statusCode);
    const res = this.res;
    // Over before the close, whose onAborted (clientGone) then finds nothing left to record.
    this.answerOut();
    if (!ctx.aborted) {
      ctx.aborted = true;
      res.close();
    }
  }

  /** Records a failure for the log without writing anything (status defaults to the answer's). */
  recordError(type: ErrorType, message: string, status: number = this.ctx.statusCode): void {
    this.ctx.fail(type, message, status);
  }

  /**
   * Answers a router-made error: the OpenAI JSON error shape when the client accepts JSON, else a
   * plain-text body that is the message (error-body.ts). Records the failure in the
   * log context. Safe to call after awaits and after the client left (only records).
   */
  sendError(err: RouterError): void {
    if (this.claimErrorAnswer(err)) this.writeError(err);
  }

  /**
   * Records the failure; true when its answer is now this exchange's to write (the client is
   * still there and nothing was sent yet).
   */
  private claimErrorAnswer(err: RouterError): boolean {
    this.ctx.fail(err.type, err.message, err.status);
    if (!this.writable || this.headersSent) return false;
    this.headersSent = true;
    this.ctx.finished = true;
    return true;
  }

  /** The corked write of a router-made error answer (sendError, or a queued one). */
  private writeError(err: RouterError): void {
    current = this;
    currentError = err;
    this.res.cork(sendErrorCorked);
    currentError = null;
  }

  /**
   * Status and headers of a streamed answer. They are held and go out with the first body byte
   * (writeChunk) or as a whole answer at the end (endStream without bytes): a pod that dies before its first
   * byte is still answered 502. `headers` is the pod's flat [name, value, …] list as received;
   * `ascii`: every byte of the head they were read from is ASCII (so their text needs no check
   * before uWS writes it as UTF-8: headerBlock). Returns false when the client is gone.
   */
  startAnswer(status: number, headers: string[], ascii = false): boolean {
    this.ctx.statusCode = status;
    if (!this.writable) return false;
    this.heldStatus = status;
    this.heldHeaders = headers;
    this.heldAscii = ascii;
    return true;
  }

  /**
   * One chunk of a streamed answer, written at the end of the turn with the turn's other answers
   * (the head too, before the first). When the client cannot take more, the upstream exchange is
   * paused then and resumed once it can.
   */
  writeChunk(chunk: Buffer): void {
    if (chunk.length === 0 || !this.writable) return;
    this.headersSent = true;
    this.queueStreamBytes(chunk);
    if ((this.streamAllowance -= chunk.length) <= 0) this.pauseSource();
  }

  /** The stream's source stops being read (what it read already still comes). */
  private pauseSource(): void {
    const source = this.upstream;
    if (this.sourcePaused || source === null) return;
    this.sourcePaused = true;
    source.pause();
  }

  /** The stream's source is read again, for at most `allowance` bytes before the next write. */
  private resumeSource(allowance: number): void {
    this.streamAllowance = allowance;
    const source = this.upstream;
    if (!this.sourcePaused || source === null) return;
    this.sourcePaused = false;
    source.resume();
  }

  /**
   * uWS onWritable of a stream the client did not take all of: the source brings at most
   * STREAM_WRITABLE_BYTES more before the turn's write, which hands them to uWS. uWS still holds
   * what the client did not take when this runs (it sends it before the next write's bytes), and
   * says nothing of how much: bringing a turn's worth of bytes here would grow what it holds by up
   * to that much at each of these calls, while the client takes less in between.
   */
  private streamWritable(): boolean {
    if (this.sourcePaused) this.resumeSource(STREAM_WRITABLE_BYTES);
    return true;
  }

  /**
   * Ends a streamed answer with its last bytes, at the end of the turn with the chunks before
   * them: one send. An answer of which nothing was written goes out whole (with a
   * content-length) when it has no bytes, else chunked as if they had been a chunk of their own.
   * When the connection does not take the last bytes at once, the end waits until it takes more
   * (outWritable). Either way the request's record waits for it (holdRecord).
   */
  endStream(last: Buffer | null): void {
    if (!this.writable) return;
    this.ctx.finished = true;
    this.headersSent = true;
    this.streamEnds = true;
    this.out = OUT_QUEUED;
    this.queueStreamBytes(last);
  }

  private queueStreamBytes(b: Buffer | null): void {
    if (b !== null && b.length > 0) {
      if (this.streamOut === null) this.streamOut = b;
      else if (this.streamOutMore === null) this.streamOutMore = [this.streamOut, b];
      else this.streamOutMore.push(b);
    }
    if (this.streamQueued) return;
    this.streamQueued = true;
    this.queueAnswer();
  }

  /** Writes the stream's queued bytes (and its end) now; nothing when the client left. */
  private writeQueuedStream(): void {
    this.streamQueued = false;
    const one = this.streamOut;
    const more = this.streamOutMore;
    this.streamOut = null;
    this.streamOutMore = null;
    const ends = this.streamEnds;
    this.streamEnds = false;
    if (this.ctx.aborted) return;
    const out = more === null ? one ?? EMPTY : Buffer.concat(more);
    if (ends && out.length > 0) {
      if (this.pushedBack) this.endAfterProbes(out);
      else this.endKeepingTail(out);
      return;
    }
    current = this;
    currentBody = out;
    writeOk = true;
    if (this.takeHeldHead()) {
      this.res.cork(!ends ? writeHeadAndChunkCorked : endBufferedCorked);
      currentHeaders = null;
    } else if (ends) {
      this.res.cork(endCorked);
    } else if (out.length > 0) {
      this.res.cork(writeChunkCorked);
    }
    currentBody = EMPTY;
    if (!writeOk) this.pushedBack = true;
    if (ends) {
      // An end without bytes: nothing is left to write.
      this.answerOut();
      return;
    }
    if (this.upstream === null) return;
    if (writeOk) {
      // The client took every byte so far: the source brings a turn's worth more.
      this.resumeSource(STREAM_TURN_BYTES);
      return;
    }
    // uWS holds what the client did not take: the source waits for it (streamWritable).
    this.pauseSource();
    this.res.onWritable(this.streamWritableFn ??= (): boolean => this.streamWritable());
  }

  /** The answer's held head, if any, handed to the corked writers (currentStatus, currentHeaders, currentAscii): true when there was one. */
  private takeHeldHead(): boolean {
    const head = this.heldHeaders;
    if (head === null) return false;
    this.heldHeaders = null;
    currentStatus = this.heldStatus;
    currentHeaders = head;
    currentAscii = this.heldAscii;
    return true;
  }

  /**
   * The end of a stream not pushed back so far, with its last bytes: they go out with the end in
   * one send, less the last (up to END_PROBES) when the connection does not take the others whole.
   * Those are kept back as for a stream pushed back earlier (endAfterProbes): the write that was
   * pushed back left bytes in uWS's buffer, which an end made at the next onWritable would not see.
   */
  private endKeepingTail(out: Buffer): void {
    const kept = Math.min(END_PROBES, out.length - 1);
    const tail = out.subarray(out.length - kept);
    current = this;
    currentBody = out.subarray(0, out.length - kept);
    currentTail = tail;
    writeOk = true;
    if (this.takeHeldHead()) {
      this.res.cork(writeHeadChunkAndEndCorked);
      currentHeaders = null;
    } else {
      this.res.cork(endAnswerCorked);
    }
    currentBody = EMPTY;
    currentTail = EMPTY;
    if (writeOk) {
      this.answerOut();
      return;
    }
    // The end waits for the connection to take more, then probes uWS's buffer with the tail.
    this.pushedBack = true;
    this.endHeld = tail;
    this.waitForWritable();
  }

  /**
   * The end of a stream the client reads slower than the pod sent it (pushedBack): uWS may still
   * hold earlier bytes in its own buffer, and after the end nothing says when they went out, so a
   * worker that closes its connections once nothing is in flight (the drain) would drop them. The
   * last bytes (up to END_PROBES) are kept back and written one at a time, each in a cork of its
   * own: a write that finds uWS's buffer empty returns true, and the end goes with the rest of
   * them; one that does not waits for the connection to take more (outWritable). When none is left
   * the end is made as usual, its tail unknown (drainState.tailMayBeBuffered).
   */
  private endAfterProbes(out: Buffer): void {
    const held = Math.min(END_PROBES, out.length);
    if (out.length > held) {
      current = this;
      currentBody = out.subarray(0, out.length - held);
      this.res.cork(writeChunkCorked);
      currentBody = EMPTY;
    }
    this.endHeld = out.subarray(out.length - held);
    this.probeEnd();
  }

  /** One probe of endAfterProbes: ends the answer, or waits for the connection to take more. */
  private probeEnd(): void {
    const held = this.endHeld;
    current = this;
    currentBody = held;
    this.res.cork(probeEndCorked);
    currentBody = EMPTY;
    this.endHeld = held.subarray(1);
    if (probeOk) {
      this.endHeld = EMPTY;
      this.pushedBack = false;
      this.answerOut();
    } else {
      this.waitForWritable();
    }
  }

  /** The answer's last bytes wait for the connection: the rest goes out from outWritable. */
  private waitForWritable(): void {
    this.out = OUT_GOING;
    goingOut.add(this);
    this.res.onWritable(this.outWritableFn ??= (offset: number): boolean => this.outWritable(offset));
  }

  /**
   * uWS onWritable of an answer going out. A whole answer: the rest of its body from `offset`
   * (bytes of it taken so far; a view, not a copy), as much as the connection takes; true when
   * all of it went. A stream: its end, after the bytes before it.
   */
  private outWritable(offset: number): boolean {
    if (this.out !== OUT_GOING) return true;
    if (this.endHeld.length > 0) {
      this.probeEnd();
      return true;
    }
    const body = this.outBody;
    if (body.length === 0) {
      current = this;
      this.res.cork(endCorked);
      this.answerOut();
      return true;
    }
    const [ok, done] = this.res.tryEnd(body.subarray(offset), body.length);
    if (done) {
      this.outSent = body.length;
      this.answerOut();
    } else {
      this.outSent = this.res.getWriteOffset();
    }
    return ok;
  }

  /** Marks the first byte of a streamed (SSE) answer. */
  firstByte(): void {
    if (this.ctx.tFirstByte === 0) this.ctx.tFirstByte = performance.now();
  }

  /**
   * A whole answer: status, headers and body in one corked write (one send; keeps
   * content-length), made at the end of the event loop's turn with the turn's other whole
   * answers (`flushAnswers`): the client's process is then woken once for them, not once per
   * answer between each one's processing. The answer counts as sent from here on (status,
   * `ctx.finished`); its record waits for its last byte when the body is over WHOLE_AT_ONCE_MAX
   * (holdRecord), since then the connection may not take it all at once. `ascii` as for
   * startAnswer.
   */
  endBuffered(status: number, headers: string[], body: Buffer, ascii = false): void {
    this.ctx.statusCode = status;
    if (!this.writable) return;
    this.headersSent = true;
    this.ctx.finished = true;
    if (body.length > WHOLE_AT_ONCE_MAX) this.out = OUT_QUEUED;
    this.queuedStatus = status;
    this.queuedHeaders = headers;
    this.queuedAscii = ascii;
    this.queuedBody = body;
    this.queueAnswer();
  }

  /**
   * As sendError, but written at the end of the turn with the turn's other whole answers
   * (endBuffered): for the pipeline's errors (429, unknown model, bad body …), which a busy
   * router answers many of per turn, and for the front's refusal of a request's framing (see
   * inference-front.ts).
   */
  sendErrorAtTurnEnd(err: RouterError): void {
    if (!this.claimErrorAnswer(err)) return;
    this.queuedError = err;
    this.queueAnswer();
  }

  /**
   * A refusal of the request itself (its framing, a body over the limit), answered with the
   * connection's close at the end of the turn: this uWS build goes on parsing the bytes after a
   * request answered with `Connection: close` when they came in the same read, so a request
   * behind it would reach a handler; with the answer still pending, uWS takes such a request for
   * a pipelined one and closes the connection instead. The record then keeps the refusal, though
   * it went unsent.
   */
  refuseAtTurnEnd(err: RouterError): void {
    this.forceClose = true;
    this.queuedRefusal = true;
    this.sendErrorAtTurnEnd(err);
  }

  /** Queues this exchange's whole answer, or its stream's bytes, for the end of the turn. */
  private queueAnswer(): void {
    queuedAnswers.push(this);
    if (!answersQueued) {
      answersQueued = true;
      atTurnEnd(Exchange.flushAnswers);
    }
  }

  /** Writes the answer endBuffered() or sendErrorAtTurnEnd() queued, or the stream's bytes, unless the client left meanwhile. */
  private writeQueuedAnswer(): void {
    if (this.streamQueued) {
      this.writeQueuedStream();
      return;
    }
    const err = this.queuedError;
    if (err !== null) {
      // The request's record waits for this answer (holdRecord).
      this.queuedError = null;
      if (!this.ctx.aborted) this.writeError(err);
      this.answerOut();
      return;
    }
    const headers = this.queuedHeaders;
    this.queuedHeaders = null;
    const body = this.queuedBody;
    this.queuedBody = EMPTY;
    if (this.ctx.aborted || headers === null) return;
    current = this;
    currentStatus = this.queuedStatus;
    currentHeaders = headers;
    currentAscii = this.queuedAscii;
    currentBody = body;
    if (this.out === OUT_QUEUED) {
      this.res.cork(tryEndBufferedCorked);
      currentHeaders = null;
      currentBody = EMPTY;
      this.outBody = body;
      this.outSent = currentSent;
      if (wholeDone) this.answerOut();
      else this.waitForWritable();
      return;
    }
    this.res.cork(endBufferedCorked);
    currentHeaders = null;
    currentBody = EMPTY;
  }

  /**
   * Writes every whole answer queued in this turn (also called before a worker exits). One answer
   * that throws (a bug) does not keep the turn's other answers from going out (TurnQueue.drainEach).
   */
  static flushAnswers(): void {
    answersQueued = false;
    queuedAnswers.drainEach(Exchange.writeQueued);
  }

  private static writeQueued(x: Exchange): void {
    x.writeQueuedAnswer();
  }

  /**
   * Cuts the connection mid-answer so the client sees a broken answer. Only once bytes went out
   * (headersSent): before that the caller answers an error instead. `last`: bytes of the stream
   * written before the close (the event saying why it is cut), after those still queued.
   */
  abortAnswer(last: Buffer | null = null): void {
    if (last !== null && this.headersSent && this.writable) this.queueStreamBytes(last);
    // Bytes the pod sent before the failure go out first, as they would have at the turn's end.
    if (this.streamQueued) this.writeQueuedStream();
    this.heldHeaders = null;
    if (!this.writable || !this.headersSent) return;
    this.ctx.finished = true;
    current = this;
    this.res.cork(closeCorked);
  }

  /** The exchange with the pod is over (any outcome). */
  upstreamEnded(): void {
    this.ctx.tUpstreamEnd = performance.now();
  }
}


/** Writes the x-ratelimit-* headers of a limited route (rate-headers.ts: one call, bytes). */
export function writeRateHeaders(res: HttpResponse, d: Decision, scope: 'route' | 'tenant' | null = null): void {
  // A decision without any limit state (the global store down in `open` mode: counts unknown) shows none, not a bare scope.
  if (d.input === null && d.output === null) return;
  res.writeHeader(RATE_HEADERS_FIRST_NAME, encodeRateHeaders(d, scope));
}

const EMPTY = Buffer.alloc(0);

/**
 * A whole answer with a body up to this size is ended with one end() and counts as out at once:
 * the usual answer (a few KB) is within uWS's 16 KiB cork buffer, and the connection's socket
 * buffers take it whole.
 * A larger one is written with tryEnd, which says whether the connection took all of it (and
 * makes an array per call, which the usual answer does without); the rest goes out as the client
 * takes it (outWritable).
 */
const WHOLE_AT_ONCE_MAX = 16 * 1024;

/**
 * Bytes a pushed-back stream's end keeps back to probe uWS's buffer with (Exchange.endAfterProbes).
 * Each probe comes when the connection's socket reports writable (a third of its buffer free),
 * and writes out what the socket takes: a few probes empty a buffer of megabytes.
 */
const END_PROBES = 16;

/**
 * The most bytes of a streamed answer the source brings in one turn of the event loop, before the
 * turn's write to the client says whether it takes them (a read or so more: what the source read
 * before its pause). Without it, one turn reads all the pod's socket holds (tens of 64 KiB reads),
 * which a client slower than the pod leaves to uWS. A stream of tokens never gets near it.
 */
const STREAM_TURN_BYTES = 256 * 1024;

/**
 * As STREAM_TURN_BYTES, from a uWS onWritable of a stream whose client did not take the last write
 * until the next write the client takes whole: each such event adds at most this much (and a read)
 * to what uWS holds, and uWS sends what it holds before it.
 */
const STREAM_WRITABLE_BYTES = 64 * 1024;

/** Exchange.out: no answer's end pending; one queued for the end of the turn; one going out. */
const OUT_NONE = 0;
const OUT_QUEUED = 1;
const OUT_GOING = 2;

/** Answers whose last bytes the client has not taken yet (cut by a drain that times out). */
const goingOut = new Set<Exchange>();

/** Whole answers waiting for the end of the turn, in the order they were made. */
const queuedAnswers = new TurnQueue<Exchange>();
let answersQueued = false;

// The corked writers run synchronously inside cork(); they read what the caller set just before,
// so no closure is made per write.
let current: Exchange = null as unknown as Exchange;
let currentError: RouterError | null = null;
let currentStatus = 0;
let currentHeaders: string[] | null = null;
/** currentHeaders were read from a head of ASCII bytes only. */
let currentAscii = false;
let currentBody: Buffer = EMPTY;
/** The last bytes of a stream's end, written with it once the write of currentBody went whole (endKeepingTail). */
let currentTail: Buffer = EMPTY;
let writeOk = true;
/** tryEndBufferedCorked: the connection took the whole answer; else how much of its body (currentSent). */
let wholeDone = true;
let currentSent = 0;

function sendErrorCorked(): void {
  const x = current;
  const err = currentError!;
  const res = x.res;
  res.writeStatus(statusLineBytes(err.status));
  // One writeHeader call for the content type, the request id and the error's own headers (see writeHeadCorked).
  let lines = (x.acceptJson ? JSON_TYPE : TEXT_TYPE) + REQUEST_ID_LINE + x.ctx.requestId;
  if (err.headers !== null) for (const k in err.headers) lines += CRLF + k + COLON_SP + err.headers[k];
  res.writeHeader(CONTENT_TYPE, headerBlock(lines));
  if (x.decision !== null) writeRateHeaders(res, x.decision, x.rateScope);
  endAnswer(res, errorBody(err, x.acceptJson), x.closeConnection, x.ctx.method === 'HEAD');
}

/**
 * Status and the pod's headers, less hop-by-hop ones (also those its Connection header names)
 * and, on a limited route, its x-ratelimit-* (the router's own are written instead).
 */
function writeHeadCorked(): void {
  const x = current;
  const res = x.res;
  const headers = currentHeaders!;
  const limited = x.decision !== null;
  const named = connectionNamesIn(headers);
  res.writeStatus(statusLineBytes(currentStatus));
  // The pod's headers and the request id go out in one writeHeader call, as the rate-limit
  // headers do: uWS writes `name: value\r\n` as given, so the value carries the other lines, and
  // native code converts one string instead of two per header.
  let first: string | null = null;
  let lines = '';
  for (let i = 0; i < headers.length; i += 2) {
    const name = responseHeaderName(headers[i]);
    if (name === null) continue;
    if (limited && isRateLimitHeader(name)) continue;
    if (named.length > 0 && named.includes(name)) continue;
    if (first === null) {
      first = name;
      lines = headers[i + 1];
    } else {
      lines += CRLF + name + COLON_SP + headers[i + 1];
    }
  }
  if (first === null) res.writeHeader(REQUEST_ID, x.ctx.requestId);
  else {
    // The request id is ASCII (made by the router, or a client's checked as printable ASCII); so
    // are the names; a head of ASCII bytes makes the whole block ASCII, which needs no check.
    const block = lines + REQUEST_ID_LINE + x.ctx.requestId;
    res.writeHeader(first, currentAscii ? block : headerBlock(block));
  }
  if (limited) writeRateHeaders(res, x.decision!, x.rateScope);
}

const REQUEST_ID = 'x-request-id';
const CONTENT_TYPE = 'content-type';
const CRLF = '\r\n';
const COLON_SP = ': ';
const REQUEST_ID_LINE = '\r\nx-request-id: ';

function endBufferedCorked(): void {
  writeHeadCorked();
  // A 204 ends without a content-length (endPlain), but while the router drains: the connection
  // then closes after it, and end() writes `content-length: 0`.
  endPlain(current.res, currentBody, current.closeConnection, currentStatus === 204);
}

/**
 * A whole answer over WHOLE_AT_ONCE_MAX: tryEnd writes what the connection takes now and keeps
 * its content-length; the rest is the exchange's to write (outWritable). tryEnd takes no close
 * flag: `connection: close` is written by hand, which the client honours by closing the connection.
 */
function tryEndBufferedCorked(): void {
  writeHeadCorked();
  const x = current;
  const res = x.res;
  const body = currentBody;
  const close = x.closeConnection;
  if (close) res.writeHeader('connection', 'close');
  const done = res.tryEnd(body, body.length)[1];
  wholeDone = done;
  currentSent = done ? body.length : res.getWriteOffset();
}

function writeHeadAndChunkCorked(): void {
  writeHeadCorked();
  // A stream that starts while the router drains says so in its headers: the connection closes
  // after it (the flag on end() would be written into a chunked body).
  if (current.closeConnection) current.res.writeHeader('connection', 'close');
  writeOk = current.res.write(currentBody);
}

/**
 * The bytes kept back for the end (currentTail) go with it when the connection took the chunk;
 * else the end waits (writeOk false): see endKeepingTail.
 */
function writeHeadChunkAndEndCorked(): void {
  writeHeadAndChunkCorked();
  if (writeOk) current.res.end(currentTail);
}

function writeChunkCorked(): void {
  writeOk = current.res.write(currentBody);
}

/** As writeHeadChunkAndEndCorked, without the head. */
function endAnswerCorked(): void {
  const x = current;
  writeOk = x.res.write(currentBody);
  if (writeOk) x.res.end(currentTail);
}

function endCorked(): void {
  current.res.end();
}

/** A probe's result (probeEndCorked): uWS's buffer was empty, and the answer ended. */
let probeOk = false;

/**
 * Writes the first kept-back byte of a pushed-back stream's end (Exchange.endAfterProbes) as a
 * chunk of its own: uWS first writes out what its buffer holds, and returns true only when it
 * could write all of it. Then the end goes, with the rest of the kept-back bytes. Those go out
 * when the cork is released, and a socket that does not take them whole leaves them in uWS's
 * buffer though the write said true: the worker's drain reads the kernel's queues for that
 * (http/client-send-queue.ts).
 */
function probeEndCorked(): void {
  const x = current;
  const held = currentBody;
  probeOk = x.res.write(held.subarray(0, 1));
  if (probeOk) x.res.end(held.subarray(1));
}

function closeCorked(): void {
  current.res.close();
}
