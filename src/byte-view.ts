/**
 * A DataView over the memory of a Buffer, for reading four bytes at a time. Making one is an
 * allocation, so the last one made is kept while the buffers read come from the same ArrayBuffer:
 * an answer's head and body are copies in Node's buffer pool (a new ArrayBuffer every few
 * kilobytes), read by the HTTP/1.1 client's head scan and then by the usage reader. Read `buf` at `buf.byteOffset + i` through the view.
 */
import type { Buffer } from 'node:buffer';

let view: DataView = new DataView(new ArrayBuffer(4));
let viewBuffer: ArrayBufferLike = view.buffer;

/** A DataView of the whole ArrayBuffer `buf` lies in (the one made last, when it is the same). */
export function viewOf(buf: Buffer): DataView {
  const b = buf.buffer;
  if (b !== viewBuffer) {
    view = new DataView(b);
    viewBuffer = b;
  }
  return view;
}

/** A DataView of exactly the bytes of `bytes` (a constant compared against, made once). */
export function viewOfBytes(bytes: Uint8Array): DataView {
  return new DataView(bytes.buffer, bytes.byteOffset, bytes.length);
}

/**
 * Whether the `length` bytes at `at` in `v` equal the first `length` bytes of `w` (a view of
 * constant bytes), four at a time, then the rest one by one. The caller keeps both ranges within
 * their views.
 */
export function equalBytes(v: DataView, at: number, w: DataView, length: number): boolean {
  let k = 0;
  for (; k + 4 <= length; k += 4) if (v.getInt32(at + k, true) !== w.getInt32(k, true)) return false;
  for (; k < length; k++) if (v.getUint8(at + k) !== w.getUint8(k)) return false;
  return true;
}
