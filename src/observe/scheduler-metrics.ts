/**
 * Metrics of pod choice (docs/metrics.md): retries, connect failures, 5xx failures, ejections and the ejected
 * pods of this process, the scorer that decided each pick and the winning score. Registered in
 * the worker's RouterMetrics registry, so they are summed across workers like the others.
 */
import type { Registry } from 'prom-client';
import { CollectedFamily, CounterFamily, HistogramFamily, type HistogramSeries, type MetricValue } from './metrics-series.js';
import { BackendPodCounters, sumByBackendPod } from './backend-pod-series.js';

const SCORE_BUCKETS = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1];

export class SchedulerMetrics {
  /** Pods of the configuration applied (series of others are dropped at scrape time); null: keep all. */
  private livePodsSource: (() => Iterable<string>) | null = null;
  private readonly livePods = (): Iterable<string> | null => (this.livePodsSource === null ? null : this.livePodsSource());
  private readonly retries = new CounterFamily('inference_router_upstream_retries_total',
    'Requests sent again to another pod after a failure before any byte reached the client, by ModelServer (namespace/name).', ['server']);
  private readonly connectFailures = new BackendPodCounters('inference_router_upstream_connect_failures_total',
    'Attempts that did not reach the pod (connection refused, unreachable, connect timeout), by backend pod (backend_pod; pod is the same, deprecated).', this.livePods);
  private readonly timeouts = new BackendPodCounters('inference_router_upstream_timeouts_total',
    'Attempts on which the pod did not answer in time (ModelServer timeout), by backend pod (backend_pod; pod is the same, deprecated).', this.livePods);
  private readonly resets = new BackendPodCounters('inference_router_upstream_resets_total',
    'Attempts whose connection the pod closed or broke after it had the request, before its answer ended (before the answer, or partway through it), by backend pod (backend_pod; pod is the same, deprecated).', this.livePods);
  private readonly serverErrors = new BackendPodCounters('inference_router_upstream_5xx_failures_total',
    'Answers of the pod that count as its failures for passive health (500, 502, 504, 503 without retry-after), by backend pod (backend_pod; pod is the same, deprecated).', this.livePods);
  private readonly ejections = new BackendPodCounters('inference_router_pod_ejections_total',
    'Pods set aside by passive health (outlier detection; counted once per instance), by backend pod (backend_pod; pod is the same, deprecated).', this.livePods);
  private readonly decisions = new CounterFamily('inference_router_scheduler_decisions_total',
    'Pod choices by the scorer that decided them (largest weighted margin of the chosen pod over the runner-up; "single" = one candidate, "tie" = no margin).', ['scorer']);
  private readonly score = new HistogramFamily('inference_router_scheduler_score',
    'Weighted score (0..1) of the chosen pod.', [], SCORE_BUCKETS);
  private readonly scoreSeries: HistogramSeries = this.score.child();

  /** `ejectedPods`: pods out of rotation now; `scrapedPods`: the pods scraped, each with 1 when its values are fresh, else 0. */
  /** `prefixHashes`: block hashes in the prefix memory of this process. */
  /** `livePods`: names of the pods in the configuration now (backend-pod-series.ts); unset: counters of every pod are kept. */
  constructor(registry: Registry, ejectedPods: () => Iterable<string>, scrapedPods: () => Iterable<[string, number]> = () => [], prefixHashes: () => number = () => 0,
    livePods: (() => Iterable<string>) | null = null) {
    this.livePodsSource = livePods;
    for (const m of [this.retries, this.connectFailures, this.timeouts, this.resets, this.serverErrors, this.ejections, this.decisions, this.score]) registry.registerMetric(m as never);
    registry.registerMetric(new CollectedFamily('inference_router_pod_ejected',
      'Pods out of rotation now (1 per process that ejected it; summed across workers).', 'gauge',
      () => countByBackendPod(ejectedPods())) as never);
    registry.registerMetric(new CollectedFamily('inference_router_pod_metrics_fresh',
      'Pods whose /metrics the router scrapes: 1 per worker that holds fresh values (summed across workers), 0 while none does.', 'gauge',
      () => sumByBackendPod(scrapedPods(), (p) => p[0], (p) => p[1])) as never);
    registry.registerMetric(new CollectedFamily('inference_router_scheduler_prefix_hashes',
      'Prompt block hashes in the prefix-cache memory (per worker; summed across workers).', 'gauge',
      () => [{ labels: {}, value: prefixHashes() }]) as never);
  }

  retried(server: string): void { this.retries.childOf(server).value++; }
  connectFailed(pod: string): void { this.connectFailures.of(pod).value++; }
  timedOut(pod: string): void { this.timeouts.of(pod).value++; }
  reset(pod: string): void { this.resets.of(pod).value++; }
  serverError(pod: string): void { this.serverErrors.of(pod).value++; }
  ejected(pod: string): void { this.ejections.of(pod).value++; }

  /** A new configuration was applied: the counters of pods that left it go now (and at each scrape). */
  configurationApplied(): void {
    for (const f of [this.connectFailures, this.timeouts, this.resets, this.serverErrors, this.ejections]) f.prune();
  }

  decided(scorer: string, score: number): void {
    this.decisions.childOf(scorer).value++;
    this.scoreSeries.observe(score);
  }
}

function countByBackendPod(pods: Iterable<string>): MetricValue[] {
  return sumByBackendPod(pods, (pod) => pod, () => 1);
}
