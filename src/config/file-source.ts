import { readFileSync, statSync } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import { resolve } from 'node:path';
import type { ModelRoute, ModelServer } from './resource-types.js';
import type { ResourceRules } from './resources.js';
import { parseResourceFile } from './resource-file.js';
import { DEFAULT_PARSE_THREAD, PARSE_IN_PLACE_CHARS, parseHere, parseOffThread } from './parse-off-thread.js';
import { FileWatch } from './file-watch.js';

/**
 * What a FileSource line is about: a warning on the file, a route left out for being bound to
 * another Gateway than ROUTER_GATEWAY's (information), or a rejected reload (`apply` reports
 * applied ones).
 */
export type FileSourceEvent = 'warning' | 'not-served' | 'reload-rejected';

export interface LoadedResources {
  routes: ModelRoute[];
  servers: ModelServer[];
}

export interface FileSourceOptions {
  readonly file: string;
  /** The API group and REDIS_CLUSTER the resources are validated against, and ROUTER_GATEWAY. */
  readonly rules: ResourceRules;
  /** Largest file read (ROUTER_RESOURCES_MAX_BYTES). */
  readonly maxBytes: number;
  /** A warning on the file, a route not served, or a refused reload (applied reloads are reported by `apply`'s caller). */
  readonly log: (m: string, event: FileSourceEvent) => void;
  readonly apply: (r: LoadedResources) => void;
  /** The parser thread's module (tests running from source point it at a compiled one). */
  readonly parseThread?: URL;
}

function tooLarge(file: string, size: number, maxBytes: number): string {
  return `${file}: the resources file is ${size} bytes, more than ROUTER_RESOURCES_MAX_BYTES (${maxBytes})`;
}

/**
 * What is wrong with a resources file that cannot be read, naming it. The two a newcomer meets are
 * spelt out: a path relative to another directory (or a file removed since), and a directory given.
 * `atStart`: add how to give the file (on a reload the path is already the one given).
 */
function unreadable(file: string, err: unknown, atStart: boolean): string {
  const code = (err as NodeJS.ErrnoException).code;
  if (code === 'ENOENT') {
    return `${file}: no such resources file (looked for ${resolve(file)})` + (atStart
      ? '; give the path of a YAML file of ModelRoute/ModelServer resources to --resources or ROUTER_RESOURCES, e.g. examples/resources.yaml'
      : '; it was removed or renamed: put it back to apply changes again');
  }
  if (code === 'EISDIR') return `${file}: is a directory; --resources (ROUTER_RESOURCES) takes one YAML file of ModelRoute/ModelServer resources`;
  return `${file}: cannot read resources file: ${(err as Error).message}`;
}

/**
 * Reads and validates a resources file at start (synchronously: nothing else runs yet); throws
 * ResourceError or an Error naming the file (unreadable, or larger than `maxBytes`).
 */
export function loadResourceFile(file: string, rules: ResourceRules, maxBytes: number, log: (m: string, event: 'warning' | 'not-served') => void): { text: string; loaded: LoadedResources } {
  let text: string;
  try {
    const size = statSync(file).size;
    if (size > maxBytes) throw new Error(tooLarge(file, size, maxBytes));
    const buf = readFileSync(file);
    if (buf.length > maxBytes) throw new Error(tooLarge(file, buf.length, maxBytes));
    text = buf.toString('utf8');
  } catch (err) {
    if ((err as Error).message.startsWith(`${file}: `)) throw err;
    throw new Error(unreadable(file, err, true));
  }
  const parsed = parseResourceFile(text, file, rules);
  for (const w of parsed.warnings) log(w, 'warning');
  for (const n of parsed.notServed) log(n, 'not-served');
  return { text, loaded: { routes: parsed.routes, servers: parsed.servers } };
}

/**
 * Watches a resources file (file-watch.ts: inotify on the file, armed again after each change, which
 * follows editors' rename-on-save and ConfigMap symlink swaps, with a slow poll beside it, or a 250 ms
 * poll where inotify is not available or its watches are used up, told once as a warning). A valid
 * change is parsed (in a worker thread when over PARSE_IN_PLACE_CHARS) and handed to `apply`; a change that is refused keeps the
 * last good config and is logged: unreadable, larger than the cap, invalid, or empty (no document —
 * an editor or a non-atomic write caught mid-way; an intentionally empty config is written as a
 * `kind: List` with `items: []`). A file still changing while it is read is skipped until its
 * next change event or poll.
 */
