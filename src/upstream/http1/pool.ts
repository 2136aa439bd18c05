/**
 * Keep-alive connections to one upstream endpoint (host:port): at most `connections` open,
 * requests beyond that wait in a bounded FIFO queue. Idle connections are reused newest first
 * and closed after `keepAliveTimeoutMs`. A coarse clock drives every timeout (connect, headers,
 * idle body, keep-alive), so a request arms no timer of its own; one timer per resolution ticks
 * every pool of the process that has connections (interval-ticker.ts).
 */
import { startTicking, stopTicking } from '../../interval-ticker.js';
import { after, Http1Connection, Phase, type ConnectionOwner } from './connection.js';
import { Http1Error } from './errors.js';
import { Http1Request, type Http1Handler, type Http1RequestOptions, type RequestOwner } from './request.js';

export interface Http1PoolOptions {
  /** Most connections open at once (default 64). */
  readonly connections?: number;
  /** Most requests waiting for a connection (default 1024); more fail with HTTP1_QUEUE_FULL. */
  readonly maxQueue?: number;
  /** Default 10 s. */
  readonly connectTimeoutMs?: number;
  /**
   * From the request's dispatch to the end of the response head, the wait for a connection
   * included; 0 = none (default 300 s).
   */
  readonly headersTimeoutMs?: number;
  /** Longest pause between body bytes; 0 = none (default 300 s). */
  readonly bodyTimeoutMs?: number;
  /** Idle connections are closed after this (default 4 s: below common server keep-alive timeouts). */
  readonly keepAliveTimeoutMs?: number;
  /** Largest response head or trailer section (default 16 KiB). */
  readonly maxHeaderSize?: number;
  /** Timer granularity; default a tenth of the shortest timeout, between 10 ms and 1 s. */
  readonly timerResolutionMs?: number;
  /**
   * How soon after its send a request on a reused connection that breaks before any byte of an
   * answer is taken for the idle-close race and resent once on a new connection (ms, default
   * IDLE_RACE_MS, the router's ROUTER_UPSTREAM_IDLE_RACE): the server's close crossing the request comes back within a round trip and the
   * time the event loop takes to see it. A later break fails the request: the server had it and
   * may have worked on it (a pod that crashed on it), and an inference request is not run twice.
   */
  readonly idleRaceMs?: number;
}

/** The idle-close race's window (Http1PoolOptions.idleRaceMs). */
export const IDLE_RACE_MS = 20;

export interface Http1PoolStats {
  readonly connections: number;
  readonly connecting: number;
  readonly idle: number;
  readonly queued: number;
}

export class Http1Pool implements ConnectionOwner, RequestOwner {
  readonly host: string;
  readonly port: number;
  readonly authority: string;
  tick = 0;
  readonly connectTicks: number;
  readonly keepAliveTicks: number;
  readonly idleRaceMs: number;
  readonly maxHeaderSize: number;
  private readonly cap: number;
  private readonly maxQueue: number;
  private readonly headersTicks: number;
  private readonly bodyTicks: number;
  private readonly resolutionMs: number;
  private readonly conns = new Set<Http1Connection>();
  private readonly idle: Http1Connection[] = [];
  private readonly queue: Http1Request[] = [];
  private connecting = 0;
  private closed = false;
  /** The `why` of the first close(), for the HTTP1_POOL_CLOSED errors of requests dispatched after it. */
  private closedBecause = '';

