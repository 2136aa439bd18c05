/**
 * One /metrics view for the whole router instance across its node:cluster workers.
 *
 * The primary serves no traffic, so the worker that receives GET /metrics asks the primary, which
 * gathers every worker's registry (registryAnswer()) and sums them into the text prom-client's
 * AggregatorRegistry.aggregate() would give (aggregate-in-turns.ts), keeping each histogram family
 * as its parts (a series per entry) from the worker's answer to the text. Messages use the
 * `metrics:` prefix on the shared IPC channel:
 *   worker -> primary  { t: 'metrics:hello' }                 this worker answers collects
 *   worker -> primary  { t: 'metrics:get', id }               a scrape arrived
 *   primary -> worker  { t: 'metrics:collect', id }           send your registry
 *   worker -> primary  { t: 'metrics:data', id, metrics, podEpochs }  its registry (registryAnswer():
 *                      prom-client's JSON of each metric, a histogram family's as HistogramParts,
 *                      about a tenth of the JSON), and the epochs of the backend pods of the
 *                      configuration applied (backend-pod-epochs.ts)
 *   worker -> primary  { t: 'metrics:data', id, metrics: [], error }  its registry could not be read:
 *                      counted as a worker that did not answer (its last answer stands in)
 *   primary -> worker  { t: 'metrics:text', id, text | error } the aggregate, as exposition text; a
 *                      text of more than TEXT_PART_CHARS in parts, each but the last with `more: true`,
 *                      one a turn of the primary's loop (the worker writes each out as it comes)
 *   worker -> primary  { t: 'metrics:final', id, metrics, podEpochs }  a worker about to exit cleanly
 *                      (drained): its registry as of its last request, which stands as its last answer
 *   primary -> worker  { t: 'metrics:final-taken', id }      the worker may exit (its counts are kept)
 *
 * Why not AggregatorRegistry.clusterMetrics(): it asks every connected worker and fails the whole
 * scrape after 5 s when one does not answer (a worker still starting, one that just died), and it
 * keys on prom-client's module-global registry list. Here only workers that said hello are asked,
 * a worker's exit settles its part at once, and after `timeoutMs` the scrape is answered with what
 * arrived (however late the primary's loop runs that timer, what arrived in time is read first);
 * `inference_router_metrics_scrape_workers{state}` tells how many answered or were missing.
 * Counters never go down meanwhile (metrics-retained.ts): a worker that exited keeps its counters
 * and histograms of its last answer in every later sum (a worker that drains sends its final counts
 * before it exits, so nothing it counted since the last scrape is lost), and one that did not answer in time is
 * counted with those of its last answer, as is one that cannot be asked (its channel closed before
 * the primary saw its exit: a worker dying). The exited workers' series of a backend pod that left
 * the configuration go too, as do a late worker's, once no answering worker has that pod
 * (`backendPods`). A backend pod's series are summed at one epoch at a time (backend-pod-epochs.ts):
 * what was counted for it before it left the configuration and came back goes, the workers' that
 * moved on, exited or are late included, once no answering worker still has the pod at that epoch.
 * prom-client's own messages (`type: 'prom-client:...'`) and other modules' `t` prefixes pass
 * through untouched.
 */
import type { Worker } from 'node:cluster';
import type { RouterMetrics } from './metrics.js';
import { HistogramFamily, type MetricJson, type RegistrableMetric } from './metrics-series.js';
import type { SentMetric } from './sent-metric.js';
import type { Registry } from 'prom-client';
import { monotonicPart, movedOn, RetiredCounts } from './metrics-retained.js';
import { MonotoneSeries } from './metrics-monotone.js';
import { countedPods, heldEpochs, notePartEpochs, shownPart, ShownEpochs, type PartEpochs, type PodAnswer, type PodEpochs } from './backend-pod-epochs.js';
import { DEFAULT_MAX_TENANTS, TenantSeriesBound } from './tenant-series-bound.js';
import { setReadDeadline } from '../timers.js';
import { SumsOneAtATime } from './aggregate-in-turns.js';

