/**
 * Passive health shared by the processes of one instance over the cluster IPC channel:
 *   worker -> primary  { t: 'sched:health', outcomes: [key, pod, answered 0|1, failures after it, 5xx failures after it, sent at][] }
 *     each pod-metrics interval, and at once (batched per event-loop turn) after a failure (a
 *     connect failure, a timeout, a reset or a 5xx answer that counts) or the first answer of a failing pod;
 *   primary -> worker  { t: 'sched:eject', by, pods: [key, pod, ejected ms left (0 = back), ejections, ejected at][] }
 *     as soon as the primary's outlier detector (pod-health-hub.ts) ejects or returns a pod;
 *     `by` is the worker whose report did it (that one counts the ejection in its metrics).
 * The periodic load share (pod-load-share.ts) repeats the ejections in force for workers that
 * missed them. A worker's own detector still reacts to its own failures at once.
 *
 * Each row carries the time of the primary's ejection, which identifies it. A worker's report and
 * the primary's messages cross in flight, so a worker never applies older news over what it knows:
 * - the periodic repeat of an ejection this worker applied and has since seen end (its own answer
 *   ended it, and its report to the primary is on the way) does not eject the pod again;
 * - an ejection is dated by when this worker learned of it (answers to requests it sent before do
 *   not end it): also when the worker had set the pod aside on its own before the primary's
 *   ejection, so that it does not put the pod back on an answer the primary takes as old news;
 * - answers this worker had not reported yet when it learned of an ejection are to requests sent
 *   before: they are dropped, as the primary would take them as ending an ejection made before
 *   they went out.
 */
import type { Clock } from '../clock.js';
import type { EndpointState } from '../upstream/endpoint-registry.js';

export const MSG_HEALTH = 'sched:health';
export const MSG_EJECT = 'sched:eject';

/**
 * [endpoint key, pod name, answered (not a 5xx failure) since the last report (1) or not (0),
 * connect failures/timeouts/resets after that, 5xx failures after that, clock ms at which the
 * latest-sent request of those answers went out (0: none; an answer to a request sent before the
 * primary's ejection of the pod does not end it)].
 */
export type OutcomeRow = [string, string, number, number, number, number];
/**
 * [endpoint key, pod name, ejection ms left (0 = back in rotation), ejections in a row, clock ms of
 * the primary's ejection (of the one ended, for a return)].
 */
export type EjectionRow = [string, string, number, number, number];

export interface HealthReport { t: typeof MSG_HEALTH; outcomes: OutcomeRow[] }
export interface EjectionShare { t: typeof MSG_EJECT; by: number; pods: EjectionRow[] }

/** Worker side: gathers this worker's outcomes per pod and applies the instance's ejections. */
export class PodHealthShare {
  private readonly endpoints: () => Iterable<EndpointState>;
  private readonly clock: Clock;
  private readonly send: (m: HealthReport) => void;
  private readonly workerId: number;
  private readonly counted: (pod: string) => void;
  private flushing = false;
  private readonly flushNow = (): void => {
    this.flushing = false;
    this.flush();
  };

  /** `counted`: an ejection this worker's report caused (for the ejections counter). */
  constructor(endpoints: () => Iterable<EndpointState>, clock: Clock, send: (m: HealthReport) => void, workerId: number, counted: (pod: string) => void) {
    this.endpoints = endpoints;
    this.clock = clock;
    this.send = send;
    this.workerId = workerId;
    this.counted = counted;
  }

  /** News the instance should hear before the next interval: sent at the end of this event-loop turn. */
  soon(): void {
    if (this.flushing) return;
    this.flushing = true;
    setImmediate(this.flushNow);
  }

  /** Sends the outcomes since the last report, if any. */
  flush(): void {
    const outcomes: OutcomeRow[] = [];
    for (const e of this.endpoints()) {
      const h = e.health;
      if (!h.reportSuccess && h.reportFailures === 0 && h.report5xx === 0) continue;
      outcomes.push([e.key, e.name, h.reportSuccess ? 1 : 0, h.reportFailures, h.report5xx, h.reportSentAt]);
      h.reportSuccess = false;
      h.reportSentAt = 0;
      h.reportFailures = 0;
      h.report5xx = 0;
    }
    if (outcomes.length > 0) this.send({ t: MSG_HEALTH, outcomes });
  }

  apply(m: EjectionShare): void {
    this.applyRows(m.pods, m.by === this.workerId);
  }

  /** Ejections in force as the periodic load share repeats them. */
  applyRows(rows: readonly EjectionRow[], count = false): void {
    if (rows.length === 0) return;
    const byKey = new Map<string, EjectionRow>();
    for (const r of rows) byKey.set(r[0], r);
    const now = this.clock();
    for (const e of this.endpoints()) {
      const r = byKey.get(e.key);
      if (r === undefined) continue;
      const h = e.health;
      if (r[2] > 0) {
        // The primary made it (and logged it), whatever this worker does with it.
        if (count) this.counted(e.name);
        const at = r[4];
        // The repeat of an ejection this worker has seen end since: older than what it knows.
        if (h.ejections === 0 && at <= h.sharedEjectedAt) continue;
        if (h.ejectedUntil <= now || r[3] > h.ejections || at > h.ejectedAt) {
          // New to this worker, or made after its own: answers to requests it sent before now do
          // not end it, nor do those it has not reported yet.
          h.ejectedAt = now;
          h.reportSuccess = false;
          h.reportSentAt = 0;
        }
        if (at > h.sharedEjectedAt) h.sharedEjectedAt = at;
        h.ejectedUntil = Math.max(h.ejectedUntil, now + r[2]);
        h.ejections = Math.max(h.ejections, r[3]);
        h.consecutiveFailures = 0;
        h.consecutive5xx = 0;
      } else {
        h.ejectedUntil = 0;
        h.ejections = 0;
        h.sharedEjectedAt = 0;
        h.consecutiveFailures = 0;
        h.consecutive5xx = 0;
      }
    }
  }
}

export function isEjectionShare(m: unknown): m is EjectionShare {
  return m !== null && typeof m === 'object' && (m as { t?: unknown }).t === MSG_EJECT;
}

export function isHealthReport(m: unknown): m is HealthReport {
  return m !== null && typeof m === 'object' && (m as { t?: unknown }).t === MSG_HEALTH && Array.isArray((m as HealthReport).outcomes);
}