  constructor(host: string, port: number, options: Http1PoolOptions = {}) {
    this.host = host;
    this.port = port;
    this.authority = port === 80 ? host : `${host.includes(':') ? `[${host}]` : host}:${port}`;
    this.cap = positive('connections', options.connections ?? 64);
    this.maxQueue = nonNegative('maxQueue', options.maxQueue ?? 1024);
    const connectMs = nonNegative('connectTimeoutMs', options.connectTimeoutMs ?? 10_000);
    const headersMs = nonNegative('headersTimeoutMs', options.headersTimeoutMs ?? 300_000);
    const bodyMs = nonNegative('bodyTimeoutMs', options.bodyTimeoutMs ?? 300_000);
    const keepAliveMs = nonNegative('keepAliveTimeoutMs', options.keepAliveTimeoutMs ?? 4_000);
    this.maxHeaderSize = positive('maxHeaderSize', options.maxHeaderSize ?? 16 * 1024);
    this.idleRaceMs = nonNegative('idleRaceMs', options.idleRaceMs ?? IDLE_RACE_MS);
    const shortest = Math.min(...[connectMs, headersMs, bodyMs, keepAliveMs].filter((ms) => ms > 0), 10_000);
    this.resolutionMs = positive('timerResolutionMs', options.timerResolutionMs ?? Math.min(1000, Math.max(10, Math.floor(shortest / 10))));
    this.connectTicks = this.ticks(connectMs);
    this.headersTicks = this.ticks(headersMs);
    this.bodyTicks = this.ticks(bodyMs);
    this.keepAliveTicks = this.ticks(keepAliveMs);
  }

  /** Sends a request; the handler gets the answer. Never throws for network reasons. */
  dispatch(opts: Http1RequestOptions, handler: Http1Handler): Http1Request {
    const headersTicks = opts.headersTimeoutMs === undefined ? this.headersTicks : this.ticks(opts.headersTimeoutMs);
    const req = new Http1Request(this, opts, handler,
      headersTicks > 0 ? this.tick + headersTicks : 0,
      opts.bodyTimeoutMs === undefined ? this.bodyTicks : this.ticks(opts.bodyTimeoutMs),
      opts.totalTimeoutMs ? this.tick + this.ticks(opts.totalTimeoutMs) : 0);
    if (this.closed) {
      process.nextTick(failLater, req, this.closedError());
      return req;
    }
    const conn = this.idle.pop();
    if (conn !== undefined) {
      conn.send(req);
      return req;
    }
    // Requests that a connection being opened will take do not count against maxQueue.
    if (this.queue.length - this.connecting >= this.maxQueue) {
      process.nextTick(failLater, req, new Http1Error('HTTP1_QUEUE_FULL', `${this.maxQueue} requests already wait for a connection to ${this.authority}`));
      return req;
    }
    this.queue.push(req);
    if (this.conns.size < this.cap && this.connecting < this.queue.length) this.open(null);
    return req;
  }

  get stats(): Http1PoolStats {
    return { connections: this.conns.size, connecting: this.connecting, idle: this.idle.length, queued: this.queue.length };
  }

  /**
   * Fails waiting requests, aborts those in flight and closes every connection; `why` ends their
   * error's message, and that of requests dispatched later (HTTP1_POOL_CLOSED). A request in
   * flight may have reached the server: it fails HTTP1_ABORTED, not as a connect failure (which a
   * caller may retry elsewhere), its `closedBecause` this close's `why`.
   */
  close(why?: string): void {
    const because = why === undefined ? '' : `: ${why}`;
    if (!this.closed) this.closedBecause = why ?? '';
    this.closed = true;
    const err = this.closedError();
    const cut = new Http1Error('HTTP1_ABORTED', `the pool for ${this.authority} closed${because}`, why ?? '');
    for (const req of this.queue.splice(0)) req.fail(err);
    for (const conn of [...this.conns]) {
      if (conn.req !== null) conn.abort(cut);
      else conn.close();
      if (conn.reserved !== null) conn.reserved.fail(err);
    }
    stopTicking(this, this.resolutionMs);
  }

  // RequestOwner
  dequeue(req: Http1Request): void {
    const i = this.queue.indexOf(req);
    if (i !== -1) this.queue.splice(i, 1);
  }

  // ConnectionOwner
  onConnected(conn: Http1Connection): void {
    this.connecting--;
    const r = conn.reserved;
    conn.reserved = null;
    if (r !== null && !r.done) conn.send(r);
    else this.onFree(conn);
  }

  onConnectFailed(conn: Http1Connection, reserved: Http1Request | null, err: Error): void {
    this.connecting--;
    this.forget(conn);
    if (reserved !== null) reserved.fail(err);
    // Nothing else is open or opening: the endpoint is unreachable for every waiting request.
    if (this.conns.size === 0) for (const req of this.queue.splice(0)) req.fail(err);
  }

