/**
 * Says in the operational log when the certificate the router serves HTTPS with is about to expire
 * or has expired, for an operator who reads the journal rather than the metric
 * (inference_router_tls_certificate_expiry_seconds) and its alert: a `warn` line within
 * EXPIRY_WARN_MS of its end (the alert's 7 days), an `error` line once it has ended (clients that
 * check it refuse every connection). Checked at start and every CHECK_EVERY_MS; said again at most
 * once a day for one certificate, and at once for a renewed one that is no better.
 */
import type { Clock } from '../clock.js';
import type { Timers } from '../timers.js';
import type { OpsFields } from '../observe/ops-log.js';

const DAY_MS = 24 * 3600 * 1000;
/** As the alert InferenceRouterCertificateExpiring (deploy/). */
export const EXPIRY_WARN_MS = 7 * DAY_MS;
export const CHECK_EVERY_MS = 3600 * 1000;
const REPEAT_MS = DAY_MS;

/** The served certificate as a log line names it. */
export interface ServedCertificate {
  readonly subject: string;
  readonly notAfter: Date;
  readonly fingerprint256: string;
}

export interface ExpiryLog {
  warn(message: string, fields: OpsFields): void;
  error(message: string, fields: OpsFields): void;
}

export class CertificateExpiryWatch {
  private timer: unknown = null;
  private stopped = false;
  /** The certificate said last (its fingerprint) and when. */
  private said: { fingerprint: string; at: number } | null = null;

  constructor(
    private readonly served: () => ServedCertificate,
    private readonly log: ExpiryLog,
    private readonly clock: Clock,
    private readonly timers: Timers,
  ) {}

  start(): void {
    this.check();
  }

  /** No more checks, even when a rotation that was under way ends after this. */
  stop(): void {
    this.stopped = true;
    this.clearTimer();
  }

  /** Checks the served certificate now (also after a rotation), then again in CHECK_EVERY_MS. */
  check(): void {
    if (this.stopped) return;
    this.clearTimer();
    const cert = this.served();
    const now = this.clock();
    const left = cert.notAfter.getTime() - now;
    if (left > EXPIRY_WARN_MS) this.said = null;
    else if (this.said === null || this.said.fingerprint !== cert.fingerprint256 || now - this.said.at >= REPEAT_MS) {
      this.said = { fingerprint: cert.fingerprint256, at: now };
      const fields = { subject: cert.subject, notAfter: cert.notAfter.toISOString(), fingerprint: cert.fingerprint256, secondsLeft: Math.floor(left / 1000) };
      const renew = 'renew ROUTER_TLS_CERT_FILE and ROUTER_TLS_KEY_FILE: the router serves a new pair without a restart';
      if (left <= 0) this.log.error(`the certificate served over HTTPS (${cert.subject}) expired at ${cert.notAfter.toISOString()}, ${span(-left)} ago: clients that check it refuse to connect; ${renew}`, fields);
      else this.log.warn(`the certificate served over HTTPS (${cert.subject}) expires at ${cert.notAfter.toISOString()}, in ${span(left)}; ${renew}`, fields);
    }
    this.timer = this.timers.setTimeout(() => this.check(), CHECK_EVERY_MS);
  }

  private clearTimer(): void {
    if (this.timer !== null) this.timers.clearTimeout(this.timer);
    this.timer = null;
  }
}

/** A span for a log line: `3 days 4 h`, `5 h 12 min`, `40 min`. */
export function span(ms: number): string {
  const min = Math.floor(ms / 60_000);
  const h = Math.floor(min / 60);
  const d = Math.floor(h / 24);
  if (d > 0) return `${d} day${d === 1 ? '' : 's'}${h % 24 === 0 ? '' : ` ${h % 24} h`}`;
  if (h > 0) return `${h} h${min % 60 === 0 ? '' : ` ${min % 60} min`}`;
  return `${min} min`;
}
