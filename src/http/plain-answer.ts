import type { HttpResponse } from 'uWebSockets.js';
import { statusLine } from '../errors.js';

/**
 * A small router-made answer outside the inference path (health, readiness, models, 404,
 * /metrics). Call it inside a uWS handler, or inside res.cork() after an await.
 */
export function sendPlain(res: HttpResponse, status: number, contentType: string, body: string, close = false): void {
  res.writeStatus(statusLine(status));
  res.writeHeader('content-type', contentType);
  res.end(body, close);
}
