import { MAX_RECORD_BYTES } from './access-log-format.js';
import { Buffer } from 'node:buffer';

const NEWLINE = 0x0a;

/**
 * Cuts records into whole-record batches of at most `maxBatchBytes` bytes. Each record is
 * UTF-8-encoded once, straight into a scratch buffer; a full batch (or the rest at `flush()`)
 * is copied out into a buffer of exactly its size and handed to `hand`. The copy keeps queued
 * memory equal to queued bytes: a handed batch pins nothing but itself, so the sink's byte
 * bound is also the memory bound, however sparsely a slow sink accepts batches.
 */
export class RecordBatcher {
  /** One batch plus room for one more record. */
  private readonly scratch: Buffer;
  private end = 0;
  private count = 0;

  constructor(
    private readonly maxBatchBytes: number,
    private readonly hand: (batch: Buffer, records: number) => void,
  ) {
    if (maxBatchBytes < MAX_RECORD_BYTES) throw new Error(`batch size ${maxBatchBytes} is below one record (${MAX_RECORD_BYTES})`);
    this.scratch = Buffer.allocUnsafeSlow(maxBatchBytes + MAX_RECORD_BYTES);
  }

  /** Records waiting in the current batch. */
  get pending(): number {
    return this.count;
  }

  /**
   * Adds one line (no newline; at most MAX_RECORD_BYTES - 1 bytes, as the formatters guarantee).
   * `ascii`: the line is all ASCII, so it is copied as latin1 (the same bytes, without UTF-8's encoding).
   */
  add(line: string, ascii = false): void {
    const start = this.end;
    const n = ascii ? this.scratch.write(line, start, 'latin1') : this.scratch.write(line, start);
    this.place(start, start + n);
  }

  /**
   * Adds one record written by `write` straight into the batch buffer (a line of at most
   * MAX_RECORD_BYTES - 1 bytes, no newline, at the offset given; it returns where the line ends).
   * Returns false, adding nothing, when `write` declines the record (-1): add its line instead.
   */
  addWritten<R>(record: R, write: (record: R, buf: Buffer, at: number) => number): boolean {
    const start = this.end;
    const end = write(record, this.scratch, start);
    if (end < 0) return false;
    this.place(start, end);
    return true;
  }

  /** The record just written at scratch[start..end): newline, then keep it or cut the batch before it. */
  private place(start: number, end: number): void {
    this.scratch[end] = NEWLINE;
    const next = end + 1;
    if (next <= this.maxBatchBytes) {
      this.end = next;
      this.count++;
      return;
    }
    // The new record does not fit: hand over the batch before it, then move it to the front.
    this.end = start;
    this.flush();
    this.scratch.copyWithin(0, start, next);
    this.end = next - start;
    this.count = 1;
  }

  /** Hands over the current batch, if any. */
  flush(): void {
    const count = this.count;
    if (count === 0) return;
    const batch = Buffer.allocUnsafeSlow(this.end);
    this.scratch.copy(batch, 0, 0, this.end);
    this.end = 0;
    this.count = 0;
    this.hand(batch, count);
  }
}
