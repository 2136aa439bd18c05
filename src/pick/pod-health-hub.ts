/**
 * Primary side of shared passive health (pod-health-share.ts): one outlier detector per
 * instance, fed by every worker's outcome reports; its ejections and returns go to every worker
 * at once, each dated by the clock ms of the ejection it makes or ends (the processes share the
 * clock), so a worker can tell one older than what it knows. Holds only pods with failures or
 * ejections (an answer forgets a clean pod).
 */
import type { Clock } from '../clock.js';
import type { LevelledLog } from '../observe/ops-log.js';
import { PodHealth } from '../upstream/pod-health.js';
import { OutlierDetector, ejectionMessage, type HealthHolder, type OutlierSettings } from './outlier-detector.js';
import { MSG_EJECT, type EjectionRow, type EjectionShare, type OutcomeRow } from './pod-health-share.js';

/** Failing or ejected pods remembered at most. */
const MAX_PODS = 65_536;

export class PodHealthHub {
  private readonly pods = new Map<string, HealthHolder>();
  private readonly detector: OutlierDetector;
  private readonly clock: Clock;
  private readonly changed: EjectionRow[] = [];
  /** The pod whose report row the detector is given (its events name no key). */
  private currentKey = '';
  private current: HealthHolder | null = null;

  /** `log`: one line per ejection (`warn`) and return (`info`). */
  constructor(settings: OutlierSettings, clock: Clock, log: LevelledLog) {
    this.clock = clock;
    this.detector = new OutlierDetector(settings, clock, {
      ejected: (pod, ms, failures, ejections, cause) => {
        log('warn', ejectionMessage(pod, ms, failures, ejections, cause));
        this.changed.push([this.currentKey, pod, ms, ejections, this.current!.health.ejectedAt]);
      },
      returned: (pod) => {
        log('info', `pod ${pod} answered again: back in rotation`);
        this.changed.push([this.currentKey, pod, 0, 0, this.current!.health.ejectedAt]);
      },
    });
  }

  /** Applies one worker's report; returns the ejections and returns to share, or null. */
  report(worker: number, outcomes: readonly OutcomeRow[]): EjectionShare | null {
    for (const row of outcomes) {
      if (!Array.isArray(row) || typeof row[0] !== 'string' || typeof row[1] !== 'string') continue;
      const [key, name, answered, failures, errors, sentAt] = row;
      const failing = failures > 0 || errors > 0;
      let p = this.pods.get(key);
      this.currentKey = key;
      this.current = p ?? null;
      if (answered === 1 && p !== undefined) {
        // An answer to a request sent before this ejection (by the clock the processes share)
        // leaves it in force; a row without the time counts as sent now.
        this.detector.success(p, typeof sentAt === 'number' ? sentAt : this.clock());
        if (!failing && p.health.ejections === 0) {
          this.pods.delete(key);
          continue;
        }
      }
      if (!failing) continue;
      if (p === undefined) {
        p = { name, health: new PodHealth() };
        this.pods.set(key, p);
        // Bounded: pods no longer configured that never answered again go, oldest first.
        if (this.pods.size > MAX_PODS) this.pods.delete(this.pods.keys().next().value!);
        this.current = p;
      }
      for (let i = 0; i < failures && i < 1000; i++) this.detector.failure(p);
      for (let i = 0; i < errors && i < 1000; i++) this.detector.serverError(p);
    }
    if (this.changed.length === 0) return null;
    const pods = this.changed.splice(0);
    return { t: MSG_EJECT, by: worker, pods };
  }

  /** Ejections in force now (ms left), for the periodic load share. */
  ejected(): EjectionRow[] {
    const now = this.clock();
    const out: EjectionRow[] = [];
    for (const [key, p] of this.pods) {
      const left = p.health.ejectedUntil - now;
      if (left > 0) out.push([key, p.name, left, p.health.ejections, p.health.ejectedAt]);
    }
    return out;
  }

  /** Pods known to the hub (failing or ejected). */
  get size(): number {
    return this.pods.size;
  }
}
