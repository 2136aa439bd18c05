/**
 * Reference: the barest proxy on our own stack — uWebSockets.js in front, one undici Pool
 * `dispatch` with a lean handler behind, no features (no parsing, routing, limits or log).
 * It is the floor the router is measured against.
 *
 *   node dist/bench/reference-uws-proxy.js --port P --upstream http://127.0.0.1:U --workers N
 *
 * N node:cluster workers each listen on the port (uWS sets SO_REUSEPORT; the kernel spreads
 * connections). Answers with a content-length are sent in one `end()`; others (SSE) stream with
 * backpressure. Prints "ready with N workers" once all listen.
 */
import cluster from 'node:cluster';
import type { IncomingHttpHeaders } from 'node:http';
import { STATUS_CODES } from 'node:http';
import { Pool, type Dispatcher } from 'undici';
import { loadUws } from 'inference-router/http/uws';
import type { HttpResponse } from 'uWebSockets.js';
import { parseReferenceArgs, startReferencePrimary } from './reference-args.js';

// The native build the router itself loads (never the package's silent JavaScript fallback).
const uWS = loadUws();

const HOP = new Set(['connection', 'keep-alive', 'transfer-encoding', 'content-length', 'date', 'uwebsockets', 'proxy-connection', 'upgrade', 'te', 'trailer']);

class Lean implements Dispatcher.DispatchHandler {
  aborted = false;
  private parts: Buffer[] | null = null;
  private status = 0;
  private headers: IncomingHttpHeaders = {};
  private controller: Dispatcher.DispatchController | null = null;

  constructor(private readonly res: HttpResponse) {}

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.controller = controller;
    if (this.aborted) controller.abort(new Error('client aborted'));
  }

  abort(): void {
    this.aborted = true;
    this.controller?.abort(new Error('client aborted'));
  }

  onResponseStart(_c: Dispatcher.DispatchController, status: number, headers: IncomingHttpHeaders): void {
    this.status = status;
    this.headers = headers;
    if (headers['content-length'] !== undefined) this.parts = [];
    else if (!this.aborted) this.res.cork(() => this.head());
  }

  private head(): void {
    this.res.writeStatus(`${this.status} ${STATUS_CODES[this.status] ?? 'Status'}`);
    for (const name in this.headers) {
      if (HOP.has(name)) continue;
      const v = this.headers[name];
      if (Array.isArray(v)) for (const one of v) this.res.writeHeader(name, one);
      else if (v !== undefined) this.res.writeHeader(name, v);
    }
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.parts !== null) {
      this.parts.push(chunk);
      return;
    }
    if (this.aborted) return;
    let ok = true;
    this.res.cork(() => { ok = this.res.write(chunk); });
    if (!ok) {
      controller.pause();
      this.res.onWritable(() => {
        controller.resume();
        return true;
      });
    }
  }

  onResponseEnd(): void {
    if (this.aborted) return;
    const parts = this.parts;
    this.res.cork(() => {
      if (parts !== null) {
        this.head();
        this.res.end(parts.length === 1 ? parts[0] : Buffer.concat(parts));
      } else {
        this.res.end();
      }
    });
  }

  onResponseError(_c: Dispatcher.DispatchController, err: Error): void {
    if (this.aborted) return;
    this.res.cork(() => {
      if (this.status === 0) this.res.writeStatus('502 Bad Gateway').end(`upstream error: ${err.message}`);
      else this.res.close();
    });
  }
}

function worker(port: number, upstream: string): void {
  const pool = new Pool(upstream, { connections: 64, pipelining: 1 });
  uWS.App().any('/*', (res, req) => {
    const method = req.getCaseSensitiveMethod();
    const query = req.getQuery();
    const path = query ? `${req.getUrl()}?${query}` : req.getUrl();
    const headers: Record<string, string> = {};
    req.forEach((k, v) => { if (!HOP.has(k) && k !== 'host') headers[k] = v; });
    const handler = new Lean(res);
    res.onAborted(() => handler.abort());
    const parts: Buffer[] = [];
    res.onData((ab, last) => {
      parts.push(Buffer.from(ab.slice(0)));
      if (!last) return;
      const body = parts.length === 1 ? parts[0] : Buffer.concat(parts);
      pool.dispatch({ origin: upstream, path, method: method as Dispatcher.HttpMethod, headers, body: body.length > 0 ? body : null }, handler);
    });
  }).listen('127.0.0.1', port, (socket) => {
    if (socket === false) {
      process.stderr.write(`reference uws proxy: cannot listen on ${port}\n`);
      process.exit(1);
    }
    process.send?.({ t: 'listening' });
  });
}

const args = parseReferenceArgs(process.argv.slice(2));
if (cluster.isPrimary) startReferencePrimary('reference uws proxy', args.workers);
else worker(args.port, args.upstream);
