/**
 * The bytes of one request: request line, `host`, the caller's raw headers, `content-length`
 * and the body, sent with one socket write (one buffer for small bodies; head and body corked
 * into one writev for large ones).
 *
 * A request of one buffer (a body of up to COPY_LIMIT bytes, as inference requests are) is
 * written at the end of the event loop's turn (`atTurnEnd`, turn-end.ts), all of a turn's back to back,
 * not one between each request's processing: a pod's process then wakes once for the turn's
 * requests instead of once per request, which on a busy router costs less CPU on both sides
 * (docs/internals/performance-changes.md, "Writes at the end of the turn"). The delay is the rest
 * of the turn that queued them.
 */
import type { Socket } from 'node:net';
import { Buffer } from 'node:buffer';
import { atTurnEnd } from '../../turn-end.js';

/** Bodies up to this size are copied behind the head into one buffer. */
const COPY_LIMIT = 16 * 1024;

/**
 * Header names and values must already be valid (no CR/LF): the router's come from a parsed
 * client request. `host` and `content-length` are added here and must not be in `headers`.
 */
export function requestHead(method: string, path: string, host: string, headers: readonly string[], body: Buffer | null): string {
  let s = `${method} ${path} HTTP/1.1\r\nhost: ${host}\r\n`;
  for (let i = 0; i < headers.length; i += 2) s += `${headers[i]}: ${headers[i + 1]}\r\n`;
  if (body !== null) s += `content-length: ${body.length}\r\n\r\n`;
  else s += method === 'GET' || method === 'HEAD' ? '\r\n' : 'content-length: 0\r\n\r\n';
  return s;
}

export function writeRequest(socket: Socket, head: string, body: Buffer | null): void {
  if (body === null || body.length === 0) {
    socket.write(head, 'latin1');
    return;
  }
  if (body.length <= COPY_LIMIT) {
    const out = Buffer.allocUnsafe(head.length + body.length);
    out.write(head, 0, 'latin1');
    // TypedArray set, not body.copy(): Buffer's copy checks its arguments in JavaScript first,
    // about 300 instructions a request (docs/internals/performance-changes.md, "A request's body
    // set into its write").
    out.set(body, head.length);
    writeAtTurnEnd(socket, out);
    return;
  }
  socket.cork();
  socket.write(head, 'latin1');
  socket.write(body);
  socket.uncork();
}

// Requests waiting for the end of the turn: socket i takes buffer i, for i below queuedCount. The
// arrays keep their slots from turn to turn (cleared to null once written), as a TurnQueue does:
// shortening them each turn costs more than the writes' own bookkeeping.
const queuedSockets: (Socket | null)[] = [];
const queuedBuffers: (Buffer | null)[] = [];
let queuedCount = 0;
let flushQueued = false;

function writeAtTurnEnd(socket: Socket, out: Buffer): void {
  queuedSockets[queuedCount] = socket;
  queuedBuffers[queuedCount] = out;
  queuedCount++;
  if (!flushQueued) {
    flushQueued = true;
    atTurnEnd(flushRequestWrites);
  }
}

/**
 * Writes the requests queued in this turn, in order. A socket destroyed meanwhile (its request
 * was aborted or timed out, which closes the connection) is skipped.
 */
export function flushRequestWrites(): void {
  flushQueued = false;
  for (let i = 0; i < queuedCount; i++) {
    const socket = queuedSockets[i] as Socket;
    const out = queuedBuffers[i] as Buffer;
    queuedSockets[i] = null;
    queuedBuffers[i] = null;
    if (!socket.destroyed) socket.write(out);
  }
  queuedCount = 0;
}
