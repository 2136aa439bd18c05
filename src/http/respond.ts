import { statusLine, type RouterError } from '../errors.js';
import type { Decision } from '../ratelimit/limiter.js';
import type { HttpResponse } from 'uWebSockets.js';
import type { Exchange } from './exchange.js';

const TEXT = 'text/plain; charset=utf-8';

/** Writes the x-ratelimit-* headers of a limited route. */
export function writeRateHeaders(res: HttpResponse, d: Decision): void {
  if (d.input !== null) {
    res.writeHeader('x-ratelimit-limit-input-tokens', String(d.input.limit));
    res.writeHeader('x-ratelimit-remaining-input-tokens', String(d.input.remaining));
    res.writeHeader('x-ratelimit-reset-input-tokens', String(d.input.resetSeconds));
  }
  if (d.output !== null) {
    res.writeHeader('x-ratelimit-limit-output-tokens', String(d.output.limit));
    res.writeHeader('x-ratelimit-remaining-output-tokens', String(d.output.remaining));
    res.writeHeader('x-ratelimit-reset-output-tokens', String(d.output.resetSeconds));
  }
}

/**
 * Answers a router-made error: plain-text body that is the message. Records the failure in the
 * log context. Safe to call after awaits (corks) and after the client left (only records).
 */
export function sendError(x: Exchange, err: RouterError): void {
  x.ctx.fail(err.type, err.message, err.status);
  if (!x.writable || x.headersSent) return;
  x.headersSent = true;
  x.ctx.finished = true;
  x.res.cork(() => {
    const res = x.res;
    res.writeStatus(statusLine(err.status));
    res.writeHeader('content-type', TEXT);
    res.writeHeader('x-request-id', x.ctx.requestId);
    if (err.headers !== null) for (const k in err.headers) res.writeHeader(k, err.headers[k]);
    if (x.decision !== null) writeRateHeaders(res, x.decision);
    res.end(err.message, x.closeConnection);
  });
}

/** A small router-made answer outside the inference path (health, models, 404). */
export function sendSimple(res: HttpResponse, status: number, contentType: string, body: string, close = false): void {
  res.writeStatus(statusLine(status));
  res.writeHeader('content-type', contentType);
  res.end(body, close);
}
