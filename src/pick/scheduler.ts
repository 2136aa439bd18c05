import type { Clock } from '../clock.js';
import type { InferenceRequest } from '../api/inference-api.js';
import type { SchedulerMetrics } from '../observe/scheduler-metrics.js';
import type { CompiledServer } from '../route/route-table.js';
import type { EndpointState } from '../upstream/endpoint-registry.js';
import { pickLeastInflight } from './least-inflight.js';
import { OutlierDetector } from './outlier-detector.js';
import type { SchedulerSettings } from './scheduler-settings.js';

export interface SchedulerOptions {
  readonly settings: SchedulerSettings;
  readonly clock: Clock;
  readonly metrics: SchedulerMetrics | null;
  readonly log: (message: string) => void;
  readonly random?: () => number;
}

/** Pod choice of one worker: passive health and the pick; told the outcome of every attempt. */
export class Scheduler {
  private readonly clock: Clock;
  private readonly metrics: SchedulerMetrics | null;
  private readonly random: () => number;
  readonly outlier: OutlierDetector;

  constructor(o: SchedulerOptions) {
    this.clock = o.clock;
    this.metrics = o.metrics;
    this.random = o.random ?? Math.random;
    const metrics = o.metrics;
    this.outlier = new OutlierDetector(o.settings.outlier, o.clock, {
      ejected: (pod, ms, failures, ejections) => {
        metrics?.ejected(pod);
        o.log(`pod ${pod} ejected for ${ms}ms after ${failures} connect failure(s)/timeout(s) in a row (ejection ${ejections} in a row)`);
      },
      returned: (pod) => o.log(`pod ${pod} answered again: back in rotation`),
    });
  }

  /** The pod for the next attempt, or null when every endpoint was tried. */
  pick(server: CompiledServer, exclude: readonly EndpointState[] | null, _req: InferenceRequest): EndpointState | null {
    return pickLeastInflight(server.endpoints, exclude, this.random, this.clock());
  }

  answered(e: EndpointState, _req: InferenceRequest): void {
    this.outlier.success(e);
  }

  connectFailed(e: EndpointState): void {
    this.metrics?.connectFailed(e.name);
    this.outlier.failure(e);
  }

  timedOut(e: EndpointState): void {
    this.metrics?.timedOut(e.name);
    this.outlier.failure(e);
  }

  retried(server: string): void {
    this.metrics?.retried(server);
  }
}
