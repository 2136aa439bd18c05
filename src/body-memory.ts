/**
 * Memory for request bodies, used again from one request to the next. A body of a few kilobytes
 * or more in a new buffer is an ArrayBuffer of its own: about 1.2–1.4 µs of allocation per request,
 * and memory outside the JavaScript heap that waits for a collection to be freed, which held each
 * worker's resident memory 15 MB higher under an agent's load (docs/internals/performance-changes.md,
 * "Request bodies in memory used again"). A body of megabytes in new memory costs the event loop
 * the kernel's mapping of its pages, a few milliseconds per 8 MB (the same file, "Large bodies in
 * shared memory used again").
 *
 * The front reads a body of BODY_MEMORY_MIN_BYTES to BODY_MEMORY_MAX_BYTES announced by its
 * content-length into the smallest of these buffers (8 KiB to 256 KiB, powers of two) that holds it.
 * A large body, one a tokenizer thread parses (from ROUTER_TOKENIZER_PARSE_MIN_BYTES, 256 KiB by
 * default) or one over 256 KiB, goes into shared memory (a SharedArrayBuffer, which a thread reads
 * where it lies) instead: into the smallest shared buffer of these sizes (8 KiB to 16 MiB, or to
 * the power of two that holds a body of a higher ROUTER_MAX_BODY_BYTES) that holds it, kept apart
 * from the others. Either is given back when the request has ended (its record written: every user of the
 * bytes, a retry and a thread's parse included, is done). Two other users can still hold the
 * memory then:
 * - a write to a pod queued for the end of the turn (request-head.ts): memory given back is free at
 *   the end of the turn, after the writes queued before it (turn-end.ts runs its tasks in order);
 * - a socket the kernel did not take a larger body's write from whole, which keeps the bytes until
 *   it has sent them: the HTTP/1.1 client says so (bodyKeptBySocket), and again once the socket has
 *   sent them all (bodySentBySocket). Memory given back meanwhile is free only then; a socket closed
 *   before it sent them never says so, and that memory is left to the garbage collector.
 * Smaller bodies come from Node's own pool (Buffer.allocUnsafe below 4 KiB), which costs less.
 * At most MAX_FREE_BYTES of ordinary and MAX_FREE_SHARED_BYTES (or one largest shared buffer) of
 * shared memory stay free per process.
 */
import { Buffer } from 'node:buffer';
import { atTurnEnd } from './turn-end.js';

/**
 * Below this, a body comes from Buffer.allocUnsafe, which slices Node's shared pool (below half of
 * Buffer.poolSize: 4 KiB on Node 20 and 22). Not half the pool itself: Node 24's pool is 64 KiB, and
 * bodies of 4–32 KiB sliced from it hold whole 64 KiB pools outside the heap until a collection
 * finds every body in them dead, as a buffer per body did.
 */
export const BODY_MEMORY_MIN_BYTES = Math.min(Buffer.poolSize >>> 1, 4096);
/** The smallest buffer kept: 8 KiB. */
const SMALLEST_SHIFT = 13;
/** The largest: 256 KiB, the size from which a body goes to a tokenizer thread by default. */
const LARGEST_SHIFT = 18;
export const BODY_MEMORY_MAX_BYTES = 1 << LARGEST_SHIFT;
/** Free memory kept per process, at most. */
export const MAX_FREE_BYTES = 4 * 1024 * 1024;
/**
 * The largest shared buffer by default: 16 MiB, ROUTER_MAX_BODY_BYTES' default. With a higher
 * ROUTER_MAX_BODY_BYTES, the power of two that holds such a body (sizeSharedBodyMemory).
 */
const SHARED_LARGEST_SHIFT = 24;
export const SHARED_BODY_MEMORY_MAX_BYTES = 1 << SHARED_LARGEST_SHIFT;
/** The largest shared buffer ROUTER_MAX_BODY_BYTES can ask for: 1 GiB, its bound. */
const SHARED_CEILING_SHIFT = 30;
/** Free shared memory kept per process, at most, by default: a 16 MiB body's, or two of 8 MB. */
export const MAX_FREE_SHARED_BYTES = 16 * 1024 * 1024;

/** Free buffers of one kind by size: lists[k] holds buffers of 2^(SMALLEST_SHIFT + k) bytes, `bytes` in all, at most `maxBytes`. */
interface FreeMemory {
  readonly lists: Buffer[][];
  bytes: number;
  maxBytes: number;
}

function freeMemory(largestShift: number, maxBytes: number): FreeMemory {
  return { lists: Array.from({ length: largestShift - SMALLEST_SHIFT + 1 }, () => []), bytes: 0, maxBytes };
}

const free = freeMemory(LARGEST_SHIFT, MAX_FREE_BYTES);
const freeShared = freeMemory(SHARED_CEILING_SHIFT, MAX_FREE_SHARED_BYTES);
/** The largest body the shared memory takes (sizeSharedBodyMemory). */
let sharedMaxBytes = SHARED_BODY_MEMORY_MAX_BYTES;
/** Given back in this turn: free once the turn's writes have gone. */
const pending: Buffer[] = [];
let releaseQueued = false;
/** Memory sockets hold for their writes (by its ArrayBuffer): how many writes of it they have not sent yet. */
const heldBySockets = new WeakMap<ArrayBufferLike, number>();
/** Memory given back while a socket held it: free once the socket has sent it. */
const givenBackWhileHeld = new WeakMap<ArrayBufferLike, Buffer>();
let kept = 0;

