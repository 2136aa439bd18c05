/**
 * FileWatch on real files in a temporary directory: the changes a resources or auth file goes
 * through in practice (a write in place, an editor's rename-on-save, a Kubernetes ConfigMap's
 * symlink swap, a symlink to a file elsewhere) are reported through inotify, a burst once; other
 * files of the directory are not. A filesystem without inotify (a watch function that throws)
 * and a change inotify does not report are covered by the polls; so are inotify watches used up
 * (ENOSPC) at start or later, when the file comes back after a removal, told once in the log.
 */
import { appendFileSync, mkdirSync, mkdtempSync, renameSync, rmSync, statSync, symlinkSync, watch, writeFileSync } from 'node:fs';
import type { FSWatcher } from 'node:fs';
import { EventEmitter } from 'node:events';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { FileWatch, type FileWatchOptions } from '../../../src/config/file-watch.js';

const dirs: string[] = [];
const watches: FileWatch[] = [];
afterEach(() => {
  for (const w of watches.splice(0)) w.stop();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'ir-file-watch-'));
  dirs.push(d);
  return d;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** A resources.yaml holding `a: 1`, in a directory of its own. */
function newFile(): string {
  const f = join(tempDir(), 'resources.yaml');
  writeFileSync(f, 'a: 1\n');
  return f;
}

/** Writes the file and waits for the watch to report it (the report count after it). */
async function reportedWrite(w: { next: () => Promise<number> }, f: string, text = 'a: 22\n'): Promise<number> {
  const reported = w.next();
  writeFileSync(f, text);
  return reported;
}

/** A watcher that reports no event (what inotify gives for a change it cannot see); `emit('error')` stands for a watch that failed. */
function fakeWatcher(): FSWatcher & EventEmitter {
  return Object.assign(new EventEmitter(), { close() {}, ref() { return this; }, unref() { return this; } }) as unknown as FSWatcher & EventEmitter;
}

/**
 * fs.watch where inotify watches are used up (when `usedUp()`): inotify_add_watch looks the path up
 * first (ENOENT for a missing file), then finds no watch left (ENOSPC), as the kernel does.
 */
function noWatchesLeft(usedUp: () => boolean): FileWatchOptions['watchFn'] {
  return (file, listener) => {
    if (!usedUp()) return watch(file, { persistent: false }, listener);
    statSync(file);
    throw Object.assign(new Error(`ENOSPC: System limit for number of file watchers reached, watch '${file}'`), { code: 'ENOSPC' });
  };
}

interface Counted { watch: FileWatch; count: () => number; next: () => Promise<number> }

/** A watch counting its reports, not started; the fast poll is long so that only the watch can report within a test. */
function counting(file: string, opts: Partial<FileWatchOptions> = {}): Counted {
  let n = 0;
  const waiters: (() => void)[] = [];
  const watch = new FileWatch(file, () => {
    n++;
    for (const w of waiters.splice(0)) w();
  }, { fastPollMs: 60_000, safetyPollMs: 60_000, settleMs: 50, ...opts });
  watches.push(watch);
  return {
    watch,
    count: () => n,
    next: () => new Promise<number>((resolve, reject) => {
      const t = setTimeout(() => reject(new Error('no change reported within 3 s')), 3_000);
      waiters.push(() => {
        clearTimeout(t);
        resolve(n);
      });
    }),
  };
}

/** A started watch after the report start() makes once it is in place, counting from 0 again. */
async function counted(file: string, opts: Partial<FileWatchOptions> = {}): Promise<Counted> {
  const c = counting(file, opts);
  const armed = c.next();
  c.watch.start();
  await armed;
  const base = c.count();
  return { watch: c.watch, count: () => c.count() - base, next: async () => (await c.next()) - base };
}

