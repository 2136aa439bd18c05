import { write as fsWrite } from 'node:fs';
import type { AccessRecord } from './access-record.js';
import { RecordBatcher } from './access-log-batch.js';
import { ASYNC_AFTER_SLOW_MS, FdWriter } from './access-log-fd-writer.js';
import type { BatchWriter } from './access-log-batch-writer.js';
import { JournalStreamWriter } from './access-log-journal.js';
import { formatJson, formatText, lastLineAscii } from './access-log-format.js';
import { writeJsonRecord, writeTextRecord } from './access-log-line-bytes.js';
import type { AccessLogSettings } from './access-log-settings.js';
import { openSink, type Sink } from './access-log-sink.js';

/**
 * The access-log writer (docs/access-log.md; internals in docs/internals/access-log.md). Records are gathered into whole-record batches
 * (each <= the sink's write size); a batch is handed to the fd writer as soon as it is full, or
 * when the flush interval since its first record is over (with interval 0: at the end of the
 * event-loop turn), and written with one write(2) (to a regular file or a pipe on the event loop,
 * else on the thread pool: access-log-fd-writer.ts; to the systemd journal through a stream of the
 * process's own: access-log-journal.ts). Queued bytes are bounded;
 * records beyond the bound, and records of a batch whose write failed, are dropped, counted and
 * reported on stderr at most once a minute.
 */
export interface AccessLog {
  /** False when ACCESS_LOG_ENABLED=false: callers can skip building records. */
  readonly enabled: boolean;
  log(r: AccessRecord): void;
  /** Writes every queued record; resolves when they are written. */
  flush(): Promise<void>;
  /** Reopens a file output (after logrotate renamed it); no-op for stdout/stderr. */
  reopen(): void;
  /** Flushes, then closes the sink. Records logged afterwards are dropped and counted. */
  close(): Promise<void>;
  /**
   * For a process that exits without flush() or close() having finished (an output that did not
   * take what is queued in time): counts the records still queued as dropped and reports them,
   * with the drops not reported yet. Resolves once the report is written to stderr.
   */
  abandon(): Promise<void>;
  /** Records dropped because the sink did not keep up, its write failed, or they came after close. */
  readonly dropped: number;
  /** Records accepted for writing and not failed; after flush() resolves they are all written. */
  readonly written: number;
}

export interface AccessLogOptions {
  /** Wall clock for the warning rate limit, ms. Default Date.now. */
  clock?: () => number;
  /** Where warnings go. Default: an asynchronous write to stderr (fd 2), resolved once written. */
  warn?: (msg: string) => void | Promise<void>;
  /** Monotonic ms clock timing the writes to a regular file. Default performance.now. */
  now?: () => number;
  /** Where JOURNAL_STREAM is read. Default process.env. */
  env?: NodeJS.ProcessEnv;
}

/** Warnings about drops and sink errors: at most one of each per minute. */
export const WARN_INTERVAL_MS = 60_000;

const noop = (): void => {};
const resolved = (): Promise<void> => Promise.resolve();

const DISABLED: AccessLog = Object.freeze({
  enabled: false,
  log: noop,
  flush: resolved,
  reopen: noop,
  close: resolved,
  abandon: resolved,
  dropped: 0,
  written: 0,
});

function warnToStderr(msg: string): Promise<void> {
  // fs.write runs on the thread pool: a stalled stderr never blocks the event loop.
  return new Promise((resolve) => fsWrite(2, msg + '\n', () => resolve()));
}

class BatchingAccessLog implements AccessLog {
  readonly enabled = true;
  dropped = 0;
  written = 0;

  private readonly batcher: RecordBatcher;
  private readonly writer: BatchWriter;
  /** A timer (interval > 0) or a setImmediate (interval 0) is pending for the current batch. */
  private scheduled = false;
  private timer: NodeJS.Timeout | null = null;
  private closed = false;
  private closing: Promise<void> | null = null;
  private droppedReported = 0;
  /** Of `dropped`, records logged after close (reported as such, not as "not keeping up"). */
  private droppedClosed = 0;
  private lastDropWarn = Number.NEGATIVE_INFINITY;
  private lastErrorWarn = Number.NEGATIVE_INFINITY;
  private dropTimer: NodeJS.Timeout | null = null;
  /** Records dropped by failed writes since the last warning of a failure, and the last failure's message ('' when none since). */
  private failedUnsaid = 0;
  private lastFailure = '';
  private failTimer: NodeJS.Timeout | null = null;

