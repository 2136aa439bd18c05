/**
 * Memory for request bodies, used again from one request to the next. A body of a few kilobytes
 * or more in a new buffer is an ArrayBuffer of its own: about 1.2–1.4 µs of allocation per request,
 * and memory outside the JavaScript heap that waits for a collection to be freed, which held each
 * worker's resident memory 15 MB higher under an agent's load (docs/internals/performance-changes.md,
 * "Request bodies in memory used again").
 *
 * The front reads a body of BODY_MEMORY_MIN_BYTES to BODY_MEMORY_MAX_BYTES announced by its
 * content-length into the smallest of these buffers (8 KiB to 256 KiB, powers of two) that holds it,
 * and gives it back when the request has ended (its record written: every user of the bytes, a
 * retry included, is done). Two other users can still hold the memory then:
 * - a write to a pod queued for the end of the turn (request-head.ts): memory given back is free at
 *   the end of the turn, after the writes queued before it (turn-end.ts runs its tasks in order);
 * - a socket the kernel did not take a larger body's write from whole, which keeps the bytes until
 *   it has sent them: the HTTP/1.1 client says so (bodyKeptBySocket), and that memory leaves the
 *   pool; it is freed with the socket's write, as any buffer.
 * Smaller bodies come from Node's own pool (Buffer.allocUnsafe below 4 KiB), which costs less.
 * At most MAX_FREE_BYTES stay free per process.
 */
import { Buffer } from 'node:buffer';
import { atTurnEnd } from './turn-end.js';

/** Below this, Buffer.allocUnsafe takes a slice of Node's shared pool (half of Buffer.poolSize). */
export const BODY_MEMORY_MIN_BYTES = Buffer.poolSize >>> 1;
/** The smallest buffer kept: 8 KiB. */
const SMALLEST_SHIFT = 13;
/** The largest: 256 KiB, the size from which a body goes to a tokenizer thread by default. */
const LARGEST_SHIFT = 18;
export const BODY_MEMORY_MAX_BYTES = 1 << LARGEST_SHIFT;
/** Free memory kept per process, at most. */
export const MAX_FREE_BYTES = 4 * 1024 * 1024;

/** Free buffers by size: free[k] holds buffers of 2^(SMALLEST_SHIFT + k) bytes. */
const free: Buffer[][] = Array.from({ length: LARGEST_SHIFT - SMALLEST_SHIFT + 1 }, () => []);
let freeBytes = 0;
/** Given back in this turn: free once the turn's writes have gone. */
const pending: Buffer[] = [];
let releaseQueued = false;
/** Memory a socket kept for a write (by its ArrayBuffer): never free again here. */
const keptBySockets = new WeakSet<ArrayBufferLike>();
let kept = 0;

/** Whether a body of `size` bytes (announced by its content-length) is read into the pool's memory. */
export function inBodyMemorySizes(size: number): boolean {
  return size >= BODY_MEMORY_MIN_BYTES && size <= BODY_MEMORY_MAX_BYTES;
}

/** Which free list holds buffers for `size` bytes (inBodyMemorySizes(size)). */
function sizeClass(size: number): number {
  const shift = 32 - Math.clz32(size - 1);
  return shift <= SMALLEST_SHIFT ? 0 : shift - SMALLEST_SHIFT;
}

/** A whole buffer of the pool's for a body of `size` bytes (inBodyMemorySizes(size)); its first `size` bytes take the body. */
export function takeBodyMemory(size: number): Buffer {
  const k = sizeClass(size);
  const got = free[k].pop();
  if (got !== undefined) {
    freeBytes -= got.length;
    return got;
  }
  return Buffer.allocUnsafeSlow(1 << (SMALLEST_SHIFT + k));
}

/**
 * `memory` (from takeBodyMemory) is no longer the request's: free at the end of this turn, unless
 * a socket kept it. The caller drops every view of it first, and gives it back once.
 */
export function giveBackBodyMemory(memory: Buffer): void {
  pending.push(memory);
  if (!releaseQueued) {
    releaseQueued = true;
    atTurnEnd(releasePending);
  }
}

/**
 * The HTTP/1.1 client wrote `body` and the socket still holds bytes to send: if `body` lies in
 * the pool's memory, that memory stays the socket's (it is not free again when given back).
 */
export function bodyKeptBySocket(body: Buffer): void {
  keptBySockets.add(body.buffer);
}

function releasePending(): void {
  releaseQueued = false;
  for (let i = 0; i < pending.length; i++) {
    const memory = pending[i];
    if (keptBySockets.has(memory.buffer)) {
      kept++;
      continue;
    }
    if (freeBytes + memory.length > MAX_FREE_BYTES) continue;
    free[sizeClass(memory.length)].push(memory);
    freeBytes += memory.length;
  }
  pending.length = 0;
}

/** For tests: buffers given back that sockets kept, the bytes free now, and the buffers given back in this turn. */
export function bodyMemoryStats(): { keptBySockets: number; freeBytes: number; pending: number } {
  return { keptBySockets: kept, freeBytes, pending: pending.length };
}
