import type { Clock } from '../clock.js';
import type { PodHealth } from '../upstream/pod-health.js';

/** A pod as the detector sees it: a name for the events and its health state. */
export interface HealthHolder {
  readonly name: string;
  readonly health: PodHealth;
}

export interface OutlierSettings {
  /** Connect failures or timeouts in a row that eject a pod. */
  readonly consecutiveFailures: number;
  /** First ejection interval; doubles with each ejection in a row, up to maxEjectionMs. */
  readonly baseEjectionMs: number;
  readonly maxEjectionMs: number;
}

export interface OutlierEvents {
  /** `pod` leaves rotation for `ms` after `failures` failures in a row (`ejections`: in a row, this one included). */
  ejected(pod: string, ms: number, failures: number, ejections: number): void;
  /** `pod` answered again after an ejection. */
  returned(pod: string): void;
}

/**
 * Passive health (outlier detection): a pod that refuses connections or times out
 * `consecutiveFailures` times in a row is ejected for base × 2^(ejections in a row − 1), capped.
 * When the interval is over the pod is tried again; one more failure ejects it again (for longer),
 * an answer puts it back for good and resets the count. State lives on the endpoint (PodHealth).
 */
export class OutlierDetector {
  private readonly settings: OutlierSettings;
  private readonly clock: Clock;
  private readonly events: OutlierEvents;

  constructor(settings: OutlierSettings, clock: Clock, events: OutlierEvents) {
    this.settings = settings;
    this.clock = clock;
    this.events = events;
  }

  /** The pod was not reached (connection refused/unreachable/connect timeout) or did not answer in time. */
  failure(e: HealthHolder): void {
    const h = e.health;
    const now = this.clock();
    if (h.ejectedUntil > now) return; // tried while ejected (all pods were): the interval stands
    h.consecutiveFailures++;
    // On probation (back from an ejection without an answer since): one failure is enough.
    if (h.consecutiveFailures < this.settings.consecutiveFailures && h.ejections === 0) return;
    const ms = Math.min(this.settings.maxEjectionMs, this.settings.baseEjectionMs * 2 ** Math.min(h.ejections, 30));
    h.ejections++;
    h.ejectedUntil = now + ms;
    const failures = h.consecutiveFailures;
    h.consecutiveFailures = 0;
    this.events.ejected(e.name, ms, failures, h.ejections);
  }

  /** The pod answered (any HTTP status). */
  success(e: HealthHolder): void {
    const h = e.health;
    h.consecutiveFailures = 0;
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