export class FileSource {
  private readonly o: FileSourceOptions;
  private lastText = '';
  private reloading: Promise<void> | null = null;
  private again = false;
  private watcher: FileWatch | null = null;
  /**
   * The message of the last reload refused before the file could be read (gone, a directory,
   * larger than the cap), until the file is read again: the same change reported twice (by the
   * watch and a poll) is told once, and counted once.
   */
  private unreadRefusal: string | null = null;
  rejected = 0;

  constructor(opts: FileSourceOptions) {
    this.o = opts;
  }

  /** First load: throws when the file is invalid or too large (the router must not start on it). `intervalMs`: the poll where inotify is not available. */
  start(intervalMs = 250): void {
    const { text, loaded } = loadResourceFile(this.o.file, this.o.rules, this.o.maxBytes, this.o.log);
    this.lastText = text;
    this.o.apply(loaded);
    this.watcher = new FileWatch(this.o.file, () => void this.reload(), { fastPollMs: intervalMs, log: (m) => this.o.log(m, 'warning') });
    this.watcher.start(); // reports once when in place: a change since the read above is not missed (same text: no-op)
  }

  /** Reloads once (a call during a reload runs one more after it); resolves when done. */
  reload(): Promise<void> {
    if (this.reloading !== null) {
      this.again = true;
      return this.reloading;
    }
    this.reloading = this.reloadOnce().finally(() => {
      this.reloading = null;
      if (this.again) {
        this.again = false;
        void this.reload();
      }
    });
    return this.reloading;
  }

  private reject(message: string): void {
    this.rejected++;
    this.o.log(`resources reload rejected, keeping the last good config: ${message}`, 'reload-rejected');
  }

  /** A reload refused before the file could be read: logged unless it is the refusal told last. */
  private refuseUnread(message: string): void {
    if (message === this.unreadRefusal) return;
    this.unreadRefusal = message;
    // The file read next is applied (and said) even when it is the text in use: the last line
    // about the file is then no longer this refusal.
    this.lastText = '';
    this.rejected++;
    this.o.log(message, 'reload-rejected');
  }

  private async reloadOnce(): Promise<void> {
    const { file, maxBytes } = this.o;
    const tooLargeRefusal = (size: number): void => this.refuseUnread(`resources reload rejected, keeping the last good config: ${tooLarge(file, size, maxBytes)}`);
    let buf: Buffer;
    try {
      const before = await stat(file);
      if (before.size > maxBytes) return tooLargeRefusal(before.size);
      buf = await readFile(file);
      if (buf.length > maxBytes) return tooLargeRefusal(buf.length);
      const after = await stat(file);
      if (after.size !== buf.length || after.mtimeMs !== before.mtimeMs) return; // still being written: its next change is seen
    } catch (err) {
      return this.refuseUnread(`resources reload failed, keeping the last good config: ${unreadable(file, err, false)}`);
    }
    this.unreadRefusal = null;
    const text = buf.toString('utf8');
    if (text === this.lastText) return;
    this.lastText = text;
    const job = { text, file, rules: this.o.rules };
    const outcome = text.length > PARSE_IN_PLACE_CHARS ? await parseOffThread(job, this.o.parseThread ?? DEFAULT_PARSE_THREAD) : parseHere(job);
    if (!outcome.ok) return this.reject(outcome.message);
    const { routes, servers, warnings, notServed, documents } = outcome.parsed;
    if (documents === 0) {
      return this.reject(`${file}: the file holds no resources (${text.trim() === '' ? 'empty' : 'no YAML document'}); ` +
        'an editor or a non-atomic write may be under way. To remove every resource, write "kind: List" with "items: []"');
    }
    for (const w of warnings) this.o.log(w, 'warning');
    for (const n of notServed) this.o.log(n, 'not-served');
    this.o.apply({ routes, servers });
  }

  stop(): void {
    this.watcher?.stop();
    this.watcher = null;
  }
}