export const MSG_HELLO = 'metrics:hello';
export const MSG_GET = 'metrics:get';
export const MSG_COLLECT = 'metrics:collect';
export const MSG_DATA = 'metrics:data';
export const MSG_TEXT = 'metrics:text';
export const MSG_FINAL = 'metrics:final';
export const MSG_FINAL_TAKEN = 'metrics:final-taken';

export type { SentMetric };

interface Msg {
  t: string;
  id?: number;
  metrics?: SentMetric[];
  podEpochs?: PodEpochs;
  text?: string;
  /** A part of the text: more follow. */
  more?: boolean;
  error?: string;
}

/**
 * Characters of the text in one metrics:text message, about (a part ends with a line). A worker
 * parses a message in one go on its event loop and writes it out: a 30 MB text (5,000 routes in
 * use) whole held it ~55 ms to parse alone, a 1 M part a few.
 */
export const TEXT_PART_CHARS = 1 << 20;

function metricsMessage(m: unknown): Msg | null {
  if (typeof m !== 'object' || m === null) return null;
  const t = (m as { t?: unknown }).t;
  return typeof t === 'string' && t.startsWith('metrics:') ? (m as Msg) : null;
}

/** What the primary side needs of node:cluster (the Cluster object satisfies it). */
export interface MetricsCluster {
  on(event: 'message', listener: (worker: Worker, message: unknown) => void): unknown;
  on(event: 'exit', listener: (worker: Worker) => void): unknown;
  off(event: 'message', listener: (worker: Worker, message: unknown) => void): unknown;
  off(event: 'exit', listener: (worker: Worker) => void): unknown;
}

interface Gather {
  readonly requester: Worker;
  readonly requestId: number;
  readonly waiting: Set<Worker>;
  /** The answers so far, by worker (one that exits meanwhile is taken out: retired has it). */
  readonly results: Map<Worker, PodAnswer>;
  /**
   * Workers that could not be asked (channel already closed, send failed): a dying worker whose
   * exit the primary has not seen yet. Their last counters stand in, as for one that is late.
   */
  readonly unreachable: Worker[];
  /** Workers that answered with an error (registry not read): missing, their last counters stand in. */
  readonly failed: Worker[];
  /** The backend pods configured when its collects were sent (its answers may have those). */
  readonly configuredAtStart: ReadonlySet<string> | null;
  timer: NodeJS.Timeout | null;
}

/**
 * Primary side: answers workers' scrapes with the sum over all workers. Returns a detach function.
 * `timeoutMs`: how long to wait for workers before answering with those that did (default 2000).
 * `backendPods`: names of the backend pods in the configuration now (null before there is one);
 * unset, exited workers' series of every pod are kept. `maxTenants`: tenants with their own series
 * in the sum (tenant-series-bound.ts; default 100, as each worker's). `ownSeries`: the primary's own
 * series, read at each scrape and added once (e.g. the Kubernetes watch's, kubernetes-watch-series.ts).
 */
