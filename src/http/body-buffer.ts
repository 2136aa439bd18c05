/**
 * The buffers a request body is read into. A body of at least `sharedMinBytes`
 * (ROUTER_TOKENIZER_PARSE_MIN_BYTES; 0: never) goes into shared memory (a SharedArrayBuffer): a
 * tokenizer thread then parses it where it lies, where an ordinary buffer would be copied into the
 * thread's message (docs/tokens.md#large-bodies). A body announced by its content-length is read
 * into such a buffer as it arrives; a chunked body's pieces are joined into one once it has all
 * arrived (the join is the one copy either way). A body of up to 256 KiB is read into memory used
 * again from request to request instead (body-pool.ts): one announced by its content-length from
 * 4 KiB on, a chunked one as its pieces come.
 */
import { Buffer } from 'node:buffer';

/** Whether a body of `size` bytes goes into shared memory. */
export function inSharedMemory(size: number, sharedMinBytes: number): boolean {
  return sharedMinBytes > 0 && size >= sharedMinBytes;
}

/** A buffer for a body of `size` bytes: in shared memory from `sharedMinBytes` on. */
export function newBodyBuffer(size: number, sharedMinBytes: number): Buffer {
  return inSharedMemory(size, sharedMinBytes) ? Buffer.from(new SharedArrayBuffer(size)) : Buffer.allocUnsafe(size);
}

/** A chunked body's pieces, `size` bytes together, in one buffer (the one piece itself when it is one and need not be shared). */
export function joinChunkedBody(chunks: readonly Buffer[], size: number, sharedMinBytes: number): Buffer {
  if (chunks.length === 1 && !inSharedMemory(size, sharedMinBytes)) return chunks[0];
  const out = newBodyBuffer(size, sharedMinBytes);
  copyPieces(out, chunks);
  return out;
}

/** `pieces`, one after the other, copied into `out` from its start (which holds them all). */
export function copyPieces(out: Buffer, pieces: readonly Buffer[]): void {
  let at = 0;
  for (let i = 0; i < pieces.length; i++) {
    out.set(pieces[i], at);
    at += pieces[i].length;
  }
}
