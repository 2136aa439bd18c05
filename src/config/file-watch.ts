/**
 * Tells a file's reader when the file may have changed, without waking the process while nothing
 * happens: an inotify watch (`fs.watch`) on the file's directory, which sees writes in place,
 * editors' rename-on-save and a Kubernetes ConfigMap's `..data` symlink swap, and on the
 * directory of the file the path resolves to when that is elsewhere (a symlink). A burst of
 * events (a save is often several writes) is reported once, SETTLE_MS after its last event.
 *
 * A slow stat poll (SAFETY_POLL_MS) catches what inotify does not report: a network filesystem
 * changed from another machine. Where no watch can be set up (no inotify, its limits reached, a
 * directory gone), it polls at the fast interval instead, as the reader did before.
 *
 * `onChange` may be called when nothing changed: the reader compares what it reads.
 */
import { type FSWatcher, realpathSync, unwatchFile, watch, watchFile } from 'node:fs';
import { basename, dirname, resolve } from 'node:path';

/** Quiet time after the last event before the change is reported. */
export const SETTLE_MS = 100;
/** Poll interval beside a working watch (changes inotify cannot see). */
export const SAFETY_POLL_MS = 5_000;

export type WatchMode = 'inotify' | 'poll';

/** What is injected in tests: the watch function (one that throws stands for a filesystem without inotify). */
export type WatchFn = (dir: string, listener: (event: string, name: string | null) => void) => FSWatcher;

export interface FileWatchOptions {
  /** Poll interval when no watch can be set up, ms. */
  readonly fastPollMs: number;
  /** Poll interval beside a working watch, ms (default SAFETY_POLL_MS). */
  readonly safetyPollMs?: number;
  /** Quiet time before a burst of events is reported, ms (default SETTLE_MS). */
  readonly settleMs?: number;
  readonly watchFn?: WatchFn;
}

const defaultWatch: WatchFn = (dir, listener) => watch(dir, { persistent: false }, (event, name) => listener(event, name));

export class FileWatch {
  readonly file: string;
  private readonly onChange: () => void;
  private readonly o: Required<FileWatchOptions>;
  /** The watch on the path's directory, and on the resolved file's directory when that differs. */
  private outer: FSWatcher | null = null;
  private inner: FSWatcher | null = null;
  private innerDir = '';
  private innerName = '';
  private settleTimer: NodeJS.Timeout | null = null;
  private pollMs = 0;
  private stopped = false;
  mode: WatchMode = 'poll';

  constructor(file: string, onChange: () => void, opts: FileWatchOptions) {
    this.file = resolve(file);
    this.onChange = onChange;
    this.o = { safetyPollMs: SAFETY_POLL_MS, settleMs: SETTLE_MS, watchFn: defaultWatch, ...opts };
  }

  start(): void {
    try {
      this.outer = this.watchDir(dirname(this.file), basename(this.file), () => this.fallBack());
      this.followTarget();
      this.mode = 'inotify';
      this.poll(this.o.safetyPollMs);
    } catch {
      this.fallBack();
    }
  }

  stop(): void {
    this.stopped = true;
    this.outer?.close();
    this.inner?.close();
    this.outer = null;
    this.inner = null;
    if (this.settleTimer !== null) clearTimeout(this.settleTimer);
    this.settleTimer = null;
    if (this.pollMs > 0) unwatchFile(this.file, this.polled);
    this.pollMs = 0;
  }

  /** A watch on `dir` reporting events on `name`, and on names starting with `..` (a ConfigMap's `..data` swap). */
  private watchDir(dir: string, name: string, onError: () => void): FSWatcher {
    const w = this.o.watchFn(dir, (_event, changed) => {
      if (changed === null || changed === name || changed.startsWith('..')) this.eventSeen();
    });
    w.on('error', onError);
    return w;
  }

  /** Watches the directory of the file the path resolves to, when that is not the path's own (again after each change). */
  private followTarget(): void {
    let real: string;
    try {
      real = realpathSync(this.file);
    } catch {
      return; // gone for now (mid-swap): the outer watch reports its return
    }
    const dir = dirname(real);
    const name = basename(real);
    if (dir === this.innerDir && name === this.innerName) return;
    this.inner?.close();
    this.inner = null;
    this.innerDir = dir;
    this.innerName = name;
    if (dir !== dirname(this.file)) this.inner = this.watchDir(dir, name, this.innerGone);
  }

  /** The resolved file's directory went away (a ConfigMap swap removes the old one): followed again at the next event. */
  private readonly innerGone = (): void => {
    this.inner?.close();
    this.inner = null;
    this.innerDir = '';
    this.innerName = '';
  };

  private eventSeen(): void {
    if (this.stopped) return;
    if (this.settleTimer !== null) clearTimeout(this.settleTimer);
    this.settleTimer = setTimeout(this.settled, this.o.settleMs);
    this.settleTimer.unref();
  }

  private readonly settled = (): void => {
    this.settleTimer = null;
    if (this.stopped) return;
    if (this.mode === 'inotify') {
      try {
        this.followTarget();
      } catch {
        this.fallBack();
      }
    }
    this.onChange();
  };

  private readonly polled = (): void => {
    if (!this.stopped) this.onChange();
  };

  private poll(ms: number): void {
    if (this.pollMs === ms) return;
    if (this.pollMs > 0) unwatchFile(this.file, this.polled);
    this.pollMs = ms;
    watchFile(this.file, { interval: ms, persistent: false }, this.polled);
  }

  /** No watch works here: poll at the fast interval. */
  private fallBack(): void {
    if (this.stopped) return;
    this.outer?.close();
    this.inner?.close();
    this.outer = null;
    this.inner = null;
    this.mode = 'poll';
    this.poll(this.o.fastPollMs);
  }
}
