import type { HttpRequest, HttpResponse } from 'uWebSockets.js';
import { closeUnanswered } from './exchange.js';
import { Buffer } from 'node:buffer';

/**
 * This uWS build goes on parsing the bytes after a request answered with `Connection: close`
 * when they came in the same read, so a request hidden after a body whose framing was refused
 * would still reach a handler. Until this turn of the event loop ends, a request from the
 * refused request's address is taken for such a hidden request: it gets no answer, no record,
 * and its connection is closed once the refusal before it went out.
 */
let refusedAddress: Buffer | null = null;

/** Call before answering a request whose framing is refused (the address is read from `res`). */
export function refuseFollowers(res: HttpResponse): void {
  if (refusedAddress === null) setImmediate(clearRefused);
  refusedAddress = Buffer.from(res.getRemoteAddress());
}

function clearRefused(): void {
  refusedAddress = null;
}

type Handler = (res: HttpResponse, req: HttpRequest) => void;

/** Wraps a route handler so that a request hidden behind a refused one is never handled. */
export function unlessRefused(handler: Handler): Handler {
  return (res, req) => {
    if (refusedAddress !== null && refusedAddress.equals(Buffer.from(res.getRemoteAddress()))) {
      closeUnanswered(res);
      return;
    }
    handler(res, req);
  };
}
