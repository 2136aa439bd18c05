/**
 * The three upstream clients compared by bench/upstream-clients.ts, each behind the same bare
 * uWS front (bench/upstream-proxy.ts) with the same answer handling: an answer with a
 * content-length is sent in one corked `end()`, others stream with backpressure.
 *   pool   undici `Pool.dispatch` with a DispatchHandler (parsed header object), as the router today
 *   client one undici `Client` per connection, legacy handler with raw header Buffers
 *   http1  src/upstream/http1 (the purpose-built keep-alive client), raw header strings
 */
import type { IncomingHttpHeaders } from 'node:http';
import { Client, Pool, type Dispatcher } from 'undici';
import type { HttpResponse } from 'uWebSockets.js';
import { Http1Pool } from 'inference-router/upstream/http1/pool';
import { DEFAULT_UPSTREAM_CONNECTIONS } from 'inference-router/config/settings';
import type { Http1Handler, Http1Request } from 'inference-router/upstream/http1/request';

export type CandidateKind = 'pool' | 'client' | 'http1';
export const CANDIDATES: readonly CandidateKind[] = ['pool', 'client', 'http1'];

const HOP = new Set(['connection', 'keep-alive', 'transfer-encoding', 'content-length', 'date', 'uwebsockets', 'proxy-connection', 'upgrade', 'te', 'trailer']);
const STATUS: Record<number, string> = { 200: '200 OK', 400: '400 Bad Request', 404: '404 Not Found', 429: '429 Too Many Requests', 500: '500 Internal Server Error' };
const statusLine = (s: number): string => STATUS[s] ?? `${s} Status`;

/** Sends one request upstream and the answer to `res`. `headers`: flat [name, value, …]. */
export interface Candidate {
  send(res: HttpResponse, path: string, headers: string[], body: Buffer): { abort(): void };
}

/** Shared answer handling: buffered one-shot or streamed with backpressure. */
abstract class Answer {
  aborted = false;
  status = 0;
  parts: Buffer[] | null = null;
  chunk: Buffer | null = null;
  ok = true;
  constructor(readonly res: HttpResponse) {}
  abstract writeHeaders(): void;
  abstract resumeUpstream(): void;

  start(status: number, hasLength: boolean): void {
    this.status = status;
    if (hasLength) this.parts = [];
    else if (!this.aborted) this.res.cork(this.corkedHead);
  }
  data(chunk: Buffer): boolean {
    if (this.parts !== null) {
      this.parts.push(chunk);
      return true;
    }
    if (this.aborted) return true;
    this.chunk = chunk;
    this.res.cork(this.corkedWrite);
    this.chunk = null;
    if (!this.ok) this.res.onWritable(this.writable);
    return this.ok;
  }
  end(): void {
    if (!this.aborted) this.res.cork(this.corkedEnd);
  }
  error(err: Error): void {
    if (this.aborted) return;
    this.aborted = true;
    const res = this.res;
    const started = this.status !== 0 && this.parts === null;
    res.cork(() => {
      if (started) res.close();
      else res.writeStatus('502 Bad Gateway').end(`upstream error: ${err.message}`);
    });
  }
  private readonly corkedHead = (): void => {
    this.res.writeStatus(statusLine(this.status));
    this.writeHeaders();
  };
  private readonly corkedWrite = (): void => {
    this.ok = this.res.write(this.chunk!);
  };
  private readonly corkedEnd = (): void => {
    const parts = this.parts;
    if (parts !== null) {
      this.corkedHead();
      this.res.end(parts.length === 1 ? parts[0] : Buffer.concat(parts));
    } else this.res.end();
  };
  private readonly writable = (): boolean => {
    this.ok = true;
    this.resumeUpstream();
    return true;
  };
}

// (a) undici Pool.dispatch with a DispatchHandler, as the router does today.
class PoolAnswer extends Answer implements Dispatcher.DispatchHandler {
  controller: Dispatcher.DispatchController | null = null;
  headers: IncomingHttpHeaders = {};
  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.controller = controller;
    if (this.aborted) controller.abort(new Error('client aborted'));
  }
  onResponseStart(_c: Dispatcher.DispatchController, status: number, headers: IncomingHttpHeaders): void {
    this.headers = headers;
    this.start(status, headers['content-length'] !== undefined);
  }
  onResponseData(c: Dispatcher.DispatchController, chunk: Buffer): void {
    if (!this.data(chunk)) c.pause();
  }
  onResponseEnd(): void { this.end(); }
  onResponseError(_c: Dispatcher.DispatchController, err: Error): void { this.error(err); }
  writeHeaders(): void {
    for (const name in this.headers) {
      if (HOP.has(name)) continue;
      const v = this.headers[name];
      if (Array.isArray(v)) for (const one of v) this.res.writeHeader(name, one);
      else if (v !== undefined) this.res.writeHeader(name, v);
    }
  }
  resumeUpstream(): void { this.controller?.resume(); }
  abort(): void {
    this.aborted = true;
    this.controller?.abort(new Error('client aborted'));
  }
}