/** Whether a body of `size` bytes (announced by its content-length) is read into the pool's memory. */
export function inBodyMemorySizes(size: number): boolean {
  return size >= BODY_MEMORY_MIN_BYTES && size <= BODY_MEMORY_MAX_BYTES;
}

/** The exponent of the smallest power of two of at least `size` (>= 1) bytes. */
function holdingShift(size: number): number {
  return 32 - Math.clz32(size - 1);
}

/** Which free list holds buffers for `size` bytes (inBodyMemorySizes(size)). */
function sizeClass(size: number): number {
  const shift = holdingShift(size);
  return shift <= SMALLEST_SHIFT ? 0 : shift - SMALLEST_SHIFT;
}

/** A free buffer of `from` for `size` bytes, or undefined when it has none of that size. */
function takeFree(from: FreeMemory, size: number): Buffer | undefined {
  const got = from.lists[sizeClass(size)].pop();
  if (got !== undefined) from.bytes -= got.length;
  return got;
}

/** The size of the buffers that hold `size` bytes. */
function classBytes(size: number): number {
  return 1 << (SMALLEST_SHIFT + sizeClass(size));
}

/** A whole buffer of the pool's for a body of `size` bytes (inBodyMemorySizes(size)); its first `size` bytes take the body. */
export function takeBodyMemory(size: number): Buffer {
  return takeFree(free, size) ?? Buffer.allocUnsafeSlow(classBytes(size));
}

/**
 * Sizes the shared memory for bodies of up to `maxBodyBytes` (ROUTER_MAX_BODY_BYTES, once at a
 * worker's start): its largest buffer the power of two that holds such a body, 16 MiB at least,
 * and at most as much free as that (16 MiB at least), so that one body of the largest size, or two
 * of half of it, find their memory again. Without it, a body over 16 MiB would get new memory
 * each time: the kernel's mapping of its pages, and memory freed only by a collection.
 */
export function sizeSharedBodyMemory(maxBodyBytes: number): void {
  const shift = Math.min(SHARED_CEILING_SHIFT, Math.max(SHARED_LARGEST_SHIFT, holdingShift(Math.max(1, maxBodyBytes))));
  sharedMaxBytes = 2 ** shift;
  freeShared.maxBytes = Math.max(MAX_FREE_SHARED_BYTES, sharedMaxBytes);
}

/** Whether a body of `size` bytes that goes into shared memory is read into the pool's shared memory. */
export function inSharedBodyMemorySizes(size: number): boolean {
  return size <= sharedMaxBytes;
}

/**
 * A whole shared buffer of the pool's for a body of `size` bytes (inSharedBodyMemorySizes(size));
 * its first `size` bytes take the body. New memory is zeroed, as every SharedArrayBuffer is.
 */
export function takeSharedBodyMemory(size: number): Buffer {
  return takeFree(freeShared, size) ?? Buffer.from(new SharedArrayBuffer(classBytes(size)));
}

/**
 * `memory` (from takeBodyMemory or takeSharedBodyMemory) is no longer the request's: free at the
 * end of this turn, or once the sockets that hold it have sent it. The caller drops every view of it first, and gives it back once.
 */
export function giveBackBodyMemory(memory: Buffer): void {
  pending.push(memory);
  if (!releaseQueued) {
    releaseQueued = true;
    atTurnEnd(releasePending);
  }
}

/**
 * The HTTP/1.1 client is about to write `body` on a socket, which holds it until it has sent it:
 * if `body` lies in the pool's memory, that memory is not free again, whether given back or not,
 * until the socket says so (bodySentBySocket, once for each call of this).
 */
export function bodyKeptBySocket(body: Buffer): void {
  const ab = body.buffer;
  heldBySockets.set(ab, (heldBySockets.get(ab) ?? 0) + 1);
}

/**
 * The socket that kept `body` (bodyKeptBySocket) is done with it (sent, or the write failed): its
 * memory, if given back meanwhile and no other socket holds it, is free now.
 */
export function bodySentBySocket(body: Buffer): void {
  const ab = body.buffer;
  const n = heldBySockets.get(ab);
  if (n === undefined) return;
  if (n > 1) {
    heldBySockets.set(ab, n - 1);
    return;
  }
  heldBySockets.delete(ab);
  const memory = givenBackWhileHeld.get(ab);
  if (memory === undefined) return;
  givenBackWhileHeld.delete(ab);
  kept--;
  makeFree(memory);
}

function releasePending(): void {
  releaseQueued = false;
  for (let i = 0; i < pending.length; i++) {
    const memory = pending[i];
    if (heldBySockets.has(memory.buffer)) {
      givenBackWhileHeld.set(memory.buffer, memory);
      kept++;
      continue;
    }
    makeFree(memory);
  }
  pending.length = 0;
}

/** `memory`, which no request or socket uses any more, into its free list (unless that holds its most). */
function makeFree(memory: Buffer): void {
  const to = memory.buffer instanceof SharedArrayBuffer ? freeShared : free;
  if (to.bytes + memory.length > to.maxBytes) return;
  to.lists[sizeClass(memory.length)].push(memory);
  to.bytes += memory.length;
}

/**
 * The bytes free now (ordinary and shared; the metric inference_router_body_memory_free_bytes),
 * and for tests: buffers given back while sockets held them and not free yet (or left to the
 * garbage collector), and the buffers given back in this turn.
 */
export function bodyMemoryStats(): { keptBySockets: number; freeBytes: number; freeSharedBytes: number; pending: number; maxFreeSharedBytes: number } {
  return { keptBySockets: kept, freeBytes: free.bytes, freeSharedBytes: freeShared.bytes, pending: pending.length, maxFreeSharedBytes: freeShared.maxBytes };
}
