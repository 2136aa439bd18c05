/**
 * The rest of a request body over ROUTER_MAX_BODY_BYTES, read and dropped before its 413: the
 * front (inference-front.ts) hands such a request here once it knows the body is too large.
 */
import type { RouterError } from '../errors.js';
import { bodyArrived } from './arriving-bodies.js';
import type { Exchange } from './exchange.js';

/**
 * Most bytes of a body over ROUTER_MAX_BODY_BYTES read and dropped before its 413 is answered
 * (discardBody); a body declared longer than that is answered at once.
 */
export const DISCARD_MAX_BYTES = 64 * 1024 * 1024;

/**
 * Reads the rest of a body that is over the limit and drops it, then answers `err` (the 413) and
 * closes. A client that sends its whole body before it reads the answer (Node's fetch, and so the
 * openai SDK) would otherwise have its upload cut by the close, get a connection reset instead of
 * the 413 (the SDK's "Connection error."), and retry the same upload twice. Past DISCARD_MAX_BYTES
 * dropped it is answered at once. A client that leaves meanwhile is recorded as any upload cut
 * short (499, bytes received of the body's length).
 */
export function discardBody(x: Exchange, err: RouterError, finish: (x: Exchange) => void): void {
  let dropped = 0;
  const answer = (): void => {
    x.handedOn = true;
    bodyArrived(x);
    // At the end of the turn (Exchange.refuseAtTurnEnd): a request that came behind the body in
    // the same read closes the connection instead of reaching a handler.
    x.refuseAtTurnEnd(err);
    finish(x);
  };
  x.res.onData((ab, isLast) => {
    if (x.handedOn) return;
    dropped += ab.byteLength;
    x.bodyBytes += ab.byteLength;
    if (isLast || dropped > DISCARD_MAX_BYTES) answer();
  });
}
