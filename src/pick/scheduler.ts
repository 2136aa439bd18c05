import type { Clock } from '../clock.js';
import type { LevelledLog } from '../observe/ops-log.js';
import type { SchedulerMetrics } from '../observe/scheduler-metrics.js';
import type { CompiledServer } from '../route/route-table.js';
import type { PromptText } from '../tokens/prompt-text.js';
import type { EndpointState } from '../upstream/endpoint-registry.js';
import { OutlierDetector, countsAs5xx, ejectionMessage } from './outlier-detector.js';
import { PodScorer } from './pod-scorer.js';
import { prefixBlockHashes } from './prefix-hashes.js';
import { PrefixStore } from './prefix-store.js';
import type { SchedulerSettings } from './scheduler-settings.js';

export interface SchedulerOptions {
  readonly settings: SchedulerSettings;
  readonly clock: Clock;
  readonly metrics: SchedulerMetrics | null;
  /** A pod ejected (`warn`) or back in rotation (`info`). */
  readonly log: LevelledLog;
  readonly random?: () => number;
  /**
   * A failure, or the first answer of a failing pod, that the instance should hear before the
   * next interval (pod-health-share.ts). Without it (one process) this worker's view is the only one.
   */
  readonly news?: () => void;
  /** New (block hash → pod) pairs kept per interval for the other workers (0 = prefix memory not shared). */
  readonly sharePrefixUpTo?: number;
  /**
   * The ModelServer of this key in the configuration in force now: the pods of a request routed
   * before a reload that changed them. Without it, a request picks among the pods it was routed to.
   */
  readonly serverNow?: (key: string) => CompiledServer | undefined;
}

/** Weight of a new observation in the moving average of the latency this worker sees per pod. */
const OBSERVED_ALPHA = 0.2;

/**
 * Pod choice of one worker: passive health, the weighted scorers and the prefix memory; told
 * the outcome of every attempt.
 */
export class Scheduler {
  private readonly clock: Clock;
  private readonly metrics: SchedulerMetrics | null;
  private readonly random: () => number;
  private readonly scorer: PodScorer;
  /** Prefix memory (null when the prefix-cache scorer is off). */
  readonly prefix: PrefixStore | null;
  private readonly blockChars: number;
  private readonly hashes: Uint32Array;
  readonly outlier: OutlierDetector;
  private readonly news: (() => void) | null;
  private readonly serverNow: ((key: string) => CompiledServer | undefined) | null;
  /** Clock ms of the last pick: when the request it was made for goes out (answered's sentAt). */
  pickedAt = 0;

  constructor(o: SchedulerOptions) {
    this.clock = o.clock;
    this.metrics = o.metrics;
    this.random = o.random ?? Math.random;
    const c = o.settings.config;
    this.scorer = new PodScorer(c);
    this.prefix = c.weights['prefix-cache'] > 0 ? new PrefixStore(c.prefixCapacity, o.sharePrefixUpTo ?? 0) : null;
    this.blockChars = c.prefixBlockChars;
    this.hashes = new Uint32Array(c.prefixMaxBlocks);
    const metrics = o.metrics;
    this.news = o.news ?? null;
    this.serverNow = o.serverNow ?? null;
    // With the instance's view shared, the primary logs and counts ejections once; this
    // worker's detector only sets a failing pod aside at once, before the news comes back.
    const shared = this.news !== null;
    this.outlier = new OutlierDetector(o.settings.outlier, o.clock, {
      ejected: (pod, ms, failures, ejections, cause) => {
        if (shared) return;
        metrics?.ejected(pod);
        o.log('warn', ejectionMessage(pod, ms, failures, ejections, cause));
      },
      returned: (pod) => {
        if (!shared) o.log('info', `pod ${pod} answered again: back in rotation`);
      },
    });
  }

  /**
   * The pod for the next attempt, or null when every endpoint was tried. Pods that left the
   * configuration are not picked; when none of the server's pods is left, those of the server as
   * configured now are (a request routed before a reload that replaced them).
   */
  pick(server: CompiledServer, exclude: readonly EndpointState[] | null, prompt: PromptText | null): EndpointState | null {
    const endpoints = server.endpoints;
    const n = this.promptBlocks(endpoints, prompt);
    const now = this.clock();
    this.pickedAt = now;
    let e = this.scorer.pick(endpoints, exclude, now, this.prefix, this.hashes, n, this.random);
    if (e === null) {
      const current = this.serverNow?.(server.key);
      if (current === undefined || current.endpoints === endpoints) return null;
      e = this.scorer.pick(current.endpoints, exclude, now, this.prefix, this.hashes, n, this.random);
      if (e === null) return null;
    }
    return this.picked(e, n);
  }

