/**
 * Certificate rotation without a restart: when ROUTER_TLS_CERT_FILE or ROUTER_TLS_KEY_FILE
 * changes (a renewal written by cert-manager into a mounted Secret, a file replaced by rename or
 * rewritten in place), the primary reads the pair again with the checks of the start
 * (config/listener-tls.ts). An invalid pair (half written; a new certificate beside the old key)
 * is said in a warn line naming the variable, the file and why, and the workers keep serving what
 * they serve; the next change is checked again. A valid pair other than the one served is rolled
 * out by `rotate` (primary.ts: the workers are replaced one at a time). One rotation at a time: a
 * change during a rotation is checked once it is done.
 *
 * `changed()` may be called when nothing changed (file-watch.ts): the files' contents are compared
 * with those last checked, and nothing is done (or logged) for contents already checked.
 */
import type { ListenerTls, ListenerTlsPair } from '../config/listener-tls.js';
import type { OpsFields } from '../observe/ops-log.js';

export interface TlsRotationOptions {
  readonly files: ListenerTls;
  /** The pair the workers serve (checked at start). */
  readonly served: ListenerTlsPair;
  /** The files' contents now (a file that cannot be read: null), to tell whether they changed. */
  readonly readTexts: (files: ListenerTls) => string;
  /** The checks of the start: the pair, or throws an Error naming the variable, the file and why. */
  readonly check: (files: ListenerTls) => ListenerTlsPair;
  /** Rolls `pair` out to the workers; resolves once they serve it. */
  readonly rotate: (pair: ListenerTlsPair) => Promise<void>;
  readonly info: (message: string, fields: OpsFields) => void;
  readonly warn: (message: string, fields: OpsFields) => void;
}

export class TlsRotation {
  private readonly o: TlsRotationOptions;
  private servedPair: ListenerTlsPair;
  /** The contents last checked (readTexts). */
  private lastTexts: string | null = null;
  private rotating: Promise<void> | null = null;
  private again = false;
  private stopped = false;

  constructor(opts: TlsRotationOptions) {
    this.o = opts;
    this.servedPair = opts.served;
  }

  /** The pair the workers serve (once a rotation is done, the new one). */
  get served(): ListenerTlsPair {
    return this.servedPair;
  }

  /** Whether a rotation is under way. */
  get busy(): boolean {
    return this.rotating !== null;
  }

  /** No rotation starts after this (the router drains). */
  stop(): void {
    this.stopped = true;
  }

  /**
   * The files may have changed: checks them, and rotates when they hold a valid pair other than the
   * one served. During a rotation, checks once more when it is done. Resolves when that is done.
   */
  changed(): Promise<void> {
    if (this.stopped) return Promise.resolve();
    if (this.rotating !== null) {
      this.again = true;
      return this.rotating;
    }
    const texts = this.o.readTexts(this.o.files);
    if (texts === this.lastTexts) return Promise.resolve();
    this.lastTexts = texts;
    let pair: ListenerTlsPair;
    try {
      pair = this.o.check(this.o.files);
    } catch (err) {
      const message = (err as Error).message;
      const variable = /^ROUTER_TLS_(CERT|KEY)_FILE/.exec(message)?.[0] ?? 'ROUTER_TLS_CERT_FILE';
      this.o.warn(`certificate not rotated: ${message}; the workers keep serving the certificate they serve (${describe(this.servedPair)}); checked again at the next change of the files`,
        { variable, file: variable === 'ROUTER_TLS_KEY_FILE' ? this.o.files.keyFile : this.o.files.certFile, rotated: false });
      return Promise.resolve();
    }
    if (pair.certPem === this.servedPair.certPem && pair.keyPem === this.servedPair.keyPem) return Promise.resolve();
    this.rotating = this.rotateTo(pair).finally(() => {
      this.rotating = null;
      if (this.again) {
        this.again = false;
        return this.changed();
      }
      return undefined;
    });
    return this.rotating;
  }

  private async rotateTo(pair: ListenerTlsPair): Promise<void> {
    const from = this.servedPair;
    this.o.info(`certificate rotation: replacing the workers one at a time to serve ${describe(pair)} (was ${describe(from)})`,
      { subject: pair.subject, notAfter: pair.notAfter.toISOString(), fingerprint: pair.fingerprint256 });
    try {
      await this.o.rotate(pair);
    } catch (err) {
      // The workers replaced so far serve the new pair: the next change rolls it out again.
      this.lastTexts = null;
      if (this.stopped) return; // the router drains: nothing to say
      this.o.warn(`certificate rotation stopped: ${(err as Error).message}; checked again at the next change of the files`, { rotated: false });
      return;
    }
    this.servedPair = pair;
    this.o.info(`certificate rotation done: every worker serves ${describe(pair)}`,
      { subject: pair.subject, notAfter: pair.notAfter.toISOString(), fingerprint: pair.fingerprint256 });
  }
}

/** The certificate for a log line: its subject and when it expires. */
export function describe(pair: ListenerTlsPair): string {
  return `${pair.subject}, valid until ${pair.notAfter.toISOString()}`;
}
