/**
 * One keep-alive connection to an upstream server: sends a request with one write, feeds the
 * answer through the parser to the request's handler, pauses the socket while the handler is
 * slow, and reports to its pool when it is free again or gone. A reused connection that closes
 * at once, before any byte of the answer arrived (the server closed it as idle just as the
 * request went out), hands the request back to the pool for one retry on a fresh connection.
 * A write that fails while a request is on the connection (the server answered early and reset
 * it) does not end the request at once: what the server sent before its reset is read first, and
 * a complete answer among it is delivered (upstream-socket.ts); the connection is not reused.
 */
import type { Socket } from 'node:net';
import { Http1Error } from './errors.js';
import { requestHead, writeRequest } from './request-head.js';
import { RequestState, type Http1Request } from './request.js';
import { ResponseParser, type ParserSink } from './response-parser.js';
import { UpstreamSocket } from './upstream-socket.js';
import { Buffer } from 'node:buffer';
import { performance } from 'node:perf_hooks';

export const enum Phase { Connecting, Idle, AwaitHead, Body, Closed }

/** What a connection needs from its pool. */
export interface ConnectionOwner {
  readonly host: string;
  readonly port: number;
  /** `host[:port]` for the host header. */
  readonly authority: string;
  /** Coarse clock: advanced by the pool's timer; deadlines are in ticks. */
  readonly tick: number;
  readonly connectTicks: number;
  readonly keepAliveTicks: number;
  /** Ticks of the coarse clock that cover `ms` (a deadline set with them passes no sooner). */
  ticksOf(ms: number): number;
  /** How soon after the send a reused connection's break is the idle-close race (ms): resent once. */
  readonly idleRaceMs: number;
  readonly maxHeaderSize: number;
  onConnected(conn: Http1Connection): void;
  onConnectFailed(conn: Http1Connection, reserved: Http1Request | null, err: Error): void;
  onFree(conn: Http1Connection): void;
  onGone(conn: Http1Connection): void;
  retry(req: Http1Request): void;
}

export class Http1Connection implements ParserSink {
  readonly socket: Socket;
  phase = Phase.Connecting;
  /** The request on the wire, if any. */
  req: Http1Request | null = null;
  /** The request this new connection was opened for (an idle-close retry). */
  reserved: Http1Request | null = null;
  /** Responses completed on this connection. */
  served = 0;
  /** Tick at which the current phase times out; 0 = none. */
  deadline = 0;
  /** performance.now() when the request on the wire was sent on this reused connection (0 on its first). */
  private sentAt = 0;
  private paused = false;
  /** Tick of the coarse clock at which the socket was paused (pause()). */
  private pausedTick = 0;
  private socketEnded = false;
  private responseEnded = false;
  private trailers: string[] | null = null;
  /** A write of the request failed (the server reset the connection): reading goes on to the end. */
  private writeError: Error | null = null;
  private readonly parser: ResponseParser;
  private readonly owner: ConnectionOwner;

  constructor(owner: ConnectionOwner) {
    this.owner = owner;
    this.parser = new ResponseParser(this, owner.maxHeaderSize);
    this.deadline = after(owner, owner.connectTicks);
    // Reads land in one shared buffer and are copied out at once (`onRead`): this skips the
    // Readable stream's per-read work ('data' events, read-more ticks).
    this.socket = new UpstreamSocket({ onread: { buffer: READ_BUFFER, callback: this.onRead } }, this.onWriteFailed);
    // Set before the connect, applied once connected (as connect()'s own options are).
    this.socket.setNoDelay(true);
    this.socket.setKeepAlive(true);
    this.socket.connect({ host: owner.host, port: owner.port });
    this.socket.on('connect', this.onConnect);
    this.socket.on('end', this.onSocketEnd);
    this.socket.on('error', this.onSocketError);
    this.socket.on('close', this.onSocketClose);
  }

  send(req: Http1Request): void {
    this.req = req;
    req.conn = this;
    req.state = RequestState.Sent;
    this.parser.reset(req.method === 'HEAD');
    this.phase = Phase.AwaitHead;
    // Only a reused connection can meet the idle-close race (lost()); its first request needs no clock.
    if (this.served > 0) this.sentAt = performance.now();
    // The headers timeout runs from dispatch: the wait for this connection is part of it.
    this.deadline = bounded(req.headersEndTick, req.endTick);
    writeRequest(this.socket, requestHead(req.method, req.path, this.owner.authority, req.headers, req.body), req.body);
  }

