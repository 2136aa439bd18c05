import { randomUUID } from 'node:crypto';
import type { HttpRequest, HttpResponse } from 'uWebSockets.js';
import { RouterError } from '../errors.js';
import { Exchange } from './exchange.js';
import { RequestContext } from './request-context.js';
import { connectionNames, dropNamed, forwardRequestHeader } from './upstream-headers.js';
import { drainState } from './drain-state.js';

/** What the front needs from the worker. */
export interface FrontHooks {
  readonly maxBodyBytes: number;
  /** Lower-case header names route rules match on (from the current table). */
  matchHeaderNames(): readonly string[];
  /** Drop the client's Authorization header upstream (auth enabled). */
  readonly stripAuthorization: boolean;
  draining(): boolean;
  /** The body has arrived (or the request already failed): run the rest of the path. */
  run(x: Exchange): void;
  /** A request that failed in the front (bad method, too large): finish it without the pipeline. */
  finish(x: Exchange): void;
}

const REQUEST_ID_MAX = 200;
const PRINTABLE = /^[\x21-\x7e]+$/;

/**
 * uWS handler for /v1/*: copies everything it needs out of HttpRequest synchronously,
 * registers onAborted, then reads the body and hands the exchange to the pipeline.
 */
export function inferenceHandler(h: FrontHooks): (res: HttpResponse, req: HttpRequest) => void {
  return (res, req) => {
    if (drainState.closing) {
      res.close();
      return;
    }
    const t0 = performance.now();
    const url = req.getUrl();
    const query = req.getQuery();
    const method = req.getCaseSensitiveMethod();
    const forward: string[] = [];
    let requestId = '';
    let contentLength = -1;
    let authorization = '';
    let connection = '';
    req.forEach((name, value) => {
      if (name === 'x-request-id') requestId = value;
      else if (name === 'connection') connection = connection.length === 0 ? value : `${connection},${value}`;
      else if (name === 'content-length') contentLength = Number(value);
      else if (name === 'authorization') {
        authorization = value;
        if (!h.stripAuthorization) forward.push(name, value);
      } else if (forwardRequestHeader(name)) forward.push(name, value);
    });
    // Headers the client's Connection header names are hop-by-hop: not forwarded.
    if (connection.length > 0) dropNamed(forward, connectionNames(connection));
    const names = h.matchHeaderNames();
    let match: Map<string, string> | null = null;
    if (names.length > 0) {
      match = new Map();
      for (const n of names) match.set(n, req.getHeader(n));
    }
    if (requestId.length === 0 || requestId.length > REQUEST_ID_MAX || !PRINTABLE.test(requestId)) requestId = randomUUID();
    const ctx = new RequestContext(method.toUpperCase(), query ? `${url}?${query}` : url, 'HTTP/1.1', requestId, Date.now(), t0);
    const x = new Exchange(res, ctx, url, forward, match, authorization);

    res.onAborted(() => x.clientGone());

    if (ctx.method !== 'POST') {
      x.sendError(new RouterError('invalid_request', `method ${ctx.method} is not allowed on ${url}; use POST`, 405, { allow: 'POST' }));
      h.finish(x);
      return;
    }
    if (contentLength > h.maxBodyBytes) {
      x.forceClose = true;
      x.sendError(tooLarge(h.maxBodyBytes));
      h.finish(x);
      return;
    }
    readBody(x, contentLength, h);
  };
}

function tooLarge(max: number): RouterError {
  return new RouterError('invalid_request', `request body is larger than ${max} bytes`, 413);
}

function readBody(x: Exchange, contentLength: number, h: FrontHooks): void {
  let buf: Buffer | null = contentLength > 0 ? Buffer.allocUnsafe(contentLength) : null;
  let chunks: Buffer[] | null = contentLength > 0 ? null : [];
  let size = 0;
  let done = false;
  x.res.onData((ab, isLast) => {
    if (done) return;
    const chunk = Buffer.from(ab);
    if (size + chunk.length > h.maxBodyBytes || (buf !== null && size + chunk.length > buf.length)) {
      done = true;
      x.forceClose = true;
      x.sendError(size + chunk.length > h.maxBodyBytes ? tooLarge(h.maxBodyBytes) : new RouterError('invalid_request', 'request body is longer than its content-length'));
      h.finish(x);
      return;
    }
    if (buf !== null) chunk.copy(buf, size);
    else chunks!.push(Buffer.from(chunk)); // copy: uWS reuses the ArrayBuffer after the callback
    size += chunk.length;
    if (!isLast) return;
    done = true;
    x.body = buf !== null ? buf.subarray(0, size) : chunks!.length === 1 ? chunks![0] : Buffer.concat(chunks!);
    buf = null;
    chunks = null;
    h.run(x);
  });
}
