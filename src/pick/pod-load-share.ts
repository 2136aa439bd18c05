/**
 * Shares pod load across the processes of one instance over the cluster IPC channel:
 *   worker -> primary  { t: 'sched:inflight', counts: [key, n][] }   every interval
 *   primary -> worker  { t: 'sched:load', rows: PodLoadRow[], stale: key[], inflight: [key, total][] }
 * `rows` are the pods' scraped metrics (pod-metrics-scraper.ts), `stale` the pods scraped whose
 * values are not fresh (so that their gauge reads 0); `inflight` the sum of the
 * workers' last reports. A worker takes total − its own last report as the others' in-flight.
 * `ejected` repeats the ejections in force (pod-health-share.ts, pod-health-hub.ts); the primary
 * also takes the workers' health reports here and shares ejections and returns at once.
 */
import type { Worker } from 'node:cluster';
import type { Clock } from '../clock.js';
import type { EndpointState } from '../upstream/endpoint-registry.js';
import type { PodHealthHub } from './pod-health-hub.js';
import { isHealthReport, type EjectionRow, type EjectionShare } from './pod-health-share.js';
import type { PodLoadRow, PodMetricsScraper } from './pod-metrics-scraper.js';
import type { PrefixHub } from './prefix-hub.js';
import { isPrefixPairs, MSG_PREFIX_NEW, type PrefixShareMessage } from './prefix-share.js';

export const MSG_INFLIGHT = 'sched:inflight';
export const MSG_LOAD = 'sched:load';

export interface InflightReport { t: typeof MSG_INFLIGHT; counts: [string, number][] }
export interface LoadShare { t: typeof MSG_LOAD; rows: PodLoadRow[]; stale: string[]; inflight: [string, number][]; ejected: EjectionRow[] }

export interface LoadCluster {
  on(event: 'message', listener: (worker: Worker, message: unknown) => void): unknown;
  on(event: 'exit', listener: (worker: Worker) => void): unknown;
}

/** Primary side: gathers reports, sends the load to every worker each interval. Returns stop(). */
export function attachPodLoadPrimary(
  cluster: LoadCluster, scraper: PodMetricsScraper, health: PodHealthHub, prefix: PrefixHub | null, intervalMs: number,
  broadcast: (m: LoadShare | EjectionShare | PrefixShareMessage) => void,
): () => void {
  const reports = new Map<number, [string, number][]>();
  cluster.on('message', (w, m) => {
    if (m !== null && typeof m === 'object' && (m as { t?: unknown }).t === MSG_INFLIGHT) {
      const counts = (m as InflightReport).counts;
      if (Array.isArray(counts)) reports.set(w.id, counts);
      // A worker's first report: it gets the prefix affinity the others learned.
      const all = prefix?.firstTime(w.id);
      if (all != null && w.isConnected()) w.send(all);
    } else if (prefix !== null && isPrefixPairs(m, MSG_PREFIX_NEW)) {
      broadcast(prefix.report(m));
    } else if (isHealthReport(m)) {
      const share = health.report(w.id, m.outcomes);
      if (share !== null) broadcast(share);
    }
  });
  cluster.on('exit', (w) => {
    reports.delete(w.id);
    prefix?.gone(w.id);
  });
  scraper.start();
  const timer = setInterval(() => {
    const totals = new Map<string, number>();
    for (const counts of reports.values()) for (const [k, n] of counts) totals.set(k, (totals.get(k) ?? 0) + n);
    broadcast({ t: MSG_LOAD, rows: scraper.rows(), stale: scraper.staleKeys(), inflight: [...totals], ejected: health.ejected() });
  }, intervalMs);
  timer.unref();
  return () => {
    clearInterval(timer);
    scraper.stop();
  };
}

/** Worker side: reports its in-flight counts and applies what the primary shares. */
export class PodLoadReceiver {
  private readonly endpoints: () => Iterable<EndpointState>;
  private readonly clock: Clock;
  private readonly staleMs: number;
  private readonly reported = new Map<string, number>();
  /** Whether a report went out yet. */
  private sent = false;

  /** `staleMs`: how long shared values hold without a newer share. */
  constructor(endpoints: () => Iterable<EndpointState>, clock: Clock, staleMs: number) {
    this.endpoints = endpoints;
    this.clock = clock;
    this.staleMs = staleMs;
  }

  /**
   * This worker's in-flight requests per pod (pods with none left out), or null when it has none
   * and its last report said so too: the primary keeps the last report, and an idle worker need
   * not wake it every interval to repeat "nothing" (the first report always goes).
   */
  report(): InflightReport | null {
    const wasIdle = this.sent && this.reported.size === 0;
    this.reported.clear();
    const counts: [string, number][] = [];
    for (const e of this.endpoints()) {
      if (e.inflight <= 0) continue;
      counts.push([e.key, e.inflight]);
      this.reported.set(e.key, e.inflight);
    }
    if (wasIdle && counts.length === 0) return null;
    this.sent = true;
    return { t: MSG_INFLIGHT, counts };
  }

  apply(m: LoadShare): void {
    const until = this.clock() + this.staleMs;
    const rows = new Map<string, PodLoadRow>();
    for (const r of m.rows) rows.set(r[0], r);
    const totals = new Map(m.inflight);
    const stale = new Set(m.stale);
    for (const e of this.endpoints()) {
      const l = e.load;
      const r = rows.get(e.key);
      if (r === undefined) {
        l.scrapedUntil = 0;
        l.scraped = stale.has(e.key);
      } else {
        l.scraped = true;
        l.waiting = r[1] ?? NaN;
        l.running = r[2] ?? NaN;
        l.kvUsage = r[3] ?? NaN;
        l.ttftMs = r[4] ?? NaN;
        l.tpotMs = r[5] ?? NaN;
        l.scrapedUntil = until;
      }
      l.otherInflight = Math.max(0, (totals.get(e.key) ?? 0) - (this.reported.get(e.key) ?? 0));
      l.sharedUntil = until;
    }
  }
}

export function isLoadShare(m: unknown): m is LoadShare {
  return m !== null && typeof m === 'object' && (m as { t?: unknown }).t === MSG_LOAD;
}