  /**
   * The pod among `endpoints` (not in `exclude`) for an attempt, by the same scorers as pick(), or
   * null when every one was tried: the decode pod, then the prefill pod, of a pdGroup server.
   * `prompt` null: the prefix memory is neither read nor told.
   */
  pickAmong(endpoints: readonly EndpointState[], exclude: readonly EndpointState[] | null, prompt: PromptText | null): EndpointState | null {
    const n = this.promptBlocks(endpoints, prompt);
    const now = this.clock();
    this.pickedAt = now;
    const e = this.scorer.pick(endpoints, exclude, now, this.prefix, this.hashes, n, this.random);
    return e === null ? null : this.picked(e, n);
  }

  /** How many of the prompt's prefix blocks are hashed into `hashes` for a pick among `endpoints` (0: the prefix memory is not used). */
  private promptBlocks(endpoints: readonly EndpointState[], prompt: PromptText | null): number {
    return this.prefix !== null && prompt !== null && endpoints.length > 1 ? prefixBlockHashes(prompt, this.blockChars, this.hashes) : 0;
  }

  /** `e` was picked with `n` prefix blocks: the prefix memory and the metrics are told. */
  private picked(e: EndpointState, n: number): EndpointState {
    if (n > 0) this.prefix!.record(this.hashes, n, e);
    this.metrics?.decided(this.scorer.decider, this.scorer.score);
    return e;
  }

  /** The pod is ejected by passive health now. */
  isEjected(e: EndpointState): boolean {
    return OutlierDetector.ejected(e, this.clock());
  }

  /**
   * The pod answered `status`; `latencyMs`: to the first byte of a stream, to the end otherwise;
   * `retryAfter`: a 503 with retry-after (overloaded, not broken). Only answers below 400 teach the
   * pod's latency: an error answered at once says nothing of how fast the pod serves, and would
   * draw more traffic to a pod that fails everything. A 5xx that counts (outlier-detector.ts
   * countsAs5xx) adds to the pod's run of 5xx failures (unless ROUTER_OUTLIER_CONSECUTIVE_5XX is 0,
   * when it counts for nothing, and ends nothing); any other answer ends both runs, and an ejection, unless its request went out (`sentAt`, clock
   * ms: pickedAt of its pick) before the pod was ejected: such an answer is not counted, nor
   * reported (the primary's own detector checks it again against the ejection it knows).
   */
  answered(e: EndpointState, latencyMs: number, status: number, retryAfter: boolean, sentAt: number): void {
    const l = e.load;
    if (status < 400) l.observedMs = l.observedMs !== l.observedMs ? latencyMs : l.observedMs + OBSERVED_ALPHA * (latencyMs - l.observedMs);
    const h = e.health;
    if (status >= 500 && countsAs5xx(status, retryAfter)) {
      this.metrics?.serverError(e.name);
      if (this.outlier.on5xx) {
        h.report5xx++;
        this.outlier.serverError(e);
        this.news?.();
      }
      // Not counted (ROUTER_OUTLIER_CONSECUTIVE_5XX=0), a 5xx is no success either: the run of
      // connect failures, timeouts and resets goes on, and an ejection stands.
      return;
    }
    if (h.ejections !== 0 && sentAt <= h.ejectedAt) return; // sent before the ejection: old news
    h.reportSuccess = true;
    if (sentAt > h.reportSentAt) h.reportSentAt = sentAt;
    h.reportFailures = 0;
    h.report5xx = 0;
    if (h.consecutiveFailures === 0 && h.consecutive5xx === 0 && h.ejections === 0) return;
    this.outlier.success(e, sentAt);
    this.news?.();
  }

  connectFailed(e: EndpointState): void {
    this.metrics?.connectFailed(e.name);
    this.failed(e);
  }

  timedOut(e: EndpointState): void {
    this.metrics?.timedOut(e.name);
    this.failed(e);
  }

  /**
   * The pod had the request and the connection broke before its answer ended (upstream-errors.ts
   * PodFault.Lost): counted with the connect failures and timeouts, as the router's own failure
   * of the exchange (the client gets the router's 502, or a cut answer), not as an answer.
   */
  lost(e: EndpointState): void {
    this.metrics?.reset(e.name);
    this.failed(e);
  }

  private failed(e: EndpointState): void {
    e.health.reportFailures++;
    this.outlier.failure(e);
    this.news?.();
  }

  retried(server: string): void {
    this.metrics?.retried(server);
  }
}
