import type { Clock } from '../clock.js';
import type { Endpoint, ModelServer } from '../config/resource-types.js';
import type { LevelledLog } from '../observe/ops-log.js';
import { endpointKey } from '../upstream/endpoint-registry.js';
import { engineSeries, readEngine, wantedNames, type EngineReading, type EngineSeries } from './engine-metrics.js';
import { sumSamples } from './prometheus-text.js';
import { fetchMetricsText } from './pod-metrics-fetch.js';

/** One pod's load as shared with the workers: [key, waiting, running, kvUsage, ttftMs, tpotMs] (NaN → null in JSON = unknown). */
export type PodLoadRow = [string, number | null, number | null, number | null, number | null, number | null];

/** Reads a pod's /metrics text; rejects on a failure or after `timeoutMs`. */
export type FetchText = (url: string, timeoutMs: number) => Promise<string>;

interface Target {
  readonly key: string;
  readonly url: string;
  readonly series: EngineSeries;
  readonly wanted: ReadonlySet<string>;
  last: EngineReading | null;
  /** Clock ms of the last successful scrape. */
  at: number;
  ttftMs: number;
  tpotMs: number;
  busy: boolean;
  failing: boolean;
}

/** Pods scraped at once (PodMetricsScraper.scrapeAll). */
export const SCRAPES_IN_FLIGHT = 64;

/**
 * Scrapes the /metrics of every endpoint of a ModelServer whose inferenceEngine is known, once
 * per instance (in the primary), every `intervalMs`. A pod whose scrape fails keeps its last
 * values for `staleMs`, then counts as unknown (left out of rows()).
 */
export class PodMetricsScraper {
  private readonly intervalMs: number;
  readonly staleMs: number;
  private readonly clock: Clock;
  private readonly fetchText: FetchText;
  private readonly log: LevelledLog;
  private targets = new Map<string, Target>();
  private timer: NodeJS.Timeout | null = null;

  constructor(o: { intervalMs: number; clock: Clock; log: LevelledLog; fetchText?: FetchText }) {
    this.intervalMs = o.intervalMs;
    this.staleMs = 3 * o.intervalMs;
    this.clock = o.clock;
    this.log = o.log;
    this.fetchText = o.fetchText ?? fetchMetricsText;
  }

  /** The pods to scrape, from a snapshot's servers; pods kept across calls keep their values. */
  setTargets(servers: readonly (ModelServer & { endpoints: Endpoint[] })[]): void {
    const next = new Map<string, Target>();
    for (const s of servers) {
      const series = engineSeries(s.inferenceEngine);
      if (series === null) continue;
      for (const e of s.endpoints) {
        const key = endpointKey(e);
        const old = this.targets.get(key);
        if (old !== undefined && old.series === series) { next.set(key, old); continue; }
        const host = e.host.includes(':') && !e.host.startsWith('[') ? `[${e.host}]` : e.host;
        next.set(key, {
          key, url: `http://${host}:${e.port}/metrics`, series, wanted: wantedNames(series),
          last: null, at: 0, ttftMs: NaN, tpotMs: NaN, busy: false, failing: false,
        });
      }
    }
    this.targets = next;
  }

  start(): void {
    if (this.timer !== null) return;
    this.timer = setInterval(() => void this.scrapeAll(), this.intervalMs);
    this.timer.unref();
    void this.scrapeAll();
  }

  stop(): void {
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
  }

  /**
   * One round over every pod (a pod whose last scrape is still running is skipped), at most
   * SCRAPES_IN_FLIGHT at a time (a sixteenth of a larger fleet): a fleet of thousands of pods was asked all at once each interval,
   * a burst of connections that the pods' servers (and a node's conntrack) meet together.
   */
  async scrapeAll(): Promise<void> {
    const targets = [...this.targets.values()];
    let next = 0;
    const lane = async (): Promise<void> => {
      while (next < targets.length) await this.scrape(targets[next++]);
    };
    // A sixteenth of a fleet over 1,024 pods at a time: a round then waits for sixteen answers in
    // turn at most, so slow pods' values do not go stale (three intervals) behind the others.
    const width = Math.max(SCRAPES_IN_FLIGHT, Math.ceil(targets.length / 16));
    const lanes: Promise<void>[] = [];
    for (let i = 0; i < width && i < targets.length; i++) lanes.push(lane());
    await Promise.all(lanes);
  }

  /** Pods scraped whose values are not fresh (no answer yet, or none for three intervals). */
  staleKeys(): string[] {
    const now = this.clock();
    const out: string[] = [];
    for (const t of this.targets.values()) if (t.last === null || now - t.at > this.staleMs) out.push(t.key);
    return out;
  }

  /** Fresh values of every scraped pod. */
  rows(): PodLoadRow[] {
    const now = this.clock();
    const out: PodLoadRow[] = [];
    for (const t of this.targets.values()) {
      if (t.last === null || now - t.at > this.staleMs) continue;
      out.push([t.key, num(t.last.waiting), num(t.last.running), num(t.last.kvUsage), num(t.ttftMs), num(t.tpotMs)]);
    }
    return out;
  }

  private async scrape(t: Target): Promise<void> {
    if (t.busy) return;
    t.busy = true;
    try {
      const text = await this.fetchText(t.url, this.intervalMs);
      const counts = new Map<string, number>();
      const reading = readEngine(t.series, sumSamples(text, t.wanted, counts), counts);
      t.ttftMs = meanMs(t.last?.ttftSum, t.last?.ttftCount, reading.ttftSum, reading.ttftCount, t.ttftMs);
      t.tpotMs = meanMs(t.last?.tpotSum, t.last?.tpotCount, reading.tpotSum, reading.tpotCount, t.tpotMs);
      t.last = reading;
      t.at = this.clock();
      if (t.failing) this.log('info', `pod metrics: ${t.url} answers again`);
      t.failing = false;
    } catch (err) {
      if (!t.failing) this.log('warn', `pod metrics: cannot scrape ${t.url}: ${(err as Error).message} (last values kept for ${this.staleMs}ms)`);
      t.failing = true;
    } finally {
      t.busy = false;
    }
  }
}

function num(v: number): number | null {
  return Number.isFinite(v) ? v : null;
}

/**
 * Mean of a histogram over the last interval (Δsum/Δcount), in ms; with no new observation the
 * previous mean stands; on the first scrape or a counter reset, the mean since the pod started.
 */
function meanMs(prevSum: number | undefined, prevCount: number | undefined, sum: number, count: number, previous: number): number {
  if (!Number.isFinite(sum) || !Number.isFinite(count)) return NaN;
  if (prevSum === undefined || prevCount === undefined || !Number.isFinite(prevCount) || count < prevCount) {
    return count > 0 ? (sum / count) * 1000 : NaN;
  }
  const dc = count - prevCount;
  return dc > 0 ? ((sum - prevSum) / dc) * 1000 : previous;
}