  /**
   * The handler takes no more for now (the router's client reads slower than the pod sends): the
   * socket is not read, and no timeout runs until resume(). The timeouts measure the server, and
   * a server whose answer is not read is not silent: what it sends meanwhile waits in the socket.
   * The wait is the client's, bounded by its own connection (the HTTP server's idle timeout).
   */
  pause(): void {
    if (this.paused || this.phase !== Phase.Body) return;
    this.paused = true;
    this.pausedTick = this.owner.tick;
    this.deadline = 0;
    this.socket.pause();
  }

  /**
   * Reading again: the wait between body bytes counts from now, and the whole-exchange timeout is
   * moved on by the time paused (the exchange's time with the server is what it bounds).
   */
  resume(): void {
    if (!this.paused) return;
    this.paused = false;
    const req = this.req;
    if (req !== null) {
      if (req.endTick !== 0) req.endTick += this.owner.tick - this.pausedTick;
      this.deadline = bounded(after(this.owner, req.bodyTicks), req.endTick);
    }
    this.socket.resume();
  }

  /**
   * The request's answer is to end within `ms` from now (its handler read all it needs): its
   * whole-exchange deadline moves that near, if it was later. A server that holds the answer
   * open past it gets the total timeout then.
   */
  endWithin(ms: number): void {
    const req = this.req;
    if (req === null) return;
    const end = after(this.owner, this.owner.ticksOf(ms));
    if (req.endTick !== 0 && req.endTick <= end) return;
    req.endTick = end;
    if (!this.paused) this.deadline = bounded(this.deadline, end);
  }

  /** Ends the request on this connection (and the connection). */
  abort(reason: Error): void {
    const req = this.req;
    if (req === null) return;
    this.req = null;
    this.parser.stop();
    this.close();
    req.fail(reason);
  }

  close(): void {
    if (this.phase === Phase.Closed) return;
    this.phase = Phase.Closed;
    this.deadline = 0;
    this.socket.destroy();
    this.owner.onGone(this);
  }

  /** The pool's timer found this connection's deadline passed. */
  onDeadline(): void {
    switch (this.phase) {
      case Phase.Connecting:
        this.connectFailed(new Http1Error('HTTP1_CONNECT_TIMEOUT', `connect to ${this.owner.authority} timed out`));
        return;
      case Phase.Idle:
        this.close();
        return;
      case Phase.AwaitHead:
        if (this.totalTimedOut()) return;
        if (this.writeError !== null) {
          this.lost(this.writeError); // nothing of an answer came after the failed write
          return;
        }
        this.abort(new Http1Error('HTTP1_HEADERS_TIMEOUT', 'upstream sent no response head within the headers timeout'));
        return;
      case Phase.Body:
        if (this.totalTimedOut()) return;
        this.abort(new Http1Error('HTTP1_BODY_TIMEOUT', 'upstream sent no body data within the body timeout'));
    }
  }

  /** Aborts the request when its whole-exchange timeout has passed; true if it did. */
  private totalTimedOut(): boolean {
    const req = this.req;
    if (req === null || req.endTick === 0 || this.owner.tick < req.endTick) return false;
    this.abort(new Http1Error('HTTP1_TOTAL_TIMEOUT', 'upstream did not complete the answer within the timeout'));
    return true;
  }

  // ParserSink: called from parser.execute()/finish() while this.req is set.
  onHead(status: number, headers: string[]): void {
    const req = this.req!;
    req.statusCode = status;
    req.contentLength = this.parser.contentLength;
    req.headAscii = this.parser.headAscii;
    this.phase = Phase.Body;
    this.deadline = bounded(after(this.owner, req.bodyTicks), req.endTick);
    if (!req.handler.onHeaders(status, headers, req)) this.pause();
  }

  onBody(chunk: Buffer): void {
    const req = this.req!;
    if (!this.paused && req.bodyTicks > 0) this.deadline = bounded(this.owner.tick + req.bodyTicks, req.endTick);
    if (!req.handler.onData(chunk, req)) this.pause();
  }

  onEnd(trailers: string[] | null): void {
    this.responseEnded = true;
    this.trailers = trailers;
  }

  private finishResponse(extraBytes: boolean): void {
    const req = this.req!;
    const trailers = this.trailers;
    this.req = null;
    this.trailers = null;
    this.responseEnded = false;
    this.served++;
    if (this.paused) {
      this.paused = false;
      this.socket.resume();
    }
    const reusable = this.parser.keepAlive && !extraBytes && !this.socketEnded && this.phase !== Phase.Closed;
    if (reusable) {
      this.phase = Phase.Idle;
      this.owner.onFree(this); // the next request, or the keep-alive deadline
    } else {
      this.close();
    }
    req.complete(trailers);
  }

