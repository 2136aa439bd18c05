/**
 * Memory for request bodies of a few kilobytes, used again from one request to the next. An
 * agent's turn sends 4–16 KB (its system prompt, its tools), and a new buffer of that size is an
 * ArrayBuffer of its own: about 1.4 µs of allocation per request, and memory outside the
 * JavaScript heap that waits for a collection to be freed, which held each worker's resident
 * memory 8–10 MB higher (docs/internals/performance-changes.md, "Request bodies in memory used
 * again").
 *
 * Only bodies the HTTP/1.1 client copies into its write are taken from here (up to
 * REQUEST_COPY_LIMIT, request-head.ts): no socket then holds their memory, and the only reference
 * left after the request ends is a write queued for the end of the same turn. So a buffer given
 * back becomes free at the end of the turn, after the writes queued before it (turn-end.ts runs
 * its tasks in order), never during it.
 *
 * Smaller bodies come from Node's own pool (Buffer.allocUnsafe, below 4 KiB), which costs less;
 * larger ones get their own memory as before. At most MAX_FREE_BYTES stay free per process.
 */
import { Buffer } from 'node:buffer';
import type { Exchange } from './exchange.js';
import { newBodyBuffer, inSharedMemory } from './body-buffer.js';
import { atTurnEnd } from '../turn-end.js';
import { REQUEST_COPY_LIMIT } from '../upstream/http1/request-head.js';

/** Below this, Buffer.allocUnsafe takes a slice of Node's shared pool (half of Buffer.poolSize). */
export const POOLED_MIN_BYTES = Buffer.poolSize >>> 1;
/** Above this, the HTTP/1.1 client writes the body as it is, and a socket may hold it. */
export const POOLED_MAX_BYTES = REQUEST_COPY_LIMIT;
/** The two sizes of buffer kept: a body takes the smallest that holds it. */
const SMALL_BYTES = 8 * 1024;
const LARGE_BYTES = POOLED_MAX_BYTES;
/** Free buffers kept per process, at most (128 of the larger size). */
export const MAX_FREE_BYTES = 2 * 1024 * 1024;

const freeSmall: Buffer[] = [];
const freeLarge: Buffer[] = [];
let freeBytes = 0;
/** Given back in this turn: free once the turn's writes have gone. */
const pending: Buffer[] = [];
let releaseQueued = false;
let made = 0;
let reused = 0;

/** Whether a body of `size` bytes (announced by its content-length) is taken from here. */
export function pooledSize(size: number): boolean {
  return size >= POOLED_MIN_BYTES && size <= POOLED_MAX_BYTES;
}

/** A whole buffer of the pool's for a body of `size` bytes (pooledSize(size)); its first `size` bytes hold the body. */
export function takeBodyMemory(size: number): Buffer {
  const free = size <= SMALL_BYTES ? freeSmall : freeLarge;
  const got = free.pop();
  if (got !== undefined) {
    freeBytes -= got.length;
    reused++;
    return got;
  }
  made++;
  return Buffer.allocUnsafeSlow(size <= SMALL_BYTES ? SMALL_BYTES : LARGE_BYTES);
}

/**
 * `memory` (from takeBodyMemory) is no longer the request's: free at the end of this turn. The
 * caller drops every view of it first (the exchange's body), and gives it back once.
 */
export function giveBackBodyMemory(memory: Buffer): void {
  pending.push(memory);
  if (!releaseQueued) {
    releaseQueued = true;
    atTurnEnd(releasePending);
  }
}

function releasePending(): void {
  releaseQueued = false;
  for (let i = 0; i < pending.length; i++) {
    const memory = pending[i];
    if (freeBytes + memory.length > MAX_FREE_BYTES) continue;
    (memory.length === SMALL_BYTES ? freeSmall : freeLarge).push(memory);
    freeBytes += memory.length;
  }
  pending.length = 0;
}

/**
 * The buffer `x`'s body of `size` bytes (its content-length) is read into: the first `size`
 * bytes of the pool's memory, which `x` then holds (`pooledBody`) until releaseBody, or a buffer
 * of its own (newBodyBuffer: shared memory for a body a tokenizer thread parses, new memory for
 * one outside the pool's sizes).
 */
export function bodyBufferFor(x: Exchange, size: number, sharedMinBytes: number): Buffer {
  if (!pooledSize(size) || inSharedMemory(size, sharedMinBytes)) return newBodyBuffer(size, sharedMinBytes);
  const memory = takeBodyMemory(size);
  x.pooledBody = memory;
  return memory.subarray(0, size);
}

const EMPTY = Buffer.alloc(0);

/**
 * `x` has ended (its record written): the pool's memory its body lay in is given back, and its
 * body is empty from here, so that a bug reading it later finds no other request's bytes.
 */
export function releaseBody(x: Exchange): void {
  const memory = x.pooledBody;
  if (memory === null) return;
  x.pooledBody = null;
  x.body = EMPTY;
  giveBackBodyMemory(memory);
}

/** For tests and the bench: buffers made and taken again, and the bytes free now. */
export function bodyMemoryStats(): { made: number; reused: number; freeBytes: number; pending: number } {
  return { made, reused, freeBytes, pending: pending.length };
}
