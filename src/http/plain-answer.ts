import type { HttpResponse, RecognizedString } from 'uWebSockets.js';
import { statusLineBytes, type RouterError } from '../errors.js';
import { errorBody, JSON_TYPE, TEXT_TYPE } from './error-body.js';

/**
 * A small router-made answer outside the inference path (health, readiness, models, 404,
 * /metrics). Call it inside a uWS handler, or inside res.cork() after an await.
 */
export function sendPlain(res: HttpResponse, status: number, contentType: string, body: string, close = false, head = false): void {
  res.writeStatus(statusLineBytes(status));
  res.writeHeader('content-type', contentType);
  endPlain(res, body, close, head);
}

/** A router-made error outside the inference path, negotiated like Exchange.sendError. */
export function sendPlainError(res: HttpResponse, err: RouterError, acceptJson: boolean, close = false, head = false): void {
  res.writeStatus(statusLineBytes(err.status));
  res.writeHeader('content-type', acceptJson ? JSON_TYPE : TEXT_TYPE);
  if (err.headers !== null) for (const k in err.headers) res.writeHeader(k, err.headers[k]);
  endPlain(res, errorBody(err, acceptJson), close, head);
}

/**
 * Ends an answer with `body`; with its headers only when `headersOnly` (an answer to HEAD, a
 * 204) on a connection that stays open: a body after them would be read by the client as the start
 * of the next answer on the connection, and such an answer has no Content-Length (a 204 must not,
 * RFC 9110 §8.6). end() always writes one, and endWithoutBody writes none only without arguments
 * (this uWS build aborts the process when it is given a length it did not write, or the header is
 * written by hand, and takes no close flag without a length). An answer that closes the connection
 * keeps its body (a 204's empty one, with `content-length: 0`): nothing follows it to be misread.
 */
export function endPlain(res: HttpResponse, body: RecognizedString, close: boolean, headersOnly: boolean): void {
  if (headersOnly && !close) {
    try {
      res.endWithoutBody();
      return;
    } catch {
      // The JavaScript fallback (ROUTER_ALLOW_UWS_FALLBACK) has no endWithoutBody; its node:http
      // server leaves out the body of an answer to HEAD or a 204 by itself.
    }
  }
  res.end(body, close);
}
