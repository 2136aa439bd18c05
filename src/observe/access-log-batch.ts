import { MAX_RECORD_BYTES } from './access-log-format.js';

/** Size of each slab the records are encoded into. */
const SLAB_BYTES = 256 * 1024;
const NEWLINE = 0x0a;

/**
 * Cuts records into whole-record batches of at most `maxBatchBytes` bytes. Each record is
 * UTF-8-encoded once, straight into a slab; a batch is a view of consecutive records in the slab,
 * handed to `hand` without a copy. Slab space is never reused (handed batches may still be
 * queued): a fresh slab is taken when fewer than MAX_RECORD_BYTES bytes are left.
 */
export class RecordBatcher {
  private slab = Buffer.allocUnsafeSlow(SLAB_BYTES);
  private start = 0;
  private end = 0;
  private count = 0;

  constructor(
    private readonly maxBatchBytes: number,
    private readonly hand: (batch: Buffer, records: number) => void,
  ) {
    if (maxBatchBytes < MAX_RECORD_BYTES) throw new Error(`batch size ${maxBatchBytes} is below one record (${MAX_RECORD_BYTES})`);
  }

  /** Records waiting in the current batch. */
  get pending(): number {
    return this.count;
  }

  /** Adds one line (no newline; at most MAX_RECORD_BYTES - 1 bytes, as the formatters guarantee). */
  add(line: string): void {
    if (this.slab.length - this.end < MAX_RECORD_BYTES) {
      this.flush();
      this.slab = Buffer.allocUnsafeSlow(SLAB_BYTES);
      this.start = 0;
      this.end = 0;
    }
    const n = this.slab.write(line, this.end);
    this.slab[this.end + n] = NEWLINE;
    const next = this.end + n + 1;
    if (next - this.start > this.maxBatchBytes) this.flush();
    this.end = next;
    this.count++;
  }

  /** Hands over the current batch, if any. */
  flush(): void {
    const count = this.count;
    if (count === 0) return;
    const batch = this.slab.subarray(this.start, this.end);
    this.start = this.end;
    this.count = 0;
    this.hand(batch, count);
  }
}
