/**
 * A request body read into memory used again from one request to the next (body-memory.ts): the
 * exchange holds it from the body's first byte until its record is written.
 */
import { Buffer } from 'node:buffer';
import type { Exchange } from './exchange.js';
import { newBodyBuffer, inSharedMemory } from './body-buffer.js';
import { giveBackBodyMemory, inBodyMemorySizes, takeBodyMemory } from '../body-memory.js';

/**
 * The buffer `x`'s body of `size` bytes (its content-length) is read into: the first `size`
 * bytes of the pool's memory, which `x` then holds (`pooledBody`) until releaseBody, or a buffer
 * of its own (newBodyBuffer: shared memory for a body a tokenizer thread parses, new memory for
 * one outside the pool's sizes).
 */
export function bodyBufferFor(x: Exchange, size: number, sharedMinBytes: number): Buffer {
  if (!inBodyMemorySizes(size) || inSharedMemory(size, sharedMinBytes)) return newBodyBuffer(size, sharedMinBytes);
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
