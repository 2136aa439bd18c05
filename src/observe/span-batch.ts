import { Buffer } from 'node:buffer';
import { utf8Bytes } from './group-bytes.js';

/** The smallest buffer a batch starts with; a batch starts at the size the last one reached. */
const MIN_BATCH_BYTES = 64 * 1024;
const COMMA = 0x2c;
/** The envelope's end after a batch's spans (its head, with the resource, is the exporter's). */
const TAIL = utf8Bytes(']}]}]}');

/**
 * One export's body being filled: the OTLP/JSON envelope's head, the spans' JSON separated by
 * commas, written in place (span-bytes.ts), and the envelope's tail added when it is sent. Grows
 * by doubling; a new batch starts at the size the last one needed, so a steady load writes each
 * batch once.
 */
export class SpanBatch {
  buf: Buffer;
  /** Where the bytes written so far end. */
  private at: number;
  /** Where the next span's bytes go (set by `room`). */
  start = 0;
  /** Spans written. */
  spans = 0;
  /** Bytes of the envelope's head at the buffer's start. */
  private readonly headLength: number;

  constructor(head: Uint8Array, capacity: number) {
    this.buf = Buffer.allocUnsafe(Math.max(capacity, MIN_BATCH_BYTES, head.length * 2));
    this.buf.set(head, 0);
    this.headLength = head.length;
    this.at = head.length;
  }

  /**
   * Makes room for one more span of at most `bound` bytes (and the tail after it), after a comma
   * when spans came before; `start` is where it goes. Nothing counts until `wrote`.
   */
  room(bound: number): void {
    const need = this.at + 1 + bound + TAIL.length;
    if (need > this.buf.length) {
      let size = this.buf.length * 2;
      while (size < need) size *= 2;
      const grown = Buffer.allocUnsafe(size);
      this.buf.copy(grown, 0, 0, this.at);
      this.buf = grown;
    }
    this.start = this.at;
    if (this.spans > 0) this.buf[this.start++] = COMMA;
  }

  /** The span just written ends at `end`. */
  wrote(end: number): void {
    this.at = end;
    this.spans++;
  }

  /** Empties the batch for use again, keeping its buffer and the envelope's head in it. */
  empty(): void {
    this.at = this.headLength;
    this.spans = 0;
  }

  /** The export's body: what was written and the tail. */
  body(): Uint8Array {
    this.buf.set(TAIL, this.at);
    return this.buf.subarray(0, this.at + TAIL.length);
  }
}