  onFree(conn: Http1Connection): void {
    const next = this.queue.shift();
    if (next !== undefined) conn.send(next);
    else {
      // Idle from now, closed after the keep-alive time unless a request takes it: a connection
      // whose answer ended, and as well a new one whose request went away while it was opened.
      conn.deadline = after(this, this.keepAliveTicks);
      this.idle.push(conn);
    }
  }

  onGone(conn: Http1Connection): void {
    this.forget(conn);
    if (!this.closed && this.queue.length > this.connecting && this.conns.size < this.cap) this.open(null);
  }

  retry(req: Http1Request): void {
    if (this.closed) req.fail(this.closedError());
    else {
      // A fresh connection: an idle one may have been closed by the server just the same.
      if (this.conns.size >= this.cap) this.idle.pop()?.close();
      if (this.conns.size < this.cap) this.open(req);
      else this.queue.unshift(req);
    }
  }

  private open(reserved: Http1Request | null): void {
    const conn = new Http1Connection(this);
    conn.reserved = reserved;
    this.conns.add(conn);
    this.connecting++;
    // Advanced by the shared ticker while it has connections (joining again is a no-op).
    startTicking(this, this.resolutionMs);
  }

  private forget(conn: Http1Connection): void {
    if (!this.conns.delete(conn)) return;
    const i = this.idle.indexOf(conn);
    if (i !== -1) this.idle.splice(i, 1);
    if (this.conns.size === 0) stopTicking(this, this.resolutionMs);
  }

  private closedError(): Http1Error {
    const why = this.closedBecause;
    return new Http1Error('HTTP1_POOL_CLOSED', `pool for ${this.authority} is closed${why === '' ? '' : `: ${why}`}`, why);
  }

  private ticks(ms: number): number {
    return ms > 0 ? this.ticksOf(ms) : 0;
  }

  /** ConnectionOwner: the ticks that cover `ms` (at least one). */
  ticksOf(ms: number): number {
    return Math.ceil(ms / this.resolutionMs) + 1;
  }

  /** Advances the coarse clock and times out what is due. */
  advance(): void {
    const t = ++this.tick;
    for (const conn of this.conns) {
      const r = conn.reserved;
      if (r !== null) {
        const err = expiredAt(r, t);
        if (err !== null) {
          conn.reserved = null;
          r.fail(err);
        }
      }
      if (conn.deadline !== 0 && conn.deadline <= t && conn.phase !== Phase.Closed) conn.onDeadline();
    }
    if (this.queue.length > 0) this.expireQueued(t);
  }

  /** Fails the waiting requests whose whole-exchange or headers timeout passed. */
  private expireQueued(t: number): void {
    let kept = 0;
    const q = this.queue;
    const expired: Http1Request[] = [];
    const errors: Http1Error[] = [];
    for (let i = 0; i < q.length; i++) {
      const r = q[i];
      const err = expiredAt(r, t);
      if (err === null) q[kept++] = r;
      else {
        expired.push(r);
        errors.push(err);
      }
    }
    q.length = kept;
    for (let i = 0; i < expired.length; i++) expired[i].fail(errors[i]);
  }
}

/** The timeout error of a request not yet sent whose whole-exchange or headers timeout passed by tick `t`, else null. */
function expiredAt(r: Http1Request, t: number): Http1Error | null {
  if (r.endTick !== 0 && r.endTick <= t) return totalTimeout();
  if (r.headersEndTick !== 0 && r.headersEndTick <= t) {
    return new Http1Error('HTTP1_HEADERS_TIMEOUT', 'upstream sent no response head within the headers timeout (waiting for a connection to it)');
  }
  return null;
}

function totalTimeout(): Http1Error {
  return new Http1Error('HTTP1_TOTAL_TIMEOUT', 'upstream did not complete the answer within the timeout');
}

function failLater(req: Http1Request, err: Error): void {
  req.fail(err);
}

function positive(name: string, v: number): number {
  if (!Number.isFinite(v) || v <= 0) throw new RangeError(`http1 pool: ${name} must be a positive number, got ${v}`);
  return v;
}

function nonNegative(name: string, v: number): number {
  if (!Number.isFinite(v) || v < 0) throw new RangeError(`http1 pool: ${name} must be 0 or more, got ${v}`);
  return v;
}
