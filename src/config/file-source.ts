import { readFileSync, watchFile, unwatchFile } from 'node:fs';
import type { ModelRoute, ModelServer } from './resource-types.js';
import { parseResourceFile } from './resource-file.js';

/** What a FileSource line is about: a warning on the file, or a rejected reload (`apply` reports applied ones). */
export type FileSourceEvent = 'warning' | 'reload-rejected';

export interface LoadedResources {
  routes: ModelRoute[];
  servers: ModelServer[];
}

/** Reads and validates a resources file; throws ResourceError (or a read error) naming the file. */
export function loadResourceFile(file: string, apiGroup: string, warn: (m: string) => void): LoadedResources {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new Error(`${file}: cannot read resources file: ${(err as Error).message}`);
  }
  const parsed = parseResourceFile(text, file, { apiGroup });
  for (const w of parsed.warnings) warn(w);
  return { routes: parsed.routes, servers: parsed.servers };
}

/**
 * Watches a resources file (by polling its stat, which survives editors' rename-on-save and
 * ConfigMap symlink swaps). A valid change is handed to `apply` (which logs it); an invalid one
 * keeps the last good config and is logged.
 */
export class FileSource {
  private readonly file: string;
  private readonly apiGroup: string;
  private readonly log: (m: string, event: FileSourceEvent) => void;
  private readonly apply: (r: LoadedResources) => void;
  private readonly warn = (m: string): void => this.log(m, 'warning');
  private lastText = '';
  rejected = 0;

  constructor(file: string, apiGroup: string, log: (m: string, event: FileSourceEvent) => void, apply: (r: LoadedResources) => void) {
    this.file = file;
    this.apiGroup = apiGroup;
    this.log = log;
    this.apply = apply;
  }

  /** First load: throws when the file is invalid (the router must not start on it). */
  start(intervalMs = 250): void {
    this.lastText = readFileSync(this.file, 'utf8');
    this.apply(loadResourceFile(this.file, this.apiGroup, this.warn));
    watchFile(this.file, { interval: intervalMs, persistent: false }, () => this.reload());
  }

  reload(): void {
    let text: string;
    try {
      text = readFileSync(this.file, 'utf8');
    } catch (err) {
      this.rejected++;
      this.log(`resources reload failed, keeping the last good config: ${this.file}: ${(err as Error).message}`, 'reload-rejected');
      return;
    }
    if (text === this.lastText) return;
    this.lastText = text;
    let loaded: LoadedResources;
    try {
      loaded = loadResourceFile(this.file, this.apiGroup, this.warn);
    } catch (err) {
      this.rejected++;
      this.log(`resources reload rejected, keeping the last good config: ${(err as Error).message}`, 'reload-rejected');
      return;
    }
    this.apply(loaded);
  }

  stop(): void {
    unwatchFile(this.file);
  }
}
