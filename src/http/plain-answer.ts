import type { HttpResponse, RecognizedString } from 'uWebSockets.js';
import { Buffer } from 'node:buffer';
import { statusLineBytes, type RouterError } from '../errors.js';
import { errorBody, JSON_TYPE, TEXT_TYPE } from './error-body.js';

/**
 * A small router-made answer outside the inference path (health, readiness, models, 404,
 * /metrics). Call it inside a uWS handler, or inside res.cork() after an await. It says
 * `x-content-type-options: nosniff`: a 404 echoes the path asked for, which a browser must not
 * read as HTML.
 */
export function sendPlain(res: HttpResponse, status: number, contentType: string, body: string, close = false, head = false): void {
  startPlain(res, status, contentType);
  endAnswer(res, body, close, head);
}

/** The status and headers of a sendPlain() answer whose body is then written in parts (res.write(), then res.end()): chunked. */
export function startPlain(res: HttpResponse, status: number, contentType: string): void {
  res.writeStatus(statusLineBytes(status));
  res.writeHeader('content-type', contentType);
  res.writeHeader('x-content-type-options', 'nosniff');
}

/** A router-made error outside the inference path, negotiated like Exchange.sendError. */
export function sendPlainError(res: HttpResponse, err: RouterError, acceptJson: boolean, close = false, head = false): void {
  startPlain(res, err.status, acceptJson ? JSON_TYPE : TEXT_TYPE);
  if (err.headers !== null) for (const k in err.headers) res.writeHeader(k, err.headers[k]);
  endAnswer(res, errorBody(err, acceptJson), close, head);
}

/** Ends an answer with `body`, or to a HEAD request (`head`) with its headers only (endHead). */
export function endAnswer(res: HttpResponse, body: string, close: boolean, head: boolean): void {
  if (head) endHead(res, body, close);
  else res.end(body, close);
}

/**
 * Ends the answer to a HEAD request: the headers the GET answer would have, its Content-Length
 * too (RFC 9110 §9.3.2, §8.6), and no body, also when the connection closes after it (a body
 * would be read as the start of the next answer on a kept-alive connection, and an answer to HEAD
 * never has one). The length is written by hand and the answer ended by endWithoutBody() without
 * arguments: given a length, this uWS build leaves the answer unfinished and aborts the process
 * (endPlain). Without arguments it takes no close flag either, so `close` is written by hand as
 * `connection: close`, which the client honours by closing the connection.
 */
function endHead(res: HttpResponse, body: string, close: boolean): void {
  res.writeHeader('content-length', String(Buffer.byteLength(body)));
  if (close) res.writeHeader('connection', 'close');
  res.endWithoutBody();
}

/**
 * Ends an answer with `body`; with its headers only when `headersOnly` (a 204) on a connection
 * that stays open: such an answer has no Content-Length (a 204 must not, RFC 9110 §8.6). end()
 * always writes one, and endWithoutBody writes none only without arguments (this uWS build aborts
 * the process when it is given a length it did not write, and takes no close flag without a
 * length). An answer that closes the connection keeps its empty body, with `content-length: 0`.
 */
export function endPlain(res: HttpResponse, body: RecognizedString, close: boolean, headersOnly: boolean): void {
  if (headersOnly && !close) {
    res.endWithoutBody();
    return;
  }
  res.end(body, close);
}
