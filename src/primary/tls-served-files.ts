/**
 * The certificate and key the workers serve, as the primary last found them valid
 * (config/listener-tls.ts), copied into a private directory (mode 0700, files 0600) under the
 * system's temporary directory. Workers open their listener from the copy, not from
 * ROUTER_TLS_CERT_FILE / ROUTER_TLS_KEY_FILE: a worker started while the files are being
 * rewritten (a crash replacement, a rotation's new worker) serves the pair that was checked, never
 * a half-written one. Each pair gets new file names; the previous ones are removed once no worker
 * reads them (`prune`). Where the directory cannot be written, the workers read the files
 * themselves, as they are when each one starts (`fallback` says why).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ListenerTls, ListenerTlsPair } from '../config/listener-tls.js';

export class TlsServedFiles {
  private dir: string | null;
  private n = 0;
  private current: ListenerTls;
  private older: ListenerTls[] = [];
  /** Why the copy is not used (the directory could not be made or written), or null. */
  fallback: string | null = null;

  /** `given`: the files of the settings, used where no copy can be written. */
  constructor(private readonly given: ListenerTls, parent = tmpdir()) {
    this.current = given;
    try {
      this.dir = mkdtempSync(join(parent, 'inference-router-tls-'));
    } catch (err) {
      this.dir = null;
      this.fallback = `cannot make a directory in ${parent} (${(err as Error).message})`;
    }
  }

  /** The files the workers forked from now on open. */
  get files(): ListenerTls {
    return this.current;
  }

  /** Copies `pair` and makes it the one new workers open (the given files, when it cannot). */
  write(pair: ListenerTlsPair): ListenerTls {
    if (this.dir === null) return this.current;
    const n = ++this.n;
    const certFile = join(this.dir, `tls-${n}.crt`);
    const keyFile = join(this.dir, `tls-${n}.key`);
    try {
      writeFileSync(keyFile, pair.keyPem, { mode: 0o600, flag: 'wx' });
      writeFileSync(certFile, pair.certPem, { mode: 0o600, flag: 'wx' });
    } catch (err) {
      rmSync(keyFile, { force: true });
      rmSync(certFile, { force: true });
      this.fallback = `cannot write in ${this.dir} (${(err as Error).message})`;
      this.remove();
      return this.current;
    }
    if (this.current !== this.given) this.older.push(this.current);
    this.current = Object.freeze({ certFile, keyFile });
    return this.current;
  }

  /** Removes the copies before the current one (no worker reads them any more). */
  prune(): void {
    for (const f of this.older) {
      rmSync(f.certFile, { force: true });
      rmSync(f.keyFile, { force: true });
    }
    this.older = [];
  }

  /** Removes the directory (at exit); new workers read the given files from then on. */
  remove(): void {
    if (this.dir !== null) rmSync(this.dir, { recursive: true, force: true });
    this.dir = null;
    this.current = this.given;
    this.older = [];
  }
}
