/**
 * Keeps a worker out of the loop a full descriptor table puts it in. uWebSockets.js accepts on a
 * level-triggered listener: once the process has no file descriptor free, every accept fails
 * (EMFILE) while the connection stays queued, so the poll reports the listener again at once and
 * the worker spins a CPU, answering nothing new, until connections close.
 *
 * The guard holds a few descriptors in reserve and, each tick, opens one more (`/dev/null`) to see
 * whether any is free. When none is, it closes the worker's listener (the other workers, which
 * share the port, take new connections; with none listening the kernel refuses them) and gives the
 * reserve back, so the requests in flight can still open connections to pods and write their
 * records. When as many as it gave back and a reserve beside them can be opened (connections
 * closed), it listens again. One open and close
 * per tick: nothing measurable on the request path (docs/deploy.md#file-descriptors).
 */
import { closeSync, openSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { startTicking, stopTicking, type Ticking } from '../interval-ticker.js';

/** Opens and closes descriptors: the file system by default, a fake in tests. */
export interface DescriptorSource {
  /** A new descriptor; throws (EMFILE, ENFILE, …) when none can be had. */
  open(): number;
  close(fd: number): void;
}

const DEV_NULL: DescriptorSource = {
  open: () => openSync('/dev/null', 'r'),
  close: (fd) => closeSync(fd),
};

export interface DescriptorGuardOptions {
  /**
   * Descriptors held back for the requests in flight while the listener is closed, for the limit
   * now (read at start, at each pause and while paused: a limit lowered at run time lowers it).
   */
  reserve: () => number;
  /** The process's open-file limit now, for the log line (read when it is written); null when unknown. */
  limit: () => number | null;
  everyMs: number;
  /** Closes the worker's listener. */
  pause(): void;
  /** Opens it again; false when it could not (tried again next tick). */
  resume(): boolean;
  /** A pause (each one, for the metric). */
  paused?(): void;
  log(level: 'info' | 'warn', message: string): void;
  now?: () => number;
  source?: DescriptorSource;
}

const NONE_FREE = -1;
const CANNOT_TELL = -2;

/** A pause is logged at most this often; the pauses between are counted in the next line. */
const LOG_EVERY_MS = 60_000;

export class DescriptorGuard implements Ticking {
  private readonly o: DescriptorGuardOptions;
  private readonly source: DescriptorSource;
  private readonly now: () => number;
  private held: number[] = [];
  /** The reserve as last read (reserve()). */
  private reserve = 0;
  /** Descriptors of the reserve given back at the last pause. */
  private released = 0;
  private pausedNow = false;
  private loggedAt = -Infinity;
  /** Pauses since the last pause line. */
  private unlogged = 0;
  /** Whether the pause that is on was logged (its end is, then). */
  private pauseLogged = false;
  private started = false;

  constructor(o: DescriptorGuardOptions) {
    this.o = o;
    this.source = o.source ?? DEV_NULL;
    this.now = o.now ?? (() => performance.now());
  }

  /** Whether the listener is closed for want of descriptors. */
  get paused(): boolean {
    return this.pausedNow;
  }

  /** Takes the reserve (what can be had of it) and starts the ticks. */
  start(): void {
    if (this.started) return;
    this.started = true;
    this.reserve = this.o.reserve();
    this.held = this.openUpTo(this.reserve);
    startTicking(this, this.o.everyMs);
  }

  /** Stops the ticks and gives the reserve back; the listener is left as it is (the caller closes it). */
  stop(): void {
    if (!this.started) return;
    this.started = false;
    stopTicking(this, this.o.everyMs);
    this.release();
  }

  advance(): void {
    if (!this.pausedNow) this.checkFree();
    else this.checkResume();
  }

  private checkFree(): void {
    const fd = this.tryOpen();
    if (fd === CANNOT_TELL) {
      this.stop();
      this.o.log('warn', 'cannot open /dev/null to watch the file descriptors left; a worker that runs out of them is not paused');
      return;
    }
    if (fd >= 0) {
      this.source.close(fd);
      // A reserve not whole (taken short at start, or given back) is filled again while there is room.
      if (this.held.length < this.reserve) this.held.push(...this.openUpTo(this.reserve - this.held.length));
      return;
    }
    this.pausedNow = true;
    this.o.pause();
    this.released = this.held.length;
    this.release();
    this.o.paused?.();
    this.unlogged++;
    const now = this.now();
    this.pauseLogged = now - this.loggedAt >= LOG_EVERY_MS;
    if (!this.pauseLogged) return;
    const times = this.unlogged > 1 ? ` (${this.unlogged} times since the last such line)` : '';
    this.loggedAt = now;
    this.unlogged = 0;
    const limit = this.o.limit();
    this.o.log('warn', `no file descriptor free${limit === null ? '' : ` (the open-file limit is ${limit})`}: ` +
      `this worker stopped accepting connections${times}; the other workers take them, and the requests in flight go on. ` +
      'It accepts again once connections close; raise the limit (ulimit -n, systemd LimitNOFILE) if this recurs');
  }

  private checkResume(): void {
    // Back when connections closed: as many descriptors free as were given back at the pause, and
    // the reserve (for the limit now: a limit lowered at run time lowers it) beside them.
    this.reserve = this.o.reserve();
    const want = this.released + this.reserve;
    const fds = this.openUpTo(want);
    if (fds.length < want || !this.o.resume()) {
      for (const fd of fds) this.source.close(fd);
      return;
    }
    this.held = fds.slice(0, this.reserve);
    for (const fd of fds.slice(this.reserve)) this.source.close(fd);
    this.pausedNow = false;
    if (this.pauseLogged) this.o.log('info', 'file descriptors free again: this worker accepts connections again');
  }

  private openUpTo(n: number): number[] {
    const fds: number[] = [];
    for (let i = 0; i < n; i++) {
      const fd = this.tryOpen();
      if (fd < 0) break; // NONE_FREE or CANNOT_TELL: as many as could be had
      fds.push(fd);
    }
    return fds;
  }

  /** A descriptor; NONE_FREE when the process or the system has none (EMFILE, ENFILE); CANNOT_TELL for another failure. */
  private tryOpen(): number {
    try {
      return this.source.open();
    } catch (err) {
      const code = (err as { code?: string }).code;
      return code === 'EMFILE' || code === 'ENFILE' ? NONE_FREE : CANNOT_TELL;
    }
  }

  private release(): void {
    for (const fd of this.held) this.source.close(fd);
    this.held = [];
  }
}

/** The reserve for an open-file limit: 1/128 of it, 8 to 64. */
export function descriptorReserve(limit: number | null): number {
  return limit === null ? 16 : Math.min(64, Math.max(8, Math.floor(limit / 128)));
}