  private readonly onTick = (): void => {
    this.scheduled = false;
    this.batcher.flush();
  };
  private readonly onDropTimer = (): void => {
    this.dropTimer = null;
    this.reportDrops(true);
  };
  private readonly onFailTimer = (): void => {
    this.failTimer = null;
    this.reportFailures();
  };

  private readonly path: string | null;

  constructor(
    sink: Sink,
    private readonly format: (r: AccessRecord) => string,
    /** Writes a usual record's line straight into the batch (access-log-line-bytes.ts); null: always `format`. */
    private readonly write: ((r: AccessRecord, buf: Buffer, at: number) => number) | null,
    private readonly output: string,
    private readonly bufferBytes: number,
    private readonly flushIntervalMs: number,
    private readonly clock: () => number,
    private readonly warn: (msg: string) => void | Promise<void>,
    now: (() => number) | undefined,
  ) {
    this.path = sink.path;
    this.batcher = new RecordBatcher(sink.batchBytes, (batch, records) => this.handOff(batch, records));
    const onFailed = (records: number, err: NodeJS.ErrnoException): void => this.onFailed(records, err);
    this.writer = sink.journalSocket !== null
      ? new JournalStreamWriter({ path: sink.journalSocket, fd: sink.fd, output, maxQueued: bufferBytes, onFailed, warn: (msg) => void this.warn(msg) })
      : new FdWriter(sink.path, sink.fd, bufferBytes, onFailed, {
        syncWrites: sink.regularFile,
        now,
        onSlow: (ms) => this.warn(`access log: a write to ${this.output} took ${Math.round(ms)} ms; ` +
          `writing on the thread pool for the next ${ASYNC_AFTER_SLOW_MS / 1000} s`),
      });
  }

  log(r: AccessRecord): void {
    if (this.closed) {
      this.dropped++;
      this.droppedClosed++;
      return;
    }
    if (this.write === null || !this.batcher.addWritten(r, this.write)) this.batcher.add(this.format(r), lastLineAscii());
    this.written++;
    if (!this.scheduled) this.schedule();
  }

  private schedule(): void {
    this.scheduled = true;
    if (this.flushIntervalMs === 0) {
      setImmediate(this.onTick);
    } else if (this.timer === null) {
      this.timer = setTimeout(this.onTick, this.flushIntervalMs);
      this.timer.unref();
    } else {
      this.timer.refresh(); // re-arms the same timer: no allocation per batch
    }
  }

  /** Hands one batch (whole records, <= maxBatchBytes) to the writer. */
  private handOff(batch: Buffer, records: number): void {
    if (!this.writer.push(batch, records)) {
      this.written -= records;
      this.dropped += records;
      this.reportDrops(false);
    }
  }

  /**
   * A batch's write failed (or the file could not be reopened, records = 0): count, and warn at
   * most once a minute. Failures within the minute after a warning are said when it is over (or
   * at close), with the records they dropped, so every dropped record is in a warning.
   */
  private onFailed(records: number, err: NodeJS.ErrnoException): void {
    this.written -= records;
    this.dropped += records;
    // These drops are reported here, not as "not keeping up".
    this.droppedReported += records;
    this.failedUnsaid += records;
    this.lastFailure = err.message;
    const now = this.clock();
    if (now - this.lastErrorWarn >= WARN_INTERVAL_MS) {
      this.sayFailure();
    } else if (this.failTimer === null && !this.closed && this.failedUnsaid > 0) {
      this.failTimer = setTimeout(this.onFailTimer, Math.max(0, this.lastErrorWarn + WARN_INTERVAL_MS - now));
      this.failTimer.unref();
    }
  }

  /** The failures not said yet, when they dropped records (the minute after a warning is over, or the log closes). */
  private reportFailures(): void | Promise<void> {
    if (this.failedUnsaid > 0) return this.sayFailure();
  }

