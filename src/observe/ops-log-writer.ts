/**
 * Writes operational log lines to stderr, each with one write(2) of at most PIPE_BUF bytes, so the
 * primary's and the workers' lines stay whole on the one pipe they share.
 *
 * Why not process.stderr.write: stderr to a pipe is non-blocking under Node; when the pipe is full
 * (a log collector that reads slowly) Node queues the lines and later writes them with one
 * writev(2) of many lines, which the kernel may split anywhere past PIPE_BUF, another process's
 * line landing in the middle (measured with strace: EAGAIN, then writev of 232 + 4081 + … bytes).
 *
 * Here a line is written at once while nothing waits before it (so a line logged just before a
 * crash is out), else queued in order and retried every RETRY_MS; on a pipe a write of at most
 * PIPE_BUF is whole or not at all (EAGAIN). The queue is bounded (MAX_QUEUED_BYTES): past it lines
 * are dropped and counted, and the count is written when the queue empties. At exit what is
 * queued is written synchronously, waiting for the reader up to EXIT_WAIT_MS.
 */
import { Buffer } from 'node:buffer';
import { writeSync } from 'node:fs';

const RETRY_MS = 10;
export const MAX_QUEUED_BYTES = 1024 * 1024;
export const EXIT_WAIT_MS = 2000;

export class StderrLines {
  private readonly queue: Buffer[] = [];
  private queuedBytes = 0;
  private dropped = 0;
  private timer: NodeJS.Timeout | null = null;
  private exitHooked = false;
  private readonly onRetry = (): void => {
    this.timer = null;
    this.drain();
  };

  /**
   * The line saying that `dropped` lines were dropped; OpsLog sets it to a line of its format (a
   * JSON log stays JSON for the collector that parses it).
   */
  droppedLine: (dropped: number) => string = (dropped) => `${new Date().toISOString()} warn ops-log: ${droppedMessage(dropped)}\n`;

  constructor(private readonly fd = 2) {}

  /** One whole line (at most PIPE_BUF bytes, its newline included). */
  write(line: string): void {
    const buf = Buffer.from(line);
    if (this.queue.length > 0) {
      this.enqueue(buf);
      return;
    }
    const n = this.tryWrite(buf);
    if (n === buf.length) return;
    this.enqueue(n > 0 ? buf.subarray(n) : buf); // a short write (a file at its size limit): the rest, once
  }

  /** Bytes written (whole, or what a short write to a file took), -1 for EAGAIN; other errors drop the line. */
  private tryWrite(buf: Buffer): number {
    try {
      return writeSync(this.fd, buf);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'EAGAIN') return -1;
      return buf.length; // stderr is gone or broken: nothing to tell anyone
    }
  }

  /** Tries the queue again in RETRY_MS (once: a retry already due stands). */
  private retryLater(): void {
    if (this.timer !== null) return;
    this.timer = setTimeout(this.onRetry, RETRY_MS);
    this.timer.unref();
  }

  private enqueue(buf: Buffer): void {
    if (this.queuedBytes + buf.length > MAX_QUEUED_BYTES) {
      this.dropped++;
      return;
    }
    this.queue.push(buf);
    this.queuedBytes += buf.length;
    this.retryLater();
    if (!this.exitHooked) {
      this.exitHooked = true;
      process.once('exit', () => this.flushAtExit());
    }
  }

  /** Writes what the reader takes now; true when the queue is empty. */
  private drain(): boolean {
    while (this.queue.length > 0) {
      const buf = this.queue[0];
      const n = this.tryWrite(buf);
      if (n < 0) {
        this.retryLater();
        return false;
      }
      if (n < buf.length) {
        this.queue[0] = buf.subarray(n); // a short write to a file (a full disk): the rest next
        this.queuedBytes -= n;
        continue;
      }
      this.queue.shift();
      this.queuedBytes -= buf.length;
    }
    if (this.dropped > 0) {
      const note = Buffer.from(this.droppedLine(this.dropped));
      this.dropped = 0;
      if (this.tryWrite(note) < 0) this.enqueue(note);
    }
    return this.queue.length === 0;
  }

  private flushAtExit(): void {
    const until = Date.now() + EXIT_WAIT_MS;
    const pause = new Int32Array(new SharedArrayBuffer(4));
    while (!this.drain() && Date.now() < until) Atomics.wait(pause, 0, 0, 5);
  }
}

export function droppedMessage(dropped: number): string {
  return `${dropped} operational log line(s) dropped: stderr was not read`;
}

/** The process's one writer of stderr lines. */
let shared: StderrLines | null = null;

export function stderrLines(): StderrLines {
  if (shared === null) {
    // The EAGAIN path above needs fd 2 non-blocking. A pipe from the parent (a container runtime,
    // a shell) is blocking until Node opens process.stderr on it (libuv sets O_NONBLOCK then); until
    // then a write to a pipe the reader does not empty stops the event loop. Opened here rather than
    // left to whichever module reads process.stderr first (today a dependency of the workers).
    // A terminal is set blocking instead (writes to it are fast), a file needs neither.
    void process.stderr;
    shared = new StderrLines();
  }
  return shared;
}
