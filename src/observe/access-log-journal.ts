import { Buffer } from 'node:buffer';
import { connect, type Socket } from 'node:net';
import { performance } from 'node:perf_hooks';
import { FdWriter, type FailedBatch } from './access-log-fd-writer.js';
import type { BatchWriter } from './access-log-batch-writer.js';

/**
 * The access log to the systemd journal through a stream of the process's own (docs/access-log.md,
 * "Under systemd"). A service's stdout under systemd is a Unix stream socket to journald, shared by
 * every process of the service: written on the event loop it could cut one process's record with
 * another's, so it is written on the libuv thread pool (two thread wake-ups per write). Instead,
 * each process connects to journald's stream socket itself, as sd_journal_stream_fd(3) does, and
 * writes its batches there with non-blocking writes on the event loop: a connection nobody else
 * writes to cannot interleave records. journald takes the unit from the process's credentials.
 *
 * Batches wait while the connection is made. A connection that cannot be made (no journal at the
 * path, a sandbox that hides it) moves the writer to the inherited descriptor for good, as before
 * (FdWriter, on the thread pool), said once through `warn`. journald shuts its side of a stream for
 * writing as it accepts it, so the end of the journal (journald restarted or gone) is seen by the
 * next write, which fails (EPIPE): that batch and the ones behind it are not lost but sent again on
 * a new connection, said through `warn`. If the new one cannot be made, or the journal closed the
 * last one before it took a batch or within SHORT_LIVED_STREAM_MS of its opening (journald refusing
 * more streams), they and every later batch go to the inherited descriptor.
 */

/** SYSLOG_IDENTIFIER of the access records: `journalctl -t inference-router-access` selects them. */
export const JOURNAL_IDENTIFIER = 'inference-router-access';
/** syslog's LOG_INFO: the records' priority. */
const PRIORITY_INFO = 6;
/** A stream the journal closes sooner than this after it opened (journald refusing more streams) is not opened again. */
export const SHORT_LIVED_STREAM_MS = 1000;

/**
 * The stream's header, as sd_journal_stream_fd(3) writes it: the identifier, the unit id (empty:
 * journald reads the unit from the peer), the priority, no level prefixes (a record's first bytes
 * are never read as `<N>`), and no forwarding of its own to syslog, kmsg or the console (journald's
 * configuration still applies).
 */
export function journalStreamHeader(identifier: string): Buffer {
  return Buffer.from(`${identifier}\n\n${PRIORITY_INFO}\n0\n0\n0\n0\n`);
}

export interface JournalWriterOptions {
  /** The journal's stream socket (ACCESS_LOG_JOURNAL_SOCKET). */
  readonly path: string;
  /** The inherited descriptor (1 or 2) written to when no connection can be made. */
  readonly fd: number;
  /** What `fd` is called in warnings: stdout or stderr. */
  readonly output: string;
  /** Bound on bytes queued, including those the connection has not taken yet. */
  readonly maxQueued: number;
  readonly onFailed: FailedBatch;
  /** One line to the operator (the connection lost, made again, or given up for `fd`). */
  readonly warn: (msg: string) => void;
  /** SYSLOG_IDENTIFIER; default JOURNAL_IDENTIFIER. */
  readonly identifier?: string;
  /** Monotonic milliseconds, timing how long a stream lived. Default performance.now. */
  readonly now?: () => number;
}

export class JournalStreamWriter implements BatchWriter {
  private socket: Socket | null = null;
  private connected = false;
  /** The error that ended the current connection (its 'close' follows). */
  private lastError: Error | null = null;
  /** The current connection follows one the journal closed: if it cannot be made, the inherited descriptor is used. */
  private reconnecting = false;
  /** When the current connection was made (`now`); -1 while none is. */
  private connectedAt = -1;
  private fallback: FdWriter | null = null;
  /** Batches pushed while the connection is made. */
  private readonly waiting: Buffer[] = [];
  private readonly waitingCounts: number[] = [];
  /** The batches handed to the socket and their record counts, oldest first (its callbacks run in order). */
  private readonly sent: Buffer[] = [];
  private readonly sentCounts: number[] = [];
  /** A batch was taken by the current connection (a stream that took none and was closed is one journald refused). */
  private delivered = false;
  private queuedBytes = 0;
  private queuedCount = 0;
  private closed = false;
  private waiters: (() => void)[] = [];
  private readonly header: Buffer;
  private readonly now: () => number;

  private readonly onWritten = (err: Error | null | undefined): void => {
    const batch = this.sent.shift() as Buffer;
    const count = this.sentCounts.shift() as number;
    this.queuedBytes -= batch.length;
    this.queuedCount -= count;
    if (!err) this.delivered = true;
    // Not taken (the journal went away: EPIPE, or the stream was destroyed first): the next
    // stream takes it, or the inherited descriptor.
    else this.again(batch, count, asErrno(err));
    this.settle();
  };

  constructor(private readonly opts: JournalWriterOptions) {
    this.header = journalStreamHeader(opts.identifier ?? JOURNAL_IDENTIFIER);
    this.now = opts.now ?? (() => performance.now());
    this.connect();
  }

