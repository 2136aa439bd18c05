/**
 * Certificate rotation without a restart: when ROUTER_TLS_CERT_FILE or ROUTER_TLS_KEY_FILE
 * changes (a renewal written by cert-manager into a mounted Secret, a file replaced by rename or
 * rewritten in place), the primary reads the pair again with the checks of the start
 * (config/listener-tls.ts). An invalid pair (half written; a new certificate beside the old key)
 * is said in a warn line naming the variable, the file and why, and the workers keep serving what
 * they serve; the next change is checked again. A valid pair other than the one served is rolled
 * out by `rotate` (rolling-replacement.ts: the workers are replaced one at a time). One rotation at
 * a time: a change during a rotation is checked once it is done.
 *
 * A rotation that stops (a new worker exited before it took the other's place) leaves the workers
 * replaced so far serving the new pair and the others the one they served: it is tried again on
 * its own, RETRY_FIRST_MS later, then twice as long after each failure, at most RETRY_MAX_MS
 * apart, until it is done; a change of the files meanwhile is checked at once (and a valid pair
 * rolled out at once); the drain (`stop`) ends the retries.
 *
 * `changed()` may be called when nothing changed (file-watch.ts): the files' contents are compared
 * with those last checked, and nothing is done (or logged) for contents already checked.
 */
import type { ListenerTls, ListenerTlsPair } from '../config/listener-tls.js';
import type { OpsFields } from '../observe/ops-log.js';
import { nodeTimers, type Timers } from '../timers.js';

/** The wait before a stopped rotation is tried again the first time; it doubles after each failure. */
export const RETRY_FIRST_MS = 5_000;
/** The longest wait between two tries of a stopped rotation. */
export const RETRY_MAX_MS = 300_000;

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
  /** Called once every worker serves a new pair (`served` is it then). */
  readonly rotated?: () => void;
  readonly info: (message: string, fields: OpsFields) => void;
  readonly warn: (message: string, fields: OpsFields) => void;
  /** For the retries of a stopped rotation (Node's, unref'd, by default). */
  readonly timers?: Timers;
}

/** A stopped rotation, tried again when `timer` fires (null: being tried now). */
interface Retry {
  readonly pair: ListenerTlsPair;
  /** Tries that failed so far. */
  readonly failures: number;
  timer: unknown;
}

export class TlsRotation {
  private readonly o: TlsRotationOptions;
  private servedPair: ListenerTlsPair;
  /** The contents last checked (readTexts). */
  private lastTexts: string | null = null;
  private rotating: Promise<void> | null = null;
  private again = false;
  private stopped = false;
  /** A rotation that stopped, while it is not done: the workers serve two pairs. */
  private retry: Retry | null = null;
  private readonly timers: Timers;

  constructor(opts: TlsRotationOptions) {
    this.o = opts;
    this.servedPair = opts.served;
    this.timers = opts.timers ?? nodeTimers;
  }

  /** The pair the workers serve (once a rotation is done, the new one). */
  get served(): ListenerTlsPair {
    return this.servedPair;
  }

  /** Whether a rotation is under way. */
  get busy(): boolean {
    return this.rotating !== null;
  }

  /** Whether a stopped rotation waits to be tried again. */
  get retryPending(): boolean {
    return this.retry !== null && this.retry.timer !== null;
  }

  /** No rotation starts after this, and none is tried again (the router drains). */
  stop(): void {
    this.stopped = true;
    this.cancelRetry();
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
      const keep = this.retry === null
        ? `the workers keep serving the certificate they serve (${describe(this.servedPair)})`
        : `the rotation to ${describe(this.retry.pair)} is still tried again as planned`;
      this.o.warn(`certificate not rotated: ${message}; ${keep}; checked again at the next change of the files`,
        { variable, file: variable === 'ROUTER_TLS_KEY_FILE' ? this.o.files.keyFile : this.o.files.certFile, rotated: false });
      return Promise.resolve();
    }
    // Workers serving two pairs (a stopped rotation) are all brought to this one, whichever it is.
    if (samePair(pair, this.servedPair) && this.retry === null) return Promise.resolve();
    const failures = this.retry !== null && samePair(pair, this.retry.pair) ? this.retry.failures : 0;
    this.cancelRetry();
    return this.start(pair, failures);
  }

  /** Rolls `pair` out (`failures`: tries of it that failed before); the change noted meanwhile is checked after. */
  private start(pair: ListenerTlsPair, failures: number): Promise<void> {
    this.rotating = this.rotateTo(pair, failures).finally(() => {
      this.rotating = null;
      if (this.again) {
        this.again = false;
        return this.changed();
      }
      return undefined;
    });
    return this.rotating;
  }

  private async rotateTo(pair: ListenerTlsPair, failures: number): Promise<void> {
    const from = this.servedPair;
    const fields = { subject: pair.subject, notAfter: pair.notAfter.toISOString(), fingerprint: pair.fingerprint256 };
    if (failures === 0) this.o.info(`certificate rotation: replacing the workers one at a time to serve ${describe(pair)} (was ${describe(from)})`, fields);
    else this.o.info(`certificate rotation tried again (try ${failures + 1}): replacing the workers that do not serve ${describe(pair)} yet`, fields);
    try {
      await this.o.rotate(pair);
    } catch (err) {
      if (this.stopped) return; // the router drains: nothing to say, nothing tried again
      // The workers replaced so far serve the new pair, the others the one they served.
      const retryMs = Math.min(RETRY_FIRST_MS * 2 ** failures, RETRY_MAX_MS);
      const retry: Retry = { pair, failures: failures + 1, timer: null };
      retry.timer = this.timers.setTimeout(() => this.tryAgain(retry), retryMs);
      this.retry = retry;
      this.o.warn(`certificate rotation stopped: ${(err as Error).message}; tried again in ${seconds(retryMs)} (or at once when the files change)`,
        { ...fields, rotated: false, retryMs });
      return;
    }
    this.servedPair = pair;
    this.o.info(`certificate rotation done: every worker serves ${describe(pair)}`, fields);
    this.o.rotated?.();
  }

  /** The retry's timer fired (a change of the files since would have cancelled it): tries the rotation again. */
  private tryAgain(retry: Retry): void {
    retry.timer = null;
    if (this.stopped || this.retry !== retry || this.rotating !== null) return;
    this.retry = null;
    void this.start(retry.pair, retry.failures);
  }

  private cancelRetry(): void {
    if (this.retry !== null && this.retry.timer !== null) this.timers.clearTimeout(this.retry.timer);
    this.retry = null;
  }
}

function samePair(a: ListenerTlsPair, b: ListenerTlsPair): boolean {
  return a.certPem === b.certPem && a.keyPem === b.keyPem;
}

/** A wait for a log line: `5 s`, `2 min 40 s`. */
function seconds(ms: number): string {
  const s = Math.round(ms / 1000);
  return s < 60 ? `${s} s` : `${Math.floor(s / 60)} min${s % 60 === 0 ? '' : ` ${s % 60} s`}`;
}

/** The certificate for a log line: its subject and when it expires. */
export function describe(pair: ListenerTlsPair): string {
  return `${pair.subject}, valid until ${pair.notAfter.toISOString()}`;
}