export function attachMetricsPrimary(cluster: MetricsCluster, opts: {
  timeoutMs?: number; backendPods?: () => ReadonlySet<string> | null; maxTenants?: number; ownSeries?: () => MetricJson[]; textPartChars?: number;
} = {}): () => void {
  const timeoutMs = opts.timeoutMs ?? 2000;
  const partChars = opts.textPartChars ?? TEXT_PART_CHARS;
  const tenants = new TenantSeriesBound(opts.maxTenants ?? DEFAULT_MAX_TENANTS);
  const ready = new Set<Worker>();
  const gathers = new Map<number, Gather>();
  /** Each live worker's last answer: its counters stand in when it misses a scrape, and stay when it exits. */
  const last = new Map<Worker, PodAnswer>();
  const retired = new RetiredCounts();
  const shown = new ShownEpochs();
  /** No float sum shown lower than the scrape before by a rounding step (metrics-monotone.ts), checked as each sum is written. */
  const sums = new SumsOneAtATime({ monotone: new MonotoneSeries() });
  let nextId = 1;

  /** A worker's counters of its last answer, in place of one it did not give (none once it exited: retired has them). */
  const standIn = (w: Worker, parts: PodAnswer[]): void => {
    const prev = last.get(w);
    if (prev !== undefined) parts.push({ metrics: monotonicPart(prev.metrics), epochs: prev.epochs });
  };

  const finish = (id: number): void => {
    const g = gathers.get(id);
    if (g === undefined) return;
    gathers.delete(id);
    if (g.timer !== null) clearTimeout(g.timer);
    const answered = g.results.size;
    const missing = g.waiting.size + g.failed.length;
    const answers = [...g.results.values()];
    const standIns: PodAnswer[] = [];
    for (const w of g.waiting) standIn(w, standIns);
    for (const w of g.unreachable) standIn(w, standIns);
    for (const w of g.failed) standIn(w, standIns);
    // Indexed by pod once per scrape: deciding each pod is then lookups, not a pass over every part.
    const parts: PartEpochs = new Map();
    for (const s of standIns) notePartEpochs(s.metrics, s.epochs, parts);
    retired.notePartEpochs(parts);
    const pods = new Set<string>(parts.keys());
    for (const a of answers) countedPods(a.metrics, pods);
    // Answers that may still come with a pod: to a scrape still gathering that asked while it was
    // configured, or a live worker's last answer (a stand-in to come).
    let liveHeld: Map<string, number> | null = null;
    const lingering = (pod: string): boolean => {
      for (const other of gathers.values()) if (other.configuredAtStart === null || other.configuredAtStart.has(pod)) return true;
      return (liveHeld ??= heldEpochs([...last.values()])).has(pod);
    };
    shown.decide(pods, heldEpochs(answers), opts.backendPods?.() ?? null, parts, lingering);
    retired.settle(shown);
    const lists = answers.map((a) => shownPart(a.metrics, a.epochs, shown, false));
    for (const s of standIns) lists.push(shownPart(s.metrics, s.epochs, shown, true));
    lists.push(retired.list(shown));
    const bounded = tenants.apply(lists);
    bounded.push([scrapeWorkers(answered, missing), ...(opts.ownSeries?.() ?? [])]);
    // One metric a turn: the primary answers heartbeats meanwhile; one sum at a time (aggregate-in-turns.ts).
    const text = sums.sum(bounded);
    if (text === null) {
      reply(g, { t: MSG_TEXT, id: g.requestId, error: 'two earlier scrapes are still being summed (a scrape of many series takes seconds: docs/metrics.md, "Series per route")' });
      return;
    }
    text.then(
      (t) => replyText(g, t, partChars),
      (err: Error) => reply(g, { t: MSG_TEXT, id: g.requestId, error: `cannot aggregate worker metrics: ${err.message}` }),
    );
  };

  const onMessage = (worker: Worker, message: unknown): void => {
    const m = metricsMessage(message);
    if (m === null) return;
    if (m.t === MSG_HELLO) {
      ready.add(worker);
    } else if (m.t === MSG_GET && typeof m.id === 'number') {
      const id = nextId++;
      const g: Gather = { requester: worker, requestId: m.id, waiting: new Set(), results: new Map(), unreachable: [], failed: [], configuredAtStart: opts.backendPods?.() ?? null, timer: null };
      gathers.set(id, g);
      for (const w of ready) {
        if (!w.isConnected()) {
          g.unreachable.push(w);
          continue;
        }
        g.waiting.add(w);
        w.send({ t: MSG_COLLECT, id }, undefined, (err) => {
          if (err === null || !g.waiting.delete(w)) return;
          g.unreachable.push(w);
          if (g.waiting.size === 0) finish(id);
        });
      }
      if (g.waiting.size === 0) finish(id);
      else {
        // A read deadline (timers.ts): answers that came in time while this loop was busy past it
        // are read first, not taken for workers that missed the scrape.
        g.timer = setReadDeadline(() => finish(id), timeoutMs);
        g.timer.unref();
      }
    } else if (m.t === MSG_DATA && typeof m.id === 'number') {
      const g = gathers.get(m.id);
      if (g === undefined || !g.waiting.delete(worker)) return;
      if (!Array.isArray(m.metrics) || m.error !== undefined) {
        // Not an answer: taken as one, its counters would drop for this scrape and its pods' counts
        // would move on from their epoch (kept as an exited worker's, then counted again).
        g.failed.push(worker);
        if (g.waiting.size === 0) finish(m.id);
        return;
      }
      const answer: PodAnswer = { metrics: m.metrics, epochs: podEpochsOf(m.podEpochs) };
      take(worker, answer);
      g.results.set(worker, answer);
      if (g.waiting.size === 0) finish(m.id);
    } else if (m.t === MSG_FINAL && typeof m.id === 'number') {
      // A worker about to exit: its final counts stand as its last answer, which its exit retires.
      if (Array.isArray(m.metrics) && m.error === undefined) {
        const answer: PodAnswer = { metrics: m.metrics, epochs: podEpochsOf(m.podEpochs) };
        take(worker, answer);
        // Newer than the answer a scrape still gathering has from it: that scrape shows these.
        for (const g of gathers.values()) if (g.results.has(worker)) g.results.set(worker, answer);
      }
      if (worker.isConnected()) worker.send({ t: MSG_FINAL_TAKEN, id: m.id }, undefined, ignore);
    }
  };

  /** A worker's newest answer becomes its last (what it counted of a pod it moved on from is retired). */
  const take = (worker: Worker, answer: PodAnswer): void => {
    const prev = last.get(worker);
    if (prev !== undefined) {
      const moved = movedOn(prev, answer);
      if (moved.length > 0) {
        retired.add(moved, prev.epochs);
        // In retired now: a scrape still gathering that has the older answer takes this one.
        for (const other of gathers.values()) if (other.results.has(worker)) other.results.set(worker, answer);
      }
    }
    last.set(worker, answer);
  };

  const onExit = (worker: Worker): void => {
    ready.delete(worker);
    const prev = last.get(worker);
    if (prev !== undefined) {
      last.delete(worker);
      retired.add(prev.metrics, prev.epochs);
    }
    for (const [id, g] of gathers) {
      g.results.delete(worker); // in retired now: counted once
      if (g.waiting.delete(worker) && g.waiting.size === 0) finish(id);
    }
  };

  cluster.on('message', onMessage);
  cluster.on('exit', onExit);
  return () => {
    cluster.off('message', onMessage);
    cluster.off('exit', onExit);
    for (const id of [...gathers.keys()]) finish(id);
  };
}

