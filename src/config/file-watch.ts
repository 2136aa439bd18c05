/**
 * Tells a file's reader when the file may have changed, without waking the process while nothing
 * happens: an inotify watch (`fs.watch`) on the file itself (through a symlink, on its target),
 * armed again after each event, so that it follows a file replaced by an editor's rename-on-save or
 * by a Kubernetes ConfigMap's `..data` symlink swap. Other files of the directory (an access log
 * written beside it) do not wake it. A burst of events (a save is often several writes) is
 * reported once, SETTLE_MS after its last event.
 *
 * A slow stat poll (SAFETY_POLL_MS) catches what inotify does not report: a network filesystem
 * changed from another machine, a symlink swapped without its old target being removed. While the
 * file is missing (removed, to be written again), and where no watch can be set up at all (no
 * inotify, its limits reached), it polls at the fast interval instead, as the reader did before;
 * the safety poll is stopped while the file is missing, so that a removal is reported once. Once the
 * watch could not be set up on a file that is there (inotify watches used up, ENOSPC: the user's
 * `fs.inotify.max_user_watches`, shared by every process of that user, in other containers too), it
 * polls from then on, says so once in the log, and a file written back while it was missing is
 * reported: the poll starts then, and would take the file as it is back for its first stat. As at
 * start, a poll just started reports once more after two fast intervals (a file written back in
 * several writes, the reader reading the first).
 *
 * `start()` reports once when the watch is in place, because the reader reads the file before it
 * starts the watch, and a change landing in between would otherwise go unseen: on the next turn for
 * an inotify watch (set up synchronously), after two fast intervals for a poll or a missing file (a
 * poll's first stat is taken asynchronously, and a change before it looks like no change to it).
 *
 * `onChange` may be called when nothing changed: the reader compares what it reads.
 */
import { type FSWatcher, unwatchFile, watch, watchFile } from 'node:fs';
import { resolve } from 'node:path';

/** Quiet time after the last event before the change is reported. */
export const SETTLE_MS = 100;
/** Poll interval beside a working watch (changes inotify cannot see). */
export const SAFETY_POLL_MS = 5_000;

/** `inotify`: a watch on the file, and the safety poll; `missing`: the file is gone, looked for every fast interval until it is back; `poll`: no watch works here. */
export type WatchMode = 'inotify' | 'missing' | 'poll';

/** What is injected in tests: the watch function (one that throws stands for a filesystem without inotify). */
export type WatchFn = (file: string, listener: () => void) => FSWatcher;

export interface FileWatchOptions {
  /** Poll interval when no watch can be set up, ms. */
  readonly fastPollMs: number;
  /** Poll interval beside a working watch, ms (default SAFETY_POLL_MS). */
  readonly safetyPollMs?: number;
  /** Quiet time before a burst of events is reported, ms (default SETTLE_MS). */
  readonly settleMs?: number;
  readonly watchFn?: WatchFn;
  /** Told once, when the file is polled because no watch can be set up (and why). */
  readonly log?: (m: string) => void;
}

const defaultWatch: WatchFn = (file, listener) => watch(file, { persistent: false }, listener);

export class FileWatch {
  readonly file: string;
  private readonly onChange: () => void;
  private readonly o: Required<FileWatchOptions>;
  private watcher: FSWatcher | null = null;
  private settleTimer: NodeJS.Timeout | null = null;
  /** While the file is missing: tries the watch again every fast interval. */
  private retryTimer: NodeJS.Timeout | null = null;
  /** The report of start(), or of a poll just started (see the class comment), until it is made. */
  private armedTimer: NodeJS.Timeout | null = null;
  private pollMs = 0;
  private stopped = false;
  /** Why the file is polled has been logged. */
  private pollTold = false;
  mode: WatchMode = 'poll';

  constructor(file: string, onChange: () => void, opts: FileWatchOptions) {
    this.file = resolve(file);
    this.onChange = onChange;
    this.o = { safetyPollMs: SAFETY_POLL_MS, settleMs: SETTLE_MS, watchFn: defaultWatch, log: ignore, ...opts };
  }

  /** Arms the watch, and reports once when it is in place (see the class comment). */
  start(): void {
    this.rearm();
    this.reportAfter(this.mode === 'inotify' ? 0 : 2 * this.o.fastPollMs);
  }

  /** Reports once, `ms` from now (a report already waiting is made then instead). */
  private reportAfter(ms: number): void {
    if (this.armedTimer !== null) clearTimeout(this.armedTimer);
    this.armedTimer = setTimeout(this.armed, ms);
    this.armedTimer.unref();
  }

  private readonly armed = (): void => {
    this.armedTimer = null;
    if (!this.stopped) this.onChange();
  };