class PoolCandidate implements Candidate {
  private readonly pool: Pool;
  constructor(private readonly upstream: string) {
    this.pool = new Pool(upstream, { connections: 64, pipelining: 1 });
  }
  send(res: HttpResponse, path: string, headers: string[], body: Buffer): { abort(): void } {
    const h = new PoolAnswer(res);
    this.pool.dispatch({ origin: this.upstream, path, method: 'POST', headers, body }, h);
    return h;
  }
}

// (b) one undici Client per connection, legacy handler with raw header Buffers.
class ClientAnswer extends Answer implements Dispatcher.DispatchHandler {
  abortFn: ((err?: Error) => void) | null = null;
  resumeFn: (() => void) | null = null;
  raw: Buffer[] = [];
  constructor(res: HttpResponse, readonly owner: ClientCandidate, public client: Client | null) { super(res); }
  onConnect(abort: (err?: Error) => void): void {
    this.abortFn = abort;
    if (this.aborted) abort(new Error('client aborted'));
  }
  onHeaders(status: number, raw: Buffer[], resume: () => void): boolean {
    this.raw = raw;
    this.resumeFn = resume;
    let hasLength = false;
    for (let i = 0; i < raw.length; i += 2) if (raw[i].length === 14 && raw[i].toString('latin1').toLowerCase() === 'content-length') hasLength = true;
    this.start(status, hasLength);
    return true;
  }
  onData(chunk: Buffer): boolean { return this.data(chunk); }
  onComplete(): void {
    this.owner.release(this.client!);
    this.end();
  }
  onError(err: Error): void {
    this.owner.release(this.client!);
    this.error(err);
  }
  writeHeaders(): void {
    const raw = this.raw;
    for (let i = 0; i < raw.length; i += 2) {
      const name = raw[i].toString('latin1');
      if (HOP.has(name.toLowerCase())) continue;
      this.res.writeHeader(name, raw[i + 1].toString('latin1'));
    }
  }
  resumeUpstream(): void { this.resumeFn?.(); }
  abort(): void {
    this.aborted = true;
    this.abortFn?.(new Error('client aborted'));
  }
}

class ClientCandidate implements Candidate {
  private readonly free: Client[] = [];
  private readonly waiting: { h: ClientAnswer; opts: Dispatcher.DispatchOptions }[] = [];
  constructor(upstream: string) {
    for (let i = 0; i < 64; i++) this.free.push(new Client(upstream, { pipelining: 1 }));
  }
  send(res: HttpResponse, path: string, headers: string[], body: Buffer): { abort(): void } {
    const client = this.free.pop();
    const opts: Dispatcher.DispatchOptions = { path, method: 'POST', headers, body };
    if (client === undefined) {
      const h = new ClientAnswer(res, this, null);
      this.waiting.push({ h, opts });
      return h;
    }
    const h = new ClientAnswer(res, this, client);
    client.dispatch(opts, h);
    return h;
  }
  release(client: Client): void {
    const next = this.waiting.shift();
    if (next === undefined) {
      this.free.push(client);
      return;
    }
    next.h.client = client;
    client.dispatch(next.opts, next.h);
  }
}

// (c) the purpose-built client.
class Http1Answer extends Answer implements Http1Handler {
  req: Http1Request | null = null;
  headers: string[] = [];
  onHeaders(status: number, headers: string[], req: Http1Request): boolean {
    this.req = req;
    this.headers = headers;
    this.start(status, req.contentLength >= 0);
    return true;
  }
  onData(chunk: Buffer): boolean { return this.data(chunk); }
  onComplete(): void { this.end(); }
  onError(err: Error): void { this.error(err); }
  writeHeaders(): void {
    const h = this.headers;
    for (let i = 0; i < h.length; i += 2) {
      if (HOP.has(h[i].toLowerCase())) continue;
      this.res.writeHeader(h[i], h[i + 1]);
    }
  }
  resumeUpstream(): void { this.req?.resume(); }
  abort(): void {
    this.aborted = true;
    this.req?.abort();
  }
}

class Http1Candidate implements Candidate {
  private readonly pool: Http1Pool;
  constructor(upstream: string) {
    const u = new URL(upstream);
    // The router's own cap per pod and worker: many long streams at once do not wait for one another.
    this.pool = new Http1Pool(u.hostname, Number(u.port), { connections: DEFAULT_UPSTREAM_CONNECTIONS });
  }
  send(res: HttpResponse, path: string, headers: string[], body: Buffer): { abort(): void } {
    const h = new Http1Answer(res);
    h.req = this.pool.dispatch({ method: 'POST', path, headers, body }, h);
    return h;
  }
}

export function makeCandidate(kind: CandidateKind, upstream: string): Candidate {
  if (kind === 'pool') return new PoolCandidate(upstream);
  if (kind === 'client') return new ClientCandidate(upstream);
  return new Http1Candidate(upstream);
}