/**
 * A worker's registry as it sends it: what getMetricsAsJSON() gives (the router sets no default
 * labels), but a histogram family as its parts. With 1,000 routes in use the JSON of the whole
 * registry was 8.2 MB, and its making and writing held the worker's event loop 88–143 ms a scrape
 * (0.83 MB and 12–36 ms so). Every metric is read in this call, before anything else runs, as
 * getMetricsAsJSON() reads them: read one after another across awaits, a configuration arriving
 * in the same read of the IPC channel (its message emitted on the next tick) would be applied
 * between two metrics, and the answer's pod epochs would not be those of its counters.
 */
export function registryAnswer(registry: Registry): Promise<SentMetric[]> {
  return Promise.all(registry.getMetricsAsArray().map((metric): SentMetric | Promise<SentMetric> => {
    const m = metric as unknown as RegistrableMetric;
    return m instanceof HistogramFamily ? m.parts() : m.get();
  }));
}

/** The pod epochs of a worker's answer, when it gave them (a plain object of numbers). */
function podEpochsOf(x: unknown): PodEpochs | null {
  if (typeof x !== 'object' || x === null || Array.isArray(x)) return null;
  for (const v of Object.values(x)) if (typeof v !== 'number') return null;
  return x as PodEpochs;
}

function reply(g: Gather, m: Msg): void {
  if (g.requester.isConnected()) g.requester.send(m, undefined, ignore);
}