  /** The connection broke while `req` was on it. */
  private lost(why: Error): void {
    // After a failed write the reset is what broke it, not the end of the stream read after it.
    const err = this.writeError ?? why;
    const req = this.req;
    this.req = null;
    this.parser.stop();
    this.close();
    if (req === null) return;
    // Resent only when the connection broke at once (within the pool's idleRaceMs of the send): the server
    // closed it as idle just as the request went out. One that broke later had the request for a
    // while and may have worked on it (a pod that crashed on it): that is the request's error, as
    // a second delivery of an inference request would run it twice.
    if (!this.parser.sawBytes && this.served > 0 && !req.retried && performance.now() - this.sentAt <= this.owner.idleRaceMs) {
      req.retried = true;
      req.conn = null;
      req.state = RequestState.Queued;
      this.owner.retry(req);
      return;
    }
    req.fail(err);
  }

  private connectFailed(err: Error): void {
    if (this.phase === Phase.Closed) return;
    this.phase = Phase.Closed;
    this.deadline = 0;
    this.socket.destroy();
    const reserved = this.reserved;
    this.reserved = null;
    this.owner.onConnectFailed(this, reserved, err);
  }

  /**
   * A write of the request failed (the socket asks before it is destroyed): while the request
   * waits for its answer, reading goes on, since a server that answered before it reset the
   * connection had its answer arrive first. It ends with the socket's end (onSocketEnd); a
   * safeguard deadline two ticks on fails the request if no answer's head came by then.
   */
  private readonly onWriteFailed = (err: Error): boolean => {
    if (this.req === null || (this.phase !== Phase.AwaitHead && this.phase !== Phase.Body) || this.writeError !== null) return false;
    this.writeError = err;
    this.socketEnded = true; // not reused, whatever comes
    if (this.phase === Phase.AwaitHead) this.deadline = bounded(this.owner.tick + 2, this.deadline);
    return true;
  };

  private readonly onConnect = (): void => {
    if (this.phase !== Phase.Connecting) return;
    this.phase = Phase.Idle;
    this.deadline = 0;
    this.owner.onConnected(this);
  };

  /**
   * Bytes read into READ_BUFFER, which the next read of any connection overwrites: the parser and
   * the request's handler keep chunks by reference (a held head, a JSON answer kept for its
   * usage), so they get a copy. Flow control is `pause()`/`resume()` (socket.pause stops reading).
   */
  private readonly onRead = (n: number, buf: Uint8Array): boolean => {
    this.onSocketData(Buffer.from(buf.subarray(0, n)));
    return true;
  };

  private readonly onSocketData = (data: Buffer): void => {
    const req = this.req;
    if (req === null) {
      this.close(); // bytes nobody asked for: the connection cannot be trusted
      return;
    }
    let used: number;
    try {
      used = this.parser.execute(data);
    } catch (err) {
      if (this.req === req) this.abort(err as Error);
      return;
    }
    if (this.req === req && this.responseEnded) this.finishResponse(used < data.length);
  };

  private readonly onSocketEnd = (): void => {
    this.socketEnded = true;
    const req = this.req;
    if (req === null) {
      this.close();
      return;
    }
    try {
      this.parser.finish();
    } catch (err) {
      this.lost(err as Error);
      return;
    }
    if (this.req === req && this.responseEnded) this.finishResponse(false);
  };

  private readonly onSocketError = (err: Error): void => {
    if (this.phase === Phase.Connecting) this.connectFailed(err);
    else if (this.req !== null) this.lost(err);
    else this.close();
  };

  private readonly onSocketClose = (): void => {
    if (this.phase === Phase.Connecting) {
      this.connectFailed(new Http1Error('HTTP1_PREMATURE_CLOSE', `connection to ${this.owner.authority} closed while connecting`));
    } else if (this.req !== null) {
      this.lost(new Http1Error('HTTP1_PREMATURE_CLOSE', this.parser.sawBytes
        ? 'upstream closed the connection before the response ended'
        : 'upstream closed the connection without answering'));
    } else {
      this.close();
    }
  };
}

/** Where every upstream connection of this process reads (the size of Node's own read buffer). */
const READ_BUFFER = Buffer.allocUnsafeSlow(64 * 1024);

/** The tick `ticks` from now on `owner`'s clock (0 = none). */
export function after(owner: Pick<ConnectionOwner, 'tick'>, ticks: number): number {
  return ticks > 0 ? owner.tick + ticks : 0;
}

/** The earlier of a phase's deadline and the request's end tick (0 = none for either). */
function bounded(deadline: number, endTick: number): number {
  return endTick === 0 ? deadline : deadline === 0 || endTick < deadline ? endTick : deadline;
}
