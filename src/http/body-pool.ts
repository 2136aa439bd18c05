/**
 * A request body read into memory used again from one request to the next (body-memory.ts): the
 * exchange holds it from the body's first byte until its record is written. A large body (one a
 * tokenizer thread parses, or over 256 KiB) lies in the pool's shared memory, and the pipeline's
 * end (which writes the record) waits for a thread's answer, so the thread is done with it by then.
 */
import { Buffer } from 'node:buffer';
import type { Exchange } from './exchange.js';
import { copyPieces, joinChunkedBody, newBodyBuffer, inSharedMemory } from './body-buffer.js';
import {
  BODY_MEMORY_MAX_BYTES, giveBackBodyMemory, inBodyMemorySizes, inSharedBodyMemorySizes, takeBodyMemory, takeSharedBodyMemory,
} from '../body-memory.js';

/**
 * Whether a body of `size` bytes is a large one: one a tokenizer thread parses (from
 * `sharedMinBytes` on), or one past the ordinary pool's sizes. Large bodies lie in the pool's
 * shared memory (which a thread reads where it lies) when it holds their size.
 */
function isLarge(size: number, sharedMinBytes: number): boolean {
  return inSharedMemory(size, sharedMinBytes) || size > BODY_MEMORY_MAX_BYTES;
}

/**
 * The buffer `x`'s body of `size` bytes (its content-length) is read into: the first `size`
 * bytes of the pool's memory (its shared memory for a large body), which `x` then holds
 * (`pooledBody`) until releaseBody, or a buffer of its own (newBodyBuffer) for a body outside the
 * pool's sizes (under 4 KiB, over 16 MiB).
 */
export function bodyBufferFor(x: Exchange, size: number, sharedMinBytes: number): Buffer {
  let memory: Buffer;
  if (isLarge(size, sharedMinBytes)) {
    if (!inSharedBodyMemorySizes(size)) return newBodyBuffer(size, sharedMinBytes);
    memory = takeSharedBodyMemory(size);
  } else {
    if (!inBodyMemorySizes(size)) return newBodyBuffer(size, sharedMinBytes);
    memory = takeBodyMemory(size);
  }
  x.pooledBody = memory;
  return memory.subarray(0, size);
}

/**
 * A piece of `x`'s chunked body, `size` bytes of it before: into the pool's memory (which `x`
 * holds), a larger buffer of it taken when the body outgrows one (the bytes so far copied over),
 * as long as the body fits the pool's largest; from there on, copies in `chunks` (the bytes so far
 * the first of them).
 */
export function appendChunkedPiece(x: Exchange, chunks: Buffer[], piece: Uint8Array, size: number): void {
  if (piece.length === 0) return;
  const need = size + piece.length;
  let memory = x.pooledBody;
  if (chunks.length === 0 && need <= BODY_MEMORY_MAX_BYTES) {
    if (memory === null || need > memory.length) {
      const grown = takeBodyMemory(need);
      if (memory !== null) {
        grown.set(memory.subarray(0, size));
        giveBackBodyMemory(memory);
      }
      x.pooledBody = memory = grown;
    }
    memory.set(piece, size);
    return;
  }
  if (memory !== null) {
    chunks.push(Buffer.from(memory.subarray(0, size)));
    x.pooledBody = null;
    giveBackBodyMemory(memory);
  }
  chunks.push(Buffer.from(piece));
}

/**
 * `x`'s chunked body of `size` bytes once all of it came (appendChunkedPiece): where it lies in
 * the pool's memory, or joined from `chunks`. A large body (isLarge) is copied into the pool's
 * shared memory when it holds the size, which `x` then holds (the pool's ordinary memory given
 * back), else joined into memory of its own (shared from `sharedMinBytes` on).
 */
export function chunkedBody(x: Exchange, chunks: readonly Buffer[], size: number, sharedMinBytes: number): Buffer {
  const memory = x.pooledBody;
  if (!isLarge(size, sharedMinBytes)) return memory === null ? joinChunkedBody(chunks, size, sharedMinBytes) : memory.subarray(0, size);
  const pieces = memory === null ? chunks : [memory.subarray(0, size)];
  let body: Buffer;
  if (inSharedBodyMemorySizes(size)) {
    const shared = takeSharedBodyMemory(size);
    copyPieces(shared, pieces);
    x.pooledBody = shared;
    body = shared.subarray(0, size);
  } else {
    x.pooledBody = null;
    body = joinChunkedBody(pieces, size, sharedMinBytes);
  }
  if (memory !== null) giveBackBodyMemory(memory);
  return body;
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
