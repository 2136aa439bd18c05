import { close as fsClose, fstatSync, open as fsOpen, write as fsWrite, writeSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { Buffer } from 'node:buffer';
import { pipeOpenedNonBlocking } from './nonblocking-pipe.js';

/**
 * Writes whole-record batches to one file descriptor, in order, one `write(2)` at a time. Each
 * batch is written by one call (the rest of a short write by the next). Queued bytes (including
 * the batch in flight) are bounded: `push` refuses a batch beyond the bound. A batch whose write
 * fails (ENOSPC, EIO, EBADF, ...) is discarded and reported through `onFailed`, so a broken output
 * never builds up a backlog; EAGAIN (a full non-blocking pipe) is retried after a short pause (below).
 * A batch that fails after part of it was written (a disk that filled up during the write) counts
 * only the records it did not write whole; when it was cut inside a record, the next write is a
 * newline, before any later batch, so the cut record stays a line of its own.
 *
 * Where the write runs: to a regular file (`syncWrites`), on the event loop as the batch is
 * pushed. A 64 KiB write into the page cache takes tens of µs, while a write on the libuv thread
 * pool costs two thread wake-ups, each 50–200 µs of CPU on a virtual machine (measured: 3 µs more
 * CPU per record at ~8,000 records/s per process). A write that takes SLOW_WRITE_MS or more (a
 * disk the kernel throttles, a network file system) moves the writer to the thread pool for
 * ASYNC_AFTER_SLOW_MS, reported through `onSlow`. To a pipe (a container's stdout, a FIFO) the
 * writes run on the event loop too, through a non-blocking description of the pipe of the
 * writer's own (nonblocking-pipe.ts): a write of at most PIPE_BUF goes in whole or fails with
 * EAGAIN at once, never waiting for the reader. Where the pipe cannot be opened so, and to a
 * socket or a terminal, every write is on the thread pool (two thread wake-ups per write): a
 * reader that stops must not stop the event loop. EAGAIN (the reader is behind, on a pipe of the
 * writer's own or on one that is non-blocking already) is tried again after 1 ms, then 2, 4, 8
 * and every RETRY_EAGAIN_MS while it lasts.
 */

/** The longest wait before a write the pipe refused (EAGAIN) is tried again; the first is after 1 ms. */
const RETRY_EAGAIN_MS = 10;
const NEWLINE = 0x0a;
/** What ends a line cut by a failed write. */
const LINE_END = Buffer.from([NEWLINE]);
/** A write on the event loop this slow moves the writer to the thread pool... */
export const SLOW_WRITE_MS = 10;
/** ... for this long. */
export const ASYNC_AFTER_SLOW_MS = 60_000;

export type FailedBatch = (records: number, err: NodeJS.ErrnoException) => void;

export interface FdWriterOptions {
  /** Write on the event loop (regular files), as described above. Default false. */
  readonly syncWrites?: boolean;
  /** Monotonic milliseconds, timing the writes on the event loop. Default performance.now. */
  readonly now?: () => number;
  /** A write on the event loop took `ms`: the writer uses the thread pool for ASYNC_AFTER_SLOW_MS. */
  readonly onSlow?: (ms: number) => void;
}

export class FdWriter {
  private fd = -1;
  /** For a pipe written through a non-blocking description of the writer's own (`fd`): the descriptor it came as; else -1. */
  private inheritedFd = -1;
  /** The wait before the next try after EAGAIN (doubles up to RETRY_EAGAIN_MS; back to 1 after a write). */
  private eagainDelayMs = 1;
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
  private readonly syncWrites: boolean;
  private readonly now: () => number;
  private readonly onSlow: (ms: number) => void;
  /** The output ends inside a record (a write failed after part of it): the next write is LINE_END. */
  private lineCut = false;
  /** The write in flight is LINE_END. */
  private endingLine = false;
  /** Until this time (of `now`) writes go to the thread pool after a slow one. */
  private asyncUntil = Number.NEGATIVE_INFINITY;

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
    opts: FdWriterOptions = {},
  ) {
    this.syncWrites = opts.syncWrites ?? false;
    this.now = opts.now ?? (() => performance.now());
    this.onSlow = opts.onSlow ?? noop;
    if (path === null) this.adopt(fd);
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
    const inherited = this.inheritedFd;
    this.fd = -1;
    this.inheritedFd = -1;
    if (this.path === null) {
      // stdout or stderr: never closed; a description of the writer's own is.
      if (inherited >= 0) fsClose(fd, noop);
      return;
    }
    if (fd < 0) return;
    if (inherited >= 0) fsClose(inherited, noop);
    await new Promise<void>((resolve, reject) => fsClose(fd, (err) => (err ? reject(err) : resolve())));
  }

  /** Writes go to `fd`, or for a pipe to a non-blocking description of it of the writer's own (see above). */
  private adopt(fd: number): void {
    const own = pipeOpenedNonBlocking(fd);
    this.fd = own >= 0 ? own : fd;
    this.inheritedFd = own >= 0 ? fd : -1;
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
      const oldInherited = this.inheritedFd;
      if (err) {
        // Keep writing to the old descriptor, if any; with none, what is queued fails (counted).
        this.onFailed(0, err);
        if (old < 0) this.failAll(err);
      } else {
        // A new file (rotated) starts with a whole line; the same file still ends inside the cut one.
        if (this.lineCut && !sameFile(old, fd)) this.lineCut = false;
        this.adopt(fd);
        closeOpen(old, oldInherited);
      }
      if (this.closed && this.fd >= 0) {
        closeOpen(this.fd, this.inheritedFd);
        this.fd = -1;
        this.inheritedFd = -1;
      }
      this.kick();
    });
  }

  /** Records pushed and not yet written whole (or failed). */
  get queuedRecords(): number {
    let n = 0;
    for (const c of this.counts) n += c;
    return this.bufs.length === 0 ? n : n - wholeRecords(this.bufs[0] as Buffer, this.offset);
  }

  /** Bytes pushed and not yet written (or failed). */
  get pendingBytes(): number {
    return this.queued;
  }

  /** True while writes run on the thread pool (neither a regular file nor a pipe of the writer's own, or after a slow write). */
  get onThreadPool(): boolean {
    return !(this.syncWrites || this.inheritedFd >= 0) || this.now() < this.asyncUntil;
  }

  /**
   * Writes what is queued: on the event loop, batch after batch, while writes are synchronous;
   * else starts the next thread-pool write. Then a pending reopen, or settles flush() waiters.
   */
  private kick(): void {
    while (!this.writing && !this.opening) {
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
      // After a cut record, its line is ended before the next batch (rare: a disk that filled up).
      this.endingLine = this.lineCut;
      const buf = this.endingLine ? LINE_END : this.bufs[0] as Buffer;
      const offset = this.endingLine ? 0 : this.offset;
      this.writing = true;
      if (this.onThreadPool) {
        fsWrite(this.fd, buf, offset, buf.length - offset, null, this.onWritten);
        return;
      }
      const t0 = this.now();
      let n = 0;
      let err: NodeJS.ErrnoException | null = null;
      try {
        n = writeSync(this.fd, buf, offset, buf.length - offset);
      } catch (e) {
        err = e as NodeJS.ErrnoException;
      }
      // A regular file takes at least one byte or fails; never spin on the event loop.
      if (err === null && n === 0) err = Object.assign(new Error('write(2) wrote nothing'), { code: 'EIO' });
      const ms = this.now() - t0;
      if (ms >= SLOW_WRITE_MS) {
        this.asyncUntil = t0 + ms + ASYNC_AFTER_SLOW_MS;
        this.onSlow(ms);
      }
      if (!this.account(err, n)) return;
      this.writing = false;
    }
  }

  private written(err: NodeJS.ErrnoException | null, n: number): void {
    if (!this.account(err, n)) return;
    this.writing = false;
    this.kick();
  }

  /** Books a write's outcome; false when it is retried later (EAGAIN: `writing` stays set). */
  private account(err: NodeJS.ErrnoException | null, n: number): boolean {
    const buf = this.bufs[0] as Buffer;
    if (err) {
      if (err.code === 'EAGAIN' && !this.closed) {
        this.retryTimer = setTimeout(this.onRetry, this.eagainDelayMs);
        this.eagainDelayMs = Math.min(this.eagainDelayMs * 2, RETRY_EAGAIN_MS);
        return false;
      }
      // Failed (also the line's end, which stays due): the batch is dropped, but for the records
      // a part written before this failure holds whole.
      const whole = this.endingLine ? 0 : wholeRecords(buf, this.offset);
      if (!this.endingLine && this.offset > 0 && buf[this.offset - 1] !== NEWLINE) this.lineCut = true;
      this.endingLine = false;
      this.queued -= buf.length - this.offset;
      this.offset = 0;
      this.bufs.shift();
      this.onFailed((this.counts.shift() as number) - whole, err);
    } else if (this.endingLine) {
      this.eagainDelayMs = 1;
      this.endingLine = false;
      this.lineCut = false;
    } else {
      this.eagainDelayMs = 1;
      this.offset += n;
      this.queued -= n;
      if (this.offset === buf.length) {
        this.offset = 0;
        this.bufs.shift();
        this.counts.shift();
      }
    }
    return true;
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

/** Closes what an open left: `fd` and, for a pipe opened again as the writer's own, `inherited` (-1: none). */
function closeOpen(fd: number, inherited: number): void {
  if (fd >= 0) fsClose(fd, noop);
  if (inherited >= 0) fsClose(inherited, noop);
}

/** Records (lines) that `buf`'s first `end` bytes hold whole. */
function wholeRecords(buf: Buffer, end: number): number {
  let n = 0;
  for (let i = buf.indexOf(NEWLINE); i >= 0 && i < end; i = buf.indexOf(NEWLINE, i + 1)) n++;
  return n;
}

/** Whether two descriptors are the same file (a reopen that found no rotation). */
function sameFile(a: number, b: number): boolean {
  if (a < 0) return false;
  try {
    const x = fstatSync(a);
    const y = fstatSync(b);
    return x.ino === y.ino && x.dev === y.dev;
  } catch {
    return false;
  }
}
