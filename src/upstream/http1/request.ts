/**
 * One request through the pool: what to send, the handler that receives the answer, and the
 * controls the handler uses (pause/resume reading, abort). The handler gets exactly one of
 * onComplete or onError. Handlers are plain objects with methods, so nothing is allocated per
 * callback; `onHeaders`/`onData` return false to pause reading until `resume()` (bytes already
 * read from the socket are still delivered).
 */
import { Http1Error } from './errors.js';

export interface Http1Handler {
  /** The final response head; `headers` is a flat [name, value, …] array as received. */
  onHeaders(statusCode: number, headers: string[], req: Http1Request): boolean;
  onData(chunk: Buffer, req: Http1Request): boolean;
  /** The response ended; trailers of a chunked answer (flat array), else null. */
  onComplete(trailers: string[] | null, req: Http1Request): void;
  /** Connect failures carry the socket's errno code (ECONNREFUSED…); see errors.ts. */
  onError(err: Error, req: Http1Request): void;
}

export interface Http1RequestOptions {
  readonly method: string;
  /**
   * Path and query, e.g. /v1/completions, one character per byte: the head is written as latin1,
   * so a character above U+00FF would lose its high byte.
   */
  readonly path: string;
  /** Flat [name, value, …] array; no host, content-length or connection. */
  readonly headers: readonly string[];
  readonly body: Buffer | null;
  /**
   * Overrides the pool's headers timeout (ms, 0 = none): from dispatch to the end of the answer's
   * head, the wait for a connection included.
   */
  readonly headersTimeoutMs?: number;
  /** Overrides the pool's body idle timeout (ms, 0 = none). */
  readonly bodyTimeoutMs?: number;
  /**
   * Bounds the whole exchange, from dispatch (waiting for a connection included) to the answer's
   * last byte (ms, 0 or absent = none). Driven by the pool's coarse timer like the other
   * timeouts, so it fires up to two timer periods late; no timer is made per request.
   */
  readonly totalTimeoutMs?: number;
}

export const enum RequestState { Queued, Sent, Done }

/** What a request needs of the connection carrying it (connection.ts sets itself here). */
export interface RequestCarrier {
  pause(): void;
  resume(): void;
  endWithin(ms: number): void;
  abort(reason: Error): void;
}

/** Internal view of the pool a request belongs to. */
export interface RequestOwner {
  dequeue(req: Http1Request): void;
}

export class Http1Request {
  readonly method: string;
  readonly path: string;
  readonly headers: readonly string[];
  readonly body: Buffer | null;
  readonly handler: Http1Handler;
  /**
   * Tick of the pool's coarse clock by which the answer's head must have come, counted from
   * dispatch (a wait for a connection, in the queue or while one opens, is part of it); 0 = never.
   */
  readonly headersEndTick: number;
  readonly bodyTicks: number;
  /**
   * Tick of the pool's coarse clock at which the whole exchange times out; 0 = never. Moved on by
   * the time its connection was paused for the handler (Http1Connection.resume).
   */
  endTick: number;
  state = RequestState.Queued;
  /** Set while the request is on a connection. */
  conn: RequestCarrier | null = null;
  /** Already resent once after an idle-close race. */
  retried = false;
  /** Status of the final response, 0 before it. */
  statusCode = 0;
  /** Content-length of the answer, -1 when absent (chunked or close-delimited). */
  contentLength = -1;
  /** Every byte of the answer's head is ASCII (its header text is its UTF-8 too). */
  headAscii = false;
  /** Free for the caller (e.g. its own exchange), so a shared handler needs no closure. */
  context: unknown = null;
  private readonly owner: RequestOwner;

  constructor(owner: RequestOwner, opts: Http1RequestOptions, handler: Http1Handler, headersEndTick: number, bodyTicks: number, endTick = 0) {
    this.owner = owner;
    this.method = opts.method;
    this.path = opts.path;
    this.headers = opts.headers;
    this.body = opts.body;
    this.handler = handler;
    this.headersEndTick = headersEndTick;
    this.bodyTicks = bodyTicks;
    this.endTick = endTick;
  }

  get done(): boolean {
    return this.state === RequestState.Done;
  }

  pause(): void {
    this.conn?.pause();
  }

  resume(): void {
    this.conn?.resume();
  }

  /**
   * The answer is to end within `ms` (the handler has all it needs of it: a stream's last event
   * came): the whole-exchange timeout moves that near, if it was later. Only once sent.
   */
  endWithin(ms: number): void {
    this.conn?.endWithin(ms);
  }

  /** Ends the request now; the handler's onError gets `reason`. No-op once done. */
  abort(reason: Error = new Http1Error('HTTP1_ABORTED', 'request aborted')): void {
    if (this.state === RequestState.Done) return;
    if (this.conn !== null) {
      this.conn.abort(reason);
      return;
    }
    this.owner.dequeue(this);
    this.fail(reason);
  }

  /** Called by the pool/connection: the one error delivery. */
  fail(err: Error): void {
    if (this.state === RequestState.Done) return;
    this.state = RequestState.Done;
    this.conn = null;
    this.handler.onError(err, this);
  }

  complete(trailers: string[] | null): void {
    if (this.state === RequestState.Done) return;
    this.state = RequestState.Done;
    this.conn = null;
    this.handler.onComplete(trailers, this);
  }
}
