import { write as fsWrite } from 'node:fs';
import type { SonicBoom } from 'sonic-boom';
import type { AccessRecord } from './access-record.js';
import { RecordBatcher } from './access-log-batch.js';
import { formatJson, formatText } from './access-log-format.js';
import type { AccessLogSettings } from './access-log-settings.js';
import { openSink } from './access-log-sink.js';

/**
 * The access-log writer (docs/access-log.md). Records logged during one event-loop turn are
 * gathered into whole-record batches (each <= the sink's write size) and handed to sonic-boom
 * once per turn (setImmediate) or as soon as a batch is full; sonic-boom writes them
 * asynchronously. Queued bytes are bounded; records beyond the bound are dropped, counted and
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
  /** Records dropped because the sink did not keep up (or logged after close). */
  readonly dropped: number;
  /** Records accepted for writing; after flush() resolves they are all written. */
  readonly written: number;
}

export interface AccessLogOptions {
  /** Wall clock for the warning rate limit, ms. Default Date.now. */
  clock?: () => number;
  /** Where warnings go. Default: an asynchronous write to stderr (fd 2). */
  warn?: (msg: string) => void;
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
  dropped: 0,
  written: 0,
});

function warnToStderr(msg: string): void {
  // fs.write runs on the thread pool: a stalled stderr never blocks the event loop.
  fsWrite(2, msg + '\n', noop);
}

class SonicAccessLog implements AccessLog {
  readonly enabled = true;
  dropped = 0;
  written = 0;

  private readonly batcher: RecordBatcher;
  private scheduled = false;
  private closed = false;
  private closing: Promise<void> | null = null;
  /** Set by the sink's synchronous 'drop' event during write(). */
  private rejected = false;
  private droppedReported = 0;
  private lastDropWarn = Number.NEGATIVE_INFINITY;
  private lastErrorWarn = Number.NEGATIVE_INFINITY;
  private dropTimer: NodeJS.Timeout | null = null;

  private readonly onTick = (): void => {
    this.scheduled = false;
    this.batcher.flush();
  };
  private readonly onDropTimer = (): void => {
    this.dropTimer = null;
    this.reportDrops(true);
  };

  constructor(
    private readonly stream: SonicBoom,
    private readonly format: (r: AccessRecord) => string,
    maxBatchBytes: number,
    private readonly path: string | null,
    private readonly output: string,
    private readonly bufferBytes: number,
    private readonly clock: () => number,
    private readonly warn: (msg: string) => void,
  ) {
    this.batcher = new RecordBatcher(maxBatchBytes, (batch, records) => this.handOff(batch, records));
    stream.on('drop', () => { this.rejected = true; });
    stream.on('error', (err: Error) => this.onError(err));
  }

  log(r: AccessRecord): void {
    if (this.closed) {
      this.dropped++;
      return;
    }
    this.batcher.add(this.format(r));
    if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(this.onTick);
    }
  }

  /** Hands one batch (whole records, <= maxBatchBytes) to the sink in one write. */
  private handOff(batch: Buffer, records: number): void {
    this.rejected = false;
    // Buffer content mode: sonic-boom's write() takes Buffers (its typings only declare strings).
    (this.stream.write as unknown as (b: Buffer) => boolean).call(this.stream, batch);
    if (this.rejected) {
      this.dropped += records;
      this.reportDrops(false);
    } else {
      this.written += records;
    }
  }

  private reportDrops(force: boolean): void {
    const fresh = this.dropped - this.droppedReported;
    if (fresh === 0) return;
    const now = this.clock();
    if (force || now - this.lastDropWarn >= WARN_INTERVAL_MS) {
      this.lastDropWarn = now;
      this.droppedReported = this.dropped;
      this.warn(`access log: ${this.output} is not keeping up; dropped ${fresh} records ` +
        `(${this.dropped} since start; queue bound ${this.bufferBytes} bytes, ACCESS_LOG_BUFFER_BYTES)`);
    } else if (this.dropTimer === null && !this.closed) {
      // Report the rest when the minute is over, even if nothing else is dropped meanwhile.
      const wait = Math.min(WARN_INTERVAL_MS, Math.max(0, this.lastDropWarn + WARN_INTERVAL_MS - now));
      this.dropTimer = setTimeout(this.onDropTimer, wait);
      this.dropTimer.unref();
    }
  }

  private onError(err: Error): void {
    const now = this.clock();
    if (now - this.lastErrorWarn < WARN_INTERVAL_MS) return;
    this.lastErrorWarn = now;
    this.warn(`access log: writing to ${this.output} failed: ${err.message}`);
  }

  flush(): Promise<void> {
    if (this.closed) return this.closing ?? Promise.resolve();
    this.batcher.flush();
    return new Promise((resolve, reject) => {
      this.stream.flush((err?: Error) => (err ? reject(err) : resolve()));
    });
  }

  reopen(): void {
    if (this.path === null || this.closed) return;
    try {
      this.stream.reopen();
    } catch (err) {
      this.onError(err as Error);
    }
  }

  close(): Promise<void> {
    if (this.closing !== null) return this.closing;
    this.batcher.flush();
    this.closed = true;
    if (this.dropTimer !== null) {
      clearTimeout(this.dropTimer);
      this.dropTimer = null;
    }
    this.reportDrops(true);
    this.closing = new Promise((resolve, reject) => {
      const onError = (err: Error): void => reject(err);
      this.stream.once('error', onError);
      this.stream.once('close', () => {
        this.stream.off('error', onError);
        resolve();
      });
      this.stream.end();
    });
    return this.closing;
  }
}

/** Creates the writer for `s`; a disabled log is a shared no-op object. Throws when a file output cannot be opened. */
export function createAccessLog(s: AccessLogSettings, opts: AccessLogOptions = {}): AccessLog {
  if (!s.enabled) return DISABLED;
  const sink = openSink(s.output, s.bufferBytes);
  return new SonicAccessLog(
    sink.stream,
    s.format === 'json' ? formatJson : formatText,
    sink.batchBytes,
    sink.path,
    s.output,
    s.bufferBytes,
    opts.clock ?? Date.now,
    opts.warn ?? warnToStderr,
  );
}