  stop(): void {
    this.stopped = true;
    this.closeWatch();
    if (this.settleTimer !== null) clearTimeout(this.settleTimer);
    this.settleTimer = null;
    this.stopRetry();
    if (this.armedTimer !== null) clearTimeout(this.armedTimer);
    this.armedTimer = null;
    this.stopPoll();
  }

  /**
   * (Re)arms the watch on the file as the path now resolves; the mode follows from what works.
   * Returns whether the file is watched. A missing file is looked for by trying the watch again,
   * not by a stat poll: a poll's first stat is taken later, and a file written back before it
   * would look unchanged to it.
   */
  private rearm(): boolean {
    this.closeWatch();
    try {
      const w = this.o.watchFn(this.file, this.eventSeen);
      w.on('error', this.eventSeen); // the watched file went away under it: armed again once settled
      this.watcher = w;
      this.mode = 'inotify';
      this.stopRetry();
      this.poll(this.o.safetyPollMs);
      return true;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') {
        this.mode = 'missing';
        // The fast retry looks for the file now: the safety poll would report the removal again.
        this.stopPoll();
        if (this.retryTimer === null) {
          this.retryTimer = setInterval(this.retryMissing, this.o.fastPollMs);
          this.retryTimer.unref();
        }
      } else {
        this.mode = 'poll';
        this.stopRetry();
        if (this.pollMs !== this.o.fastPollMs) {
          // Polled from now on. The poll's first stat is taken later: a change landing between the
          // reader's read (which follows) and that stat would look like no change to it.
          this.reportAfter(2 * this.o.fastPollMs);
        }
        this.poll(this.o.fastPollMs);
        this.tellPolled(err as NodeJS.ErrnoException);
      }
      return false;
    }
  }

  /**
   * The file was missing: once it is back it is watched again and reported. Back but not watchable
   * (watches used up meanwhile): reported all the same, since the poll started now takes the file as
   * it is back for its first stat, and would not see it as a change.
   */
  private readonly retryMissing = (): void => {
    if (this.stopped) return;
    if (this.rearm() || this.mode === 'poll') this.onChange();
  };

  /** Stops looking for a missing file (it is back, watched or polled, or the watch stopped). */
  private stopRetry(): void {
    if (this.retryTimer !== null) clearInterval(this.retryTimer);
    this.retryTimer = null;
  }

  /** Logs once why the file is polled. */
  private tellPolled(err: NodeJS.ErrnoException): void {
    if (this.pollTold) return;
    this.pollTold = true;
    this.o.log(`${this.file}: cannot watch the file, ${whyNoWatch(err)}; checking it for changes every ${this.o.fastPollMs} ms instead (a stat poll), from now on`);
  }

  private closeWatch(): void {
    if (this.watcher === null) return;
    this.watcher.removeAllListeners('error');
    this.watcher.on('error', ignore);
    this.watcher.close();
    this.watcher = null;
  }

  private readonly eventSeen = (): void => {
    if (this.stopped) return;
    if (this.settleTimer !== null) clearTimeout(this.settleTimer);
    this.settleTimer = setTimeout(this.settled, this.o.settleMs);
    this.settleTimer.unref();
  };

  /** A burst of events is over. */
  private readonly settled = (): void => {
    this.settleTimer = null;
    this.changed();
  };

  /**
   * A burst of events settled, or a poll saw a change: the watch may be on a file the path no
   * longer leads to (another inode after a rename-on-save, a symlink swapped, the file gone or
   * back), so it is armed again on the file as the path now resolves; then the change is reported.
   */
  private readonly changed = (): void => {
    if (this.stopped) return;
    // A poll that saw the change first: the burst the watch is settling is this one, reported now.
    if (this.settleTimer !== null) clearTimeout(this.settleTimer);
    this.settleTimer = null;
    if (this.mode !== 'poll') this.rearm();
    this.onChange();
  };

  private poll(ms: number): void {
    if (this.pollMs === ms) return;
    this.stopPoll();
    this.pollMs = ms;
    watchFile(this.file, { interval: ms, persistent: false }, this.changed);
  }

  private stopPoll(): void {
    if (this.pollMs > 0) unwatchFile(this.file, this.changed);
    this.pollMs = 0;
  }
}

function ignore(): void {}

/** Why fs.watch failed, with the limit to raise where there is one. */
function whyNoWatch(err: NodeJS.ErrnoException): string {
  if (err.code === 'ENOSPC') return 'inotify watches are used up (ENOSPC, fs.inotify.max_user_watches)';
  if (err.code === 'EMFILE') return 'inotify instances or open files are used up (EMFILE, fs.inotify.max_user_instances or the open-file limit)';
  return `fs.watch failed (${err.message})`;
}
