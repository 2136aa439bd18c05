import type { RouterError } from '../errors.js';
import type { Exchange } from './exchange.js';

/**
 * The requests whose body is still arriving: the front owns them until it has (or they failed),
 * and nothing else can reach them, so a drain that reaches ROUTER_DRAIN_TIMEOUT ends them here
 * (cutArrivingBodies) and their records are written before the access log closes. Else a stalled
 * upload lives until the HTTP server's 10 s idle timeout, after the worker has exited.
 *
 * A doubly linked list through the exchanges' own `arrivingPrev`/`arrivingNext` (this module is
 * their only writer): joining and leaving it is a few stores, no allocation.
 */
let first: Exchange | null = null;

/** `x` now waits for its body. */
export function bodyArriving(x: Exchange): void {
  x.arrivingNext = first;
  if (first !== null) first.arrivingPrev = x;
  first = x;
}

/** `x` no longer waits for its body (it arrived, was refused, or the client left); nothing when it was not waiting. */
export function bodyArrived(x: Exchange): void {
  const prev = x.arrivingPrev;
  const next = x.arrivingNext;
  if (prev !== null) prev.arrivingNext = next;
  else if (first === x) first = next;
  else return;
  if (next !== null) next.arrivingPrev = prev;
  x.arrivingPrev = null;
  x.arrivingNext = null;
}

/**
 * Ends every request whose body is still arriving: answered `err` (its connection closes after
 * it) and handed to `finish`, which records it. Returns how many there were.
 */
export function cutArrivingBodies(err: RouterError, finish: (x: Exchange) => void): number {
  let n = 0;
  while (first !== null) {
    const x = first;
    bodyArrived(x);
    x.handedOn = true;
    x.forceClose = true;
    x.sendError(err);
    finish(x);
    n++;
  }
  return n;
}
