import type { HttpResponse } from 'uWebSockets.js';
import { statusLineBytes, type RouterError } from '../errors.js';
import { errorBody, JSON_TYPE, TEXT_TYPE } from './error-body.js';

/**
 * A small router-made answer outside the inference path (health, readiness, models, 404,
 * /metrics). Call it inside a uWS handler, or inside res.cork() after an await.
 */
export function sendPlain(res: HttpResponse, status: number, contentType: string, body: string, close = false): void {
  res.writeStatus(statusLineBytes(status));
  res.writeHeader('content-type', contentType);
  res.end(body, close);
}

/** A router-made error outside the inference path, negotiated like Exchange.sendError. */
export function sendPlainError(res: HttpResponse, err: RouterError, acceptJson: boolean, close = false): void {
  res.writeStatus(statusLineBytes(err.status));
  res.writeHeader('content-type', acceptJson ? JSON_TYPE : TEXT_TYPE);
  if (err.headers !== null) for (const k in err.headers) res.writeHeader(k, err.headers[k]);
  res.end(errorBody(err, acceptJson), close);
}
