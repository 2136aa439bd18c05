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
import { bodyKeptBySocket, bodySentBySocket } from '../../body-memory.js';

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
    writeAtTurnEnd(socket, head, body);
    return;
  }
  // The socket holds the body's memory until it has sent it (or failed to), which its callback
  // says; the memory must not be used again for another body before then (body-memory.ts). The
  // callback comes after the write is over, also when the socket is destroyed first.
  bodyKeptBySocket(body);
  socket.cork();
  socket.write(head, 'latin1');
  socket.write(body, () => bodySentBySocket(body));
  socket.uncork();
}

// Requests waiting for the end of the turn: socket i takes head i and body i, for i below
// queuedCount. The arrays keep their slots from turn to turn (cleared to null once written), as a
// TurnQueue does: shortening them each turn costs more than the writes' own bookkeeping.
const queuedSockets: (Socket | null)[] = [];
const queuedHeads: string[] = [];
const queuedBodies: (Buffer | null)[] = [];
let queuedCount = 0;
let flushQueued = false;

/**
 * The memory a request's bytes are put together in before its write, used again for the next
 * request while the kernel takes each write whole (the usual case: a pod reading its socket). A
 * new buffer of a few kilobytes per request cost about 2 µs of allocation and collection
 * (docs/internals/performance-changes.md, "One buffer for the requests' writes").
 */
let scratch: Buffer | null = null;
const SCRATCH_BYTES = 32 * 1024;

function writeAtTurnEnd(socket: Socket, head: string, body: Buffer): void {
  queuedSockets[queuedCount] = socket;
  queuedHeads[queuedCount] = head;
  queuedBodies[queuedCount] = body;
  queuedCount++;
  if (!flushQueued) {
    flushQueued = true;
    atTurnEnd(flushRequestWrites);
  }
}

/**
 * Writes the requests queued in this turn, in order, each head and body as one buffer. A socket
 * destroyed meanwhile (its request was aborted or timed out, which closes the connection) is
 * skipped.
 *
 * A write the kernel does not take whole at once keeps its buffer until the rest is sent (and a
 * socket still connecting, or with writes waiting, keeps it too): the stream then still counts
 * bytes to write (`writableLength`). Such a socket gets a buffer of the request's own; when one
 * made in the shared memory is kept, that memory is left to it and the next request gets new.
 */
export function flushRequestWrites(): void {
  flushQueued = false;
  for (let i = 0; i < queuedCount; i++) {
    const socket = queuedSockets[i] as Socket;
    const head = queuedHeads[i];
    const body = queuedBodies[i] as Buffer;
    queuedSockets[i] = null;
    queuedHeads[i] = '';
    queuedBodies[i] = null;
    if (socket.destroyed) continue;
    const size = head.length + body.length;
    if (socket.writableLength !== 0 || socket.connecting) {
      socket.write(joined(Buffer.allocUnsafe(size), head, body));
      continue;
    }
    let out = scratch;
    if (out === null || out.length < size) out = scratch = Buffer.allocUnsafeSlow(Math.max(size, SCRATCH_BYTES));
    socket.write(joined(out, head, body).subarray(0, size));
    if (socket.writableLength !== 0) scratch = null;
  }
  queuedCount = 0;
}

/** `out` with the head's bytes, then the body's, from its start. */
function joined(out: Buffer, head: string, body: Buffer): Buffer {
  out.write(head, 0, 'latin1');
  // TypedArray set, not body.copy(): Buffer's copy checks its arguments in JavaScript first,
  // about 300 instructions a request (docs/internals/performance-changes.md, "A request's body
  // set into its write").
  out.set(body, head.length);
  return out;
}