  private sayFailure(): void | Promise<void> {
    const records = this.failedUnsaid;
    const message = this.lastFailure;
    this.lastErrorWarn = this.clock();
    this.failedUnsaid = 0;
    this.lastFailure = '';
    return this.warn(`access log: writing to ${this.output} failed: ${message}` +
      (records > 0 ? `; dropped ${records} records (${this.dropped} since start)` : ''));
  }

  /** Records logged after close (a request that ended after the drain): said once, as what they are. */
  private reportClosedDrops(): void | Promise<void> {
    if (this.droppedClosed === 0) return;
    this.droppedReported += this.droppedClosed;
    const written = this.warn(`access log: dropped ${this.droppedClosed} records of requests that ended after the log was closed ` +
      `(the router was stopping; ${this.dropped} dropped since start)`);
    this.droppedClosed = 0;
    return written;
  }

  private reportDrops(force: boolean): void | Promise<void> {
    const fresh = this.dropped - this.droppedReported - this.droppedClosed;
    if (fresh <= 0) return;
    const now = this.clock();
    if (force || now - this.lastDropWarn >= WARN_INTERVAL_MS) {
      this.lastDropWarn = now;
      this.droppedReported = this.dropped;
      return this.warn(`access log: ${this.output} is not keeping up; dropped ${fresh} records ` +
        `(${this.dropped} since start; queue bound ${this.bufferBytes} bytes, ACCESS_LOG_BUFFER_BYTES)`);
    } else if (this.dropTimer === null && !this.closed) {
      // Report the rest when the minute is over, even if nothing else is dropped meanwhile.
      const wait = Math.min(WARN_INTERVAL_MS, Math.max(0, this.lastDropWarn + WARN_INTERVAL_MS - now));
      this.dropTimer = setTimeout(this.onDropTimer, wait);
      this.dropTimer.unref();
    }
  }

  flush(): Promise<void> {
    if (this.closed) return this.closing ?? Promise.resolve();
    this.batcher.flush();
    return this.writer.flush();
  }

  reopen(): void {
    if (this.path === null || this.closed) return;
    this.writer.reopen();
  }

  abandon(): Promise<void> {
    if (!this.closed) this.batcher.flush();
    const reports = [this.reportFailures(), this.reportDrops(true), this.reportClosedDrops()];
    const lost = this.writer.queuedRecords;
    if (lost > 0) {
      this.written -= lost;
      this.dropped += lost;
      this.droppedReported += lost;
      reports.push(this.warn(`access log: ${this.output} did not take the records queued for it before the process exited; ` +
        `dropped ${lost} records (${this.dropped} since start)`));
    }
    return Promise.all(reports).then(noop);
  }

  close(): Promise<void> {
    if (this.closing !== null) return this.closing;
    this.batcher.flush();
    this.closed = true;
    if (this.timer !== null) clearTimeout(this.timer);
    if (this.dropTimer !== null) {
      clearTimeout(this.dropTimer);
      this.dropTimer = null;
    }
    if (this.failTimer !== null) {
      clearTimeout(this.failTimer);
      this.failTimer = null;
    }
    this.reportDrops(true);
    this.closing = this.writer.close()
      .then(() => Promise.all([this.reportFailures(), this.reportDrops(true), this.reportClosedDrops()]))
      .then(noop);
    return this.closing;
  }
}

/** Creates the writer for `s`; a disabled log is a shared no-op object. Throws when a file output cannot be opened. */
export function createAccessLog(s: AccessLogSettings, opts: AccessLogOptions = {}): AccessLog {
  if (!s.enabled) return DISABLED;
  const sink = openSink(s.output, s.journalSocket, opts.env);
  return new BatchingAccessLog(
    sink,
    s.format === 'json' ? formatJson : formatText,
    s.format === 'json' ? writeJsonRecord : writeTextRecord,
    s.output,
    s.bufferBytes,
    s.flushIntervalMs,
    opts.clock ?? Date.now,
    opts.warn ?? warnToStderr,
    opts.now,
  );
}