  push(batch: Buffer, records: number): boolean {
    if (this.fallback !== null) return this.fallback.push(batch, records);
    if (this.closed || this.queuedBytes + batch.length > this.opts.maxQueued) return false;
    this.queuedBytes += batch.length;
    this.queuedCount += records;
    if (this.connected) this.send(batch, records);
    else {
      this.waiting.push(batch);
      this.waitingCounts.push(records);
    }
    return true;
  }

  flush(): Promise<void> {
    if (this.queuedBytes === 0) return this.fallback === null ? Promise.resolve() : this.fallback.flush();
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  reopen(): void {
    // Nothing to reopen: the stream is not a file.
  }

  async close(): Promise<void> {
    if (this.closed) return;
    await this.flush();
    this.closed = true;
    const socket = this.socket;
    if (socket !== null) await new Promise<void>((resolve) => socket.end(resolve));
    if (this.fallback !== null) await this.fallback.close();
  }

  get queuedRecords(): number {
    return this.queuedCount + (this.fallback?.queuedRecords ?? 0);
  }

  /** True once the writer gave the journal's stream up for the inherited descriptor. */
  get onInheritedDescriptor(): boolean {
    return this.fallback !== null;
  }

  private connect(): void {
    this.connected = false;
    this.lastError = null;
    // journald shuts its side of the stream for writing at once (it never writes): the stream stays
    // open for ours. A journal gone away shows as a write that fails (EPIPE), its batch sent again.
    const socket = connect({ path: this.opts.path, allowHalfOpen: true });
    this.socket = socket;
    this.delivered = false;
    // The log never keeps a process alive; its shutdown flushes it first.
    socket.unref();
    socket.on('connect', () => {
      if (this.reconnecting) this.opts.warn(`access log: a stream to the journal at ${this.opts.path} is open again`);
      this.reconnecting = false;
      this.connected = true;
      this.connectedAt = this.now();
      socket.write(this.header);
      for (let i = 0; i < this.waiting.length; i++) this.send(this.waiting[i] as Buffer, this.waitingCounts[i] as number);
      this.waiting.length = 0;
      this.waitingCounts.length = 0;
    });
    // Nothing comes from journald but the end of its side, which is read and let be.
    socket.resume();
    socket.on('error', (err) => {
      this.lastError = err;
      // Batches from now on wait for the next stream.
      this.connected = false;
    });
    socket.on('close', () => this.lost(socket));
  }

  private send(batch: Buffer, records: number): void {
    this.sent.push(batch);
    this.sentCounts.push(records);
    (this.socket as Socket).write(batch, this.onWritten);
  }

  /** A batch the stream did not take: queued for the next stream, handed to the inherited descriptor, or (closed) failed. */
  private again(batch: Buffer, records: number, err: NodeJS.ErrnoException): void {
    if (this.closed) this.opts.onFailed(records, err);
    else if (this.fallback !== null) {
      if (!this.fallback.push(batch, records)) this.opts.onFailed(records, err);
    } else {
      this.queuedBytes += batch.length;
      this.queuedCount += records;
      this.waiting.push(batch);
      this.waitingCounts.push(records);
    }
  }

  /** The connection `socket` ended (or was never made). */
  private lost(socket: Socket): void {
    if (socket !== this.socket) return;
    this.socket = null;
    const wasConnected = this.connectedAt >= 0;
    const lived = this.now() - this.connectedAt;
    this.connectedAt = -1;
    this.connected = false;
    if (this.closed) return;
    const why = this.lastError?.message ?? 'the journal closed it';
    if (wasConnected && (lived < SHORT_LIVED_STREAM_MS || !this.delivered)) {
      this.useInherited(`${why}, ${this.delivered ? `${Math.round(lived)} ms after it was opened` : 'before it took a record'}`);
      return;
    }
    if (wasConnected) {
      this.opts.warn(`access log: the stream to the journal at ${this.opts.path} was closed (${why}); opening another`);
      this.reconnecting = true;
      this.connect();
      return;
    }
    this.useInherited(why);
  }

  /** No connection to the journal: what waits goes to the inherited descriptor, and every later batch. */
  private useInherited(why: string): void {
    this.opts.warn(`access log: cannot open a stream to the journal at ${this.opts.path} (${why}); ` +
      `writing to ${this.opts.output} on the thread pool instead`);
    this.fallback = new FdWriter(null, this.opts.fd, this.opts.maxQueued, this.opts.onFailed);
    const err = asErrno(this.lastError ?? new Error(why));
    for (let i = 0; i < this.waiting.length; i++) {
      const batch = this.waiting[i] as Buffer;
      const count = this.waitingCounts[i] as number;
      this.queuedBytes -= batch.length;
      this.queuedCount -= count;
      if (!this.fallback.push(batch, count)) this.opts.onFailed(count, err);
    }
    this.waiting.length = 0;
    this.waitingCounts.length = 0;
    this.settle();
  }

  /** Once nothing waits here, the waiters of flush() are settled (after the inherited descriptor's writes, if it is used). */
  private settle(): void {
    if (this.queuedBytes !== 0 || this.waiters.length === 0) return;
    const waiters = this.waiters;
    this.waiters = [];
    if (this.fallback === null) for (const w of waiters) w();
    else {
      const written = this.fallback.flush();
      for (const w of waiters) void written.then(w);
    }
  }
}

function asErrno(err: Error): NodeJS.ErrnoException {
  return err as NodeJS.ErrnoException;
}