/** Sends `text` to the scrape's worker: whole, or in parts of about `partChars` (each ends with a line), one a turn. */
function replyText(g: Gather, text: string, partChars: number): void {
  let from = 0;
  const next = (): void => {
    if (!g.requester.isConnected()) return;
    const to = partEnd(text, from, partChars);
    if (to >= text.length) {
      reply(g, { t: MSG_TEXT, id: g.requestId, text: text.slice(from) });
      return;
    }
    reply(g, { t: MSG_TEXT, id: g.requestId, text: text.slice(from, to), more: true });
    from = to;
    setImmediate(next);
  };
  next();
}

/** Where the part of `text` from `from` ends: after the first line end at or past `from + partChars`, or at the end of the text. */
export function partEnd(text: string, from: number, partChars: number): number {
  if (text.length - from <= partChars) return text.length;
  const nl = text.indexOf('\n', from + partChars - 1);
  return nl < 0 ? text.length : nl + 1;
}

function scrapeWorkers(answered: number, missing: number): MetricJson {
  return {
    name: 'inference_router_metrics_scrape_workers',
    help: 'Workers whose metrics are in this scrape (answered) or are not (missing: did not answer in time).',
    type: 'gauge',
    values: [{ labels: { state: 'answered' }, value: answered }, { labels: { state: 'missing' }, value: missing }],
    aggregator: 'sum',
  };
}

/** Where a scrape's text goes as it comes from the primary (metrics-answer.ts). */
export interface MetricsTextSink {
  /** A part of the text: more follow. */
  part(text: string): void;
  /** The text's last part (all of it when it came whole). */
  end(text: string): void;
  /** No text, or no more of it: why. */
  fail(err: Error): void;
}

interface Pending {
  readonly sink: MetricsTextSink;
  readonly timer: NodeJS.Timeout;
  /** Parts taken so far. */
  parts: number;
}

/**
 * `timeoutMs`: how long a scrape waits for the primary (default 5000). `podEpochs`: the epochs of
 * the backend pods of the configuration this process applied (null before one; unset: not told).
 */
export interface WorkerMetricsLinkOptions {
  timeoutMs?: number;
  podEpochs?: () => PodEpochs | null;
}

/**
 * Worker side of one process: answers the primary's collects from `metrics.registry`, and fetches
 * the instance-wide text for a scrape. Without an IPC channel (not under node:cluster) a scrape
 * gets this process's own metrics.
 */
export class WorkerMetricsLink {
  private readonly metrics: RouterMetrics;
  private readonly timeoutMs: number;
  private readonly podEpochs: () => PodEpochs | null;
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  /** The id of the final counts sent (final()), and what resolves its wait when the primary took them. */
  private finalId = 0;
  private finalTaken: (() => void) | null = null;
  private readonly onMessage = (message: unknown): void => {
    const m = metricsMessage(message);
    if (m === null || typeof m.id !== 'number') return;
    if (m.t === MSG_COLLECT) {
      const id = m.id;
      // Read with the counters (no configuration is applied between: registryAnswer() reads them without waiting for I/O).
      const podEpochs = this.podEpochs() ?? undefined;
      registryAnswer(this.metrics.registry).then(
        (metrics) => send({ t: MSG_DATA, id, metrics, podEpochs }),
        (err: Error) => send({ t: MSG_DATA, id, metrics: [], error: `cannot read the metrics registry: ${err.message}` }),
      );
    } else if (m.t === MSG_FINAL_TAKEN) {
      if (this.finalTaken !== null && m.id === this.finalId) this.finalTaken();
    } else if (m.t === MSG_TEXT) {
      const p = this.pending.get(m.id);
      if (p === undefined) return;
      if (typeof m.text === 'string' && m.more === true) {
        p.parts++;
        p.timer.refresh(); // the wait for the next part starts again
        p.sink.part(m.text);
        return;
      }
      this.pending.delete(m.id);
      clearTimeout(p.timer);
      if (typeof m.text === 'string') p.sink.end(m.text);
      else p.sink.fail(new Error(m.error ?? 'no metrics text from the primary'));
    }
  };

