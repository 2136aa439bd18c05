import type { Clock } from '../clock.js';
import type { PodHealth } from '../upstream/pod-health.js';

/** A pod as the detector sees it: a name for the events and its health state. */
export interface HealthHolder {
  readonly name: string;
  readonly health: PodHealth;
}

export interface OutlierSettings {
  /** Connect failures, timeouts or broken connections (resets) in a row that eject a pod. */
  readonly consecutiveFailures: number;
  /** 5xx answers in a row (countsAs5xx) that eject a pod; 0: answers never do. */
  readonly consecutive5xx: number;
  /** First ejection interval; doubles with each ejection in a row, up to maxEjectionMs. */
  readonly baseEjectionMs: number;
  readonly maxEjectionMs: number;
}

/** What ejected a pod: connect failures/timeouts/resets, or 5xx answers. */
export type EjectionCause = 'connect' | '5xx';

export interface OutlierEvents {
  /** `pod` leaves rotation for `ms` after `failures` failures of `cause` in a row (`ejections`: in a row, this one included). */
  ejected(pod: string, ms: number, failures: number, ejections: number, cause: EjectionCause): void;
  /** `pod` answered again after an ejection. */
  returned(pod: string): void;
}

/**
 * An answer of the pod itself that counts as a failure of the pod: 500, 502, 504, and 503 without
 * retry-after. A 503 with retry-after is a live server asking for less traffic for a while (it is
 * overloaded), not a broken one: ejecting it moves its share onto pods likely as busy, and with
 * every pod ejected the router would send all traffic to one. 501 and the other 5xx say nothing
 * of the pod's health; 4xx are the client's.
 */
export function countsAs5xx(status: number, retryAfter: boolean): boolean {
  return status === 500 || status === 502 || status === 504 || (status === 503 && !retryAfter);
}

/** The log line of an ejection. */
export function ejectionMessage(pod: string, ms: number, failures: number, ejections: number, cause: EjectionCause): string {
  const what = cause === '5xx' ? '5xx answer(s)' : 'connect failure(s)/timeout(s)/reset(s)';
  return `pod ${pod} ejected for ${ms}ms after ${failures} ${what} in a row (ejection ${ejections} in a row)`;
}

/**
 * Passive health (outlier detection): a pod that refuses connections or times out
 * `consecutiveFailures` times in a row, or answers `consecutive5xx` 5xx failures (countsAs5xx) in
 * a row, is ejected for base × 2^(ejections in a row − 1), capped. The two runs are counted apart
 * and neither ends the other: only another answer does. When the interval is over the pod is
 * tried again; one more failure of either kind ejects it again (for longer), another answer puts
 * it back for good and resets the counts. An answer to a request sent before the ejection (or in
 * its millisecond) says nothing of the pod since: it does not end the ejection, nor the probation
 * after it (under concurrency, a pod failing half its requests would otherwise come back at once
 * from the answers in flight when it was ejected). State lives on the endpoint (PodHealth).
 */
export class OutlierDetector {
  private readonly settings: OutlierSettings;
  private readonly clock: Clock;
  private readonly events: OutlierEvents;
  /** 5xx answers eject (consecutive5xx > 0). */
  readonly on5xx: boolean;

  constructor(settings: OutlierSettings, clock: Clock, events: OutlierEvents) {
    this.settings = settings;
    this.clock = clock;
    this.events = events;
    this.on5xx = settings.consecutive5xx > 0;
  }

  /** The pod was not reached (connection refused/unreachable/connect timeout), did not answer in time, or broke the connection before its answer ended. */
  failure(e: HealthHolder): void {
    const h = e.health;
    const now = this.clock();
    if (h.ejectedUntil > now) return; // tried while ejected (all pods were): the interval stands
    const n = ++h.consecutiveFailures;
    // On probation (back from an ejection without an answer since): one failure is enough.
    if (n < this.settings.consecutiveFailures && h.ejections === 0) return;
    this.eject(e, now, n, 'connect');
  }

  /** The pod answered a status that counts (countsAs5xx). Ignored while 5xx answers do not eject. */
  serverError(e: HealthHolder): void {
    if (!this.on5xx) return;
    const h = e.health;
    const now = this.clock();
    if (h.ejectedUntil > now) return; // answered while ejected (sent before, or all pods were): the interval stands
    const n = ++h.consecutive5xx;
    if (n < this.settings.consecutive5xx && h.ejections === 0) return;
    this.eject(e, now, n, '5xx');
  }

  private eject(e: HealthHolder, now: number, failures: number, cause: EjectionCause): void {
    const h = e.health;
    const ms = Math.min(this.settings.maxEjectionMs, this.settings.baseEjectionMs * 2 ** Math.min(h.ejections, 30));
    h.ejections++;
    h.ejectedAt = now;
    h.ejectedUntil = now + ms;
    h.consecutiveFailures = 0;
    h.consecutive5xx = 0;
    this.events.ejected(e.name, ms, failures, h.ejections, cause);
  }

  /**
   * The pod answered (any status that is not a 5xx failure) a request sent at `sentAt` (clock ms).
   * Ignored when the request went out before the pod's last ejection, or in its millisecond.
   */
  success(e: HealthHolder, sentAt: number): void {
    const h = e.health;
    if (h.ejections !== 0 && sentAt <= h.ejectedAt) return;
    h.consecutiveFailures = 0;
    h.consecutive5xx = 0;
    if (h.ejections === 0) return;
    h.ejections = 0;
    h.ejectedUntil = 0;
    this.events.returned(e.name);
  }

  /** Out of rotation at `now` (clock ms). */
  static ejected(e: HealthHolder, now: number): boolean {
    return e.health.ejectedUntil > now;
  }
}