describe('FileWatch', () => {
  it('a write in place is reported through inotify', async () => {
    const f = newFile();
    const w = await counted(f);
    expect(w.watch.mode).toBe('inotify');
    expect(await reportedWrite(w, f)).toBe(1);
  });

  it("an editor's rename-on-save is reported, and so is the next one", async () => {
    const f = newFile();
    const d = dirname(f);
    const w = await counted(f);
    for (let i = 2; i <= 3; i++) {
      const reported = w.next();
      writeFileSync(join(d, '.resources.yaml.swp'), `a: ${i}\n`);
      renameSync(join(d, '.resources.yaml.swp'), f);
      await reported;
    }
    expect(w.count()).toBe(2);
  });

  it('a burst of writes is reported once, after it', async () => {
    const d = tempDir();
    const f = join(d, 'resources.yaml');
    writeFileSync(f, '');
    const w = await counted(f, { settleMs: 300 });
    for (let i = 0; i < 10; i++) {
      writeFileSync(f, `a: ${i}\n`);
      await sleep(10);
    }
    await sleep(800);
    expect(w.count()).toBe(1);
  });

  it('other files of the directory are not reported', async () => {
    const f = newFile();
    const d = dirname(f);
    const w = await counted(f);
    writeFileSync(join(d, 'other.yaml'), 'b: 1\n');
    renameSync(join(d, 'other.yaml'), join(d, 'moved.yaml'));
    await sleep(300);
    expect(w.count()).toBe(0);
  });

  it("a Kubernetes ConfigMap volume's symlink swap is reported, each time", async () => {
    // kubelet's layout: name -> ..data/name, ..data -> ..<timestamp>; an update writes a new
    // timestamped directory, points ..data_tmp at it, renames ..data_tmp over ..data, removes the old one.
    const d = tempDir();
    let gen = 0;
    const generation = (text: string): string => {
      const g = `..2026_11_26_0${++gen}`;
      mkdirSync(join(d, g));
      writeFileSync(join(d, g, 'resources.yaml'), text);
      return g;
    };
    let current = generation('a: 1\n');
    symlinkSync(current, join(d, '..data'));
    symlinkSync(join('..data', 'resources.yaml'), join(d, 'resources.yaml'));
    const w = await counted(join(d, 'resources.yaml'));
    for (let i = 2; i <= 3; i++) {
      const reported = w.next();
      const next = generation(`a: ${i}\n`);
      symlinkSync(next, join(d, '..data_tmp'));
      renameSync(join(d, '..data_tmp'), join(d, '..data'));
      rmSync(join(d, current), { recursive: true });
      current = next;
      await reported;
      await sleep(100); // the burst of the swap is over
    }
    expect(w.count()).toBe(2);
  });

  it('a path that is a symlink to a file in another directory: a write to that file is reported', async () => {
    const d = tempDir();
    const elsewhere = tempDir();
    const target = join(elsewhere, 'real.yaml');
    writeFileSync(target, 'a: 1\n');
    const f = join(d, 'resources.yaml');
    symlinkSync(target, f);
    const w = await counted(f);
    const reported = w.next();
    writeFileSync(target, 'a: 2\n');
    expect(await reported).toBe(1);
  });

  it('where no watch can be set up, the file is polled at the fast interval', async () => {
    const f = newFile();
    const w = await counted(f, { fastPollMs: 50, watchFn: () => { throw Object.assign(new Error('no space'), { code: 'ENOSPC' }); } });
    expect(w.watch.mode).toBe('poll');
    expect(await reportedWrite(w, f)).toBe(1);
  });

  it('inotify watches used up at start: polled, and the reason is logged once', async () => {
    const f = newFile();
    const logged: string[] = [];
    const w = await counted(f, { fastPollMs: 50, watchFn: noWatchesLeft(() => true), log: (m) => logged.push(m) });
    expect(w.watch.mode).toBe('poll');
    expect(await reportedWrite(w, f)).toBe(1);
    const removed = w.next();
    rmSync(f);
    expect(await removed).toBe(2);
    expect(await reportedWrite(w, f, 'a: 3\n')).toBe(3); // written back
    expect(logged).toEqual([`${f}: cannot watch the file, inotify watches are used up (ENOSPC, fs.inotify.max_user_watches); ` +
      'checking it for changes every 50 ms instead (a stat poll), from now on']);
  });

  it('inotify watches used up while the file is removed: the file written back is reported, then polled', async () => {
    const f = newFile();
    const logged: string[] = [];
    let usedUp = false;
    const w = await counted(f, { fastPollMs: 50, watchFn: noWatchesLeft(() => usedUp), log: (m) => logged.push(m) });
    expect(w.watch.mode).toBe('inotify');
    await sleep(100); // the safety poll has its first stat (see the removal test below)
    const removed = w.next();
    usedUp = true; // another process takes the watches the removal freed
    rmSync(f);
    expect(await removed).toBe(1);
    expect(w.watch.mode).toBe('missing');
    expect(await reportedWrite(w, f)).toBe(2); // at once
    expect(w.watch.mode).toBe('poll');
    expect(await w.next()).toBe(3); // and once the poll has its first stat (the file may have been written back in parts)
    expect(await reportedWrite(w, f, 'a: 3\n')).toBe(4); // through the poll
    expect(logged).toHaveLength(1);
    expect(logged[0]).toMatch(/inotify watches are used up .* every 50 ms instead/);
  });

  it("inotify watches used up before an editor's rename-on-save: the save is reported, then the file is polled", async () => {
    const f = newFile();
    const d = dirname(f);
    const logged: string[] = [];
    let usedUp = false;
    const w = await counted(f, { fastPollMs: 50, watchFn: noWatchesLeft(() => usedUp), log: (m) => logged.push(m) });
    usedUp = true;
    const saved = w.next();
    writeFileSync(join(d, '.resources.yaml.swp'), 'a: 2\n');
    renameSync(join(d, '.resources.yaml.swp'), f);
    expect(await saved).toBe(1);
    expect(w.watch.mode).toBe('poll');
    expect(await w.next()).toBe(2); // once the poll has its first stat
    expect(await reportedWrite(w, f, 'a: 3\n')).toBe(3); // through the poll
    expect(logged).toHaveLength(1);
  });

  it('a change the watch does not report (a network filesystem changed elsewhere) is caught by the safety poll', async () => {
    const f = newFile();
    const w = await counted(f, { safetyPollMs: 100, watchFn: fakeWatcher });
    expect(w.watch.mode).toBe('inotify');
    await sleep(250);
    expect(await reportedWrite(w, f)).toBe(1);
  });

  it('a watch that fails (its file went away under it) is armed again on the file as it is then', async () => {
    const f = newFile();
    const watchers: EventEmitter[] = [];
    const w = await counted(f, { watchFn: () => { const fw = fakeWatcher(); watchers.push(fw); return fw; } });
    const reported = w.next();
    watchers[0].emit('error', new Error('EPERM'));
    expect(await reported).toBe(1);
    expect(watchers).toHaveLength(2);
    expect(w.watch.mode).toBe('inotify');
  });

  it('a file removed and written again: polled fast while it is missing, reported and watched again once it is back', async () => {
    const f = newFile();
    const w = await counted(f, { fastPollMs: 50 });
    // The safety poll's first stat is taken asynchronously; a file gone before it is reported by
    // the poll at once as well as by the watch. Let it be taken, so the removal is one report.
    await sleep(100);
    const removed = w.next();
    rmSync(f);
    await removed;
    expect(w.watch.mode).toBe('missing');
    expect(await reportedWrite(w, f)).toBe(2);
    expect(w.watch.mode).toBe('inotify');
    expect(await reportedWrite(w, f, 'a: 3\n')).toBe(3); // through the watch again
  });

  it('a removal is reported once: the safety poll beside the watch does not report it again', async () => {
    const f = newFile();
    const w = await counted(f, { safetyPollMs: 50 });
    await sleep(100); // the safety poll has its first stat
    const removed = w.next();
    rmSync(f);
    expect(await removed).toBe(1);
    expect(w.watch.mode).toBe('missing');
    await sleep(300); // several safety poll intervals
    expect(w.count()).toBe(1);
  });

  it('a file written beside it (an access log in the same directory) does not wake it', async () => {
    const f = newFile();
    let events = 0;
    const w = await counted(f, { watchFn: (file, listener) => watch(file, { persistent: false }, () => { events++; listener(); }) });
    for (let i = 0; i < 20; i++) {
      appendFileSync(join(dirname(f), 'access.log'), `{"n":${i}}\n`);
      await sleep(5);
    }
    await sleep(200);
    expect(events).toBe(0);
    expect(w.count()).toBe(0);
  });

  it('start() reports once when the watch is in place: a change since the reader read the file is not missed', async () => {
    const f = newFile();
    const w = counting(f);
    const armed = w.next();
    w.watch.start();
    expect(w.count()).toBe(0); // not from inside start()
    expect(await armed).toBe(1);
    expect(w.watch.mode).toBe('inotify');
    await sleep(200);
    expect(w.count()).toBe(1); // once
  });

  it('start() without a watch: the report comes after two fast intervals, once the poll has its first stat', async () => {
    const f = newFile();
    const w = counting(f, { fastPollMs: 100, watchFn: () => { throw Object.assign(new Error('no space'), { code: 'ENOSPC' }); } });
    const t0 = performance.now();
    const armed = w.next();
    w.watch.start();
    expect(w.watch.mode).toBe('poll');
    expect(await armed).toBe(1);
    expect(performance.now() - t0).toBeGreaterThanOrEqual(190);
    expect(await reportedWrite(w, f)).toBe(2); // the poll has a baseline: the write is seen
  });

  it('stop() before the start report: nothing is reported', async () => {
    const f = newFile();
    const w = counting(f);
    w.watch.start();
    w.watch.stop();
    await sleep(100);
    expect(w.count()).toBe(0);
  });

  it('stop(): nothing is reported after it', async () => {
    const f = newFile();
    const w = await counted(f);
    w.watch.stop();
    writeFileSync(f, 'a: 2\n');
    await sleep(300);
    expect(w.count()).toBe(0);
  });
});