  constructor(metrics: RouterMetrics, opts: WorkerMetricsLinkOptions = {}) {
    this.metrics = metrics;
    this.timeoutMs = opts.timeoutMs ?? 5000;
    this.podEpochs = opts.podEpochs ?? (() => null);
    if (process.send !== undefined) {
      process.on('message', this.onMessage);
      send({ t: MSG_HELLO });
    }
  }

  /**
   * Exposition text for the whole instance (or this process alone without IPC), into `sink` as it
   * comes: failed when the primary does not answer within `timeoutMs`, or sends no next part
   * within that long.
   */
  collect(sink: MetricsTextSink): void {
    if (process.send === undefined || !process.connected) {
      this.metrics.metrics().then((text) => sink.end(text), (err: Error) => sink.fail(err));
      return;
    }
    const id = this.nextId++;
    const timer = setTimeout(() => this.expire(id), this.timeoutMs);
    timer.unref();
    this.pending.set(id, { sink, timer, parts: 0 });
    if (!send({ t: MSG_GET, id })) {
      this.pending.delete(id);
      clearTimeout(timer);
      sink.fail(new Error('cannot reach the primary'));
    }
  }

  private expire(id: number): void {
    const p = this.pending.get(id);
    if (p === undefined) return;
    this.pending.delete(id);
    p.sink.fail(new Error(p.parts === 0 ? `the primary did not answer within ${this.timeoutMs} ms` : `the primary sent no more of the text for ${this.timeoutMs} ms`));
  }

  /**
   * A worker about to exit cleanly: sends its registry to the primary as its last answer, so what
   * it counted since the last scrape stays in the instance's sums. Resolves true once the primary
   * took it, false when it cannot be sent or the primary has not said so within `timeoutMs`
   * (the exit goes on; the counts since the last scrape are then lost, as with a crash); null
   * without a primary (not under node:cluster, or its channel closed: nobody to tell).
   */
  async final(timeoutMs: number): Promise<boolean | null> {
    if (process.send === undefined || !process.connected) return null;
    let metrics: SentMetric[];
    try {
      metrics = await registryAnswer(this.metrics.registry);
    } catch {
      return false;
    }
    const id = this.nextId++;
    return new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => done(false), timeoutMs);
      const done = (taken: boolean): void => {
        clearTimeout(timer);
        this.finalTaken = null;
        resolve(taken);
      };
      this.finalId = id;
      this.finalTaken = () => done(true);
      if (!send({ t: MSG_FINAL, id, metrics, podEpochs: this.podEpochs() ?? undefined })) done(false);
    });
  }

  close(): void {
    process.off('message', this.onMessage);
    for (const p of this.pending.values()) {
      clearTimeout(p.timer);
      p.sink.fail(new Error('metrics link closed'));
    }
    this.pending.clear();
  }
}

/** False when the message could not be queued (no channel, or it closed); a full backlog still queues. */
function send(m: Msg): boolean {
  if (process.send === undefined) return false;
  try {
    process.send(m, undefined, undefined, ignore);
    return true;
  } catch {
    return false;
  }
}

function ignore(): void {}
