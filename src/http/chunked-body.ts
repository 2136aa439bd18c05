/**
 * A chunked request body's pieces joined into one buffer once it has all arrived. A body of at
 * least `sharedMinBytes` (ROUTER_TOKENIZER_PARSE_MIN_BYTES; 0: never) is joined into shared memory
 * (a SharedArrayBuffer), as a body announced by its content-length is read into it: a tokenizer
 * thread then parses it where it lies, where an ordinary buffer would be copied into the thread's
 * message (docs/tokens.md#large-bodies). The join is the one copy either way.
 */
import { Buffer } from 'node:buffer';

export function joinChunkedBody(chunks: readonly Buffer[], size: number, sharedMinBytes: number): Buffer {
  if (sharedMinBytes > 0 && size >= sharedMinBytes) {
    const out = Buffer.from(new SharedArrayBuffer(size));
    let at = 0;
    for (let i = 0; i < chunks.length; i++) {
      out.set(chunks[i], at);
      at += chunks[i].length;
    }
    return out;
  }
  return chunks.length === 1 ? chunks[0] : Buffer.concat(chunks as Buffer[], size);
}
