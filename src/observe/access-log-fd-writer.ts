import { close as fsClose, open as fsOpen, write as fsWrite } from 'node:fs';

/**
 * Writes whole-record batches to one file descriptor, in order, one `write(2)` in flight at a
 * time, on the libuv thread pool (never blocking the event loop). Each batch is written by one
 * call (the rest of a short write by the next). Queued bytes (including the batch in flight)
 * are bounded: `push` refuses a batch beyond the bound. A batch whose write fails (ENOSPC, EIO,
 * EBADF, ...) is discarded and reported through `onFailed`, so a broken output never builds up
 * a backlog; EAGAIN (a full non-blocking pipe) is retried after a short pause.
 */

const RETRY_EAGAIN_MS = 10;

export type FailedBatch = (records: number, err: NodeJS.ErrnoException) => void;

export class FdWriter {
  private fd = -1;
  private readonly bufs: Buffer[] = [];
  private readonly counts: number[] = [];
  /** Bytes queued, including the batch in flight (its unwritten rest). */
  private queued = 0;
  /** Offset written so far of bufs[0] (after short writes). */
  private offset = 0;
  private writing = false;
  private opening = false;
  private reopenWanted = false;
  private closed = false;
  private waiters: (() => void)[] = [];
  private retryTimer: NodeJS.Timeout | null = null;

  private readonly onWritten = (err: NodeJS.ErrnoException | null, n: number): void => this.written(err, n);
  private readonly onRetry = (): void => {
    this.retryTimer = null;
    this.writing = false;
    this.kick();
  };

  /** `path` null: `fd` is stdout/stderr and is never reopened or closed. */
  constructor(
    private readonly path: string | null,
    fd: number,
    private readonly maxQueued: number,
    private readonly onFailed: FailedBatch,
  ) {
    if (path === null) this.fd = fd;
    else this.open();
  }

  /** Queues one batch; false (nothing queued) when it would exceed the bound or after close. */
  push(batch: Buffer, records: number): boolean {
    if (this.closed || this.queued + batch.length > this.maxQueued) return false;
    this.bufs.push(batch);
    this.counts.push(records);
    this.queued += batch.length;
    if (!this.writing) this.kick();
    return true;
  }

  /** Resolves once every batch queued so far is written (or failed and was discarded). */
  flush(): Promise<void> {
    if (this.idle()) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  /** Opens the path again once the write in flight is done; later batches go to the new file. */
  reopen(): void {
    if (this.path === null || this.closed) return;
    this.reopenWanted = true;
    if (!this.writing && !this.opening) this.open();
  }

  /** Flushes, then closes the descriptor (a path's; never stdout/stderr). */
  async close(): Promise<void> {
    if (this.closed) return;
    await this.flush();
    this.closed = true;
    if (this.retryTimer !== null) clearTimeout(this.retryTimer);
    const fd = this.fd;
    this.fd = -1;
    if (this.path === null || fd < 0) return;
    await new Promise<void>((resolve, reject) => fsClose(fd, (err) => (err ? reject(err) : resolve())));
  }

  private idle(): boolean {
    return this.bufs.length === 0 && !this.writing && !this.opening;
  }

  private open(): void {
    this.reopenWanted = false;
    this.opening = true;
    fsOpen(this.path as string, 'a', (err, fd) => {
      this.opening = false;
      const old = this.fd;
      if (err) {
        // Keep writing to the old descriptor, if any; with none, what is queued fails (counted).
        this.onFailed(0, err);
        if (old < 0) this.failAll(err);
      } else {
        this.fd = fd;
        if (old >= 0) fsClose(old, noop);
      }
      if (this.closed && this.fd >= 0) {
        fsClose(this.fd, noop);
        this.fd = -1;
      }
      this.kick();
    });
  }

  /** Starts the next write, a pending reopen, or settles flush() waiters when idle. */
  private kick(): void {
    if (this.writing || this.opening) return;
    if (this.reopenWanted) {
      this.open();
      return;
    }
    if (this.bufs.length === 0) {
      this.settle();
      return;
    }
    if (this.fd < 0) {
      this.failAll(Object.assign(new Error('the output is not open'), { code: 'EBADF' }));
      return;
    }
    this.writing = true;
    const buf = this.bufs[0] as Buffer;
    fsWrite(this.fd, buf, this.offset, buf.length - this.offset, null, this.onWritten);
  }

  private written(err: NodeJS.ErrnoException | null, n: number): void {
    const buf = this.bufs[0] as Buffer;
    if (err) {
      if (err.code === 'EAGAIN' && !this.closed) {
        this.retryTimer = setTimeout(this.onRetry, RETRY_EAGAIN_MS);
        return;
      }
      this.queued -= buf.length - this.offset;
      this.offset = 0;
      this.bufs.shift();
      this.onFailed(this.counts.shift() as number, err);
    } else {
      this.offset += n;
      this.queued -= n;
      if (this.offset === buf.length) {
        this.offset = 0;
        this.bufs.shift();
        this.counts.shift();
      }
    }
    this.writing = false;
    this.kick();
  }

  private failAll(err: NodeJS.ErrnoException): void {
    let records = 0;
    for (const c of this.counts) records += c;
    this.bufs.length = 0;
    this.counts.length = 0;
    this.queued = 0;
    this.offset = 0;
    if (records > 0) this.onFailed(records, err);
    this.settle();
  }

  private settle(): void {
    if (!this.idle() || this.waiters.length === 0) return;
    const waiters = this.waiters;
    this.waiters = [];
    for (const w of waiters) w();
  }
}

function noop(): void {}
