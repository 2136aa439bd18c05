/**
 * Epochs of backend pods: which run of a pod in the configuration a counter of it belongs to.
 *
 * A process drops its counters of a pod that left the configuration (backend-pod-series.ts); if the
 * pod comes back, they count from 0 again. The epoch of a pod is the version of the configuration
 * it (last) entered, and stays while the pod stays: a pod removed and re-added gets a new one. The
 * primary gives them with each configuration; a worker's metrics answer says those of the
 * configuration it applied, so the primary (metrics-cluster.ts) sums one epoch of a pod at a time:
 * - while an answering worker still has the pod at an older epoch, that epoch is the one summed
 *   (with what the workers that moved on, or exited, counted in it: metrics-retained.ts);
 * - then the newest: what was counted in earlier epochs goes for good. The sum restarts from the
 *   new epoch's counts once, which Prometheus reads as a counter reset whose increase is exactly
 *   those counts.
 */
import { forEachSeriesLabels, keepSeries, type SentMetric } from './sent-metric.js';

/** Pod name → epoch (version of the configuration the pod entered), for the pods of one configuration. */
export type PodEpochs = Readonly<Record<string, number>>;

/** The epoch of a series of an answer that gave none (a worker not telling them): one for all. */
export const NO_EPOCH = 0;

/** The epochs of configuration `version` with `pods`, given those of the previous configuration. */
export function nextPodEpochs(prev: PodEpochs | null, pods: Iterable<string>, version: number): Record<string, number> {
  const next: Record<string, number> = Object.create(null) as Record<string, number>; // any pod name is a plain key
  for (const pod of pods) next[pod] = prev !== null && Object.hasOwn(prev, pod) ? prev[pod] : version;
  return next;
}

/** One worker's metrics answer and the epochs of the configuration it had applied (null: not told). */
export interface PodAnswer {
  readonly metrics: readonly SentMetric[];
  readonly epochs: PodEpochs | null;
}

/** Whether the series is a counter or histogram summed across workers (one that must not go down). */
export function isMonotonic(m: SentMetric): boolean {
  return (m.type === 'counter' || m.type === 'histogram') && (m.aggregator ?? 'sum') === 'sum';
}

/**
 * Pod → its epoch in `answer`: the one its configuration gives, or (no epochs told) NO_EPOCH for
 * a pod the answer has a counter of; undefined for a pod the worker does not have. Read once per
 * answer, then a lookup per pod.
 */
export function epochsIn(answer: PodAnswer): (pod: string) => number | undefined {
  const epochs = answer.epochs;
  if (epochs !== null) return (pod) => (Object.hasOwn(epochs, pod) ? epochs[pod] : undefined);
  const counted = new Set<string>();
  countedPods(answer.metrics, counted);
  return (pod) => (counted.has(pod) ? NO_EPOCH : undefined);
}

/**
 * By pod, the oldest epoch at which an answer of `answered` has it (what ShownEpochs.decide
 * takes): one pass over each answer's epochs (or counters, when it told none).
 */
export function heldEpochs(answered: readonly PodAnswer[]): Map<string, number> {
  const held = new Map<string, number>();
  const hold = (pod: string, e: number): void => {
    const h = held.get(pod);
    if (h === undefined || e < h) held.set(pod, e);
  };
  for (const a of answered) {
    if (a.epochs !== null) {
      for (const pod in a.epochs) if (Object.hasOwn(a.epochs, pod)) hold(pod, a.epochs[pod]);
    } else {
      const counted = new Set<string>();
      countedPods(a.metrics, counted);
      for (const pod of counted) hold(pod, NO_EPOCH);
    }
  }
  return held;
}

/** By pod, the epochs at which parts of a scrape's sum other than the answers count it. */
export type PartEpochs = Map<string, number[]>;

/** Notes in `into` the epoch of each backend pod counted by the counters and histograms of `list` (with `epochs`). */
export function notePartEpochs(list: readonly SentMetric[], epochs: PodEpochs | null, into: PartEpochs): void {
  const note = (labels: { backend_pod?: string }): void => {
    const pod = labels.backend_pod;
    if (pod !== undefined) notePartEpoch(into, pod, epochOf(epochs, pod));
  };
  for (const m of list) if (isMonotonic(m)) forEachSeriesLabels(m, note);
}

/** Notes in `into` that a part counts `pod` at `epoch`. */
export function notePartEpoch(into: PartEpochs, pod: string, epoch: number): void {
  const l = into.get(pod);
  if (l === undefined) into.set(pod, [epoch]);
  else if (!l.includes(epoch)) l.push(epoch);
}

/** The epoch a series of `pod` in an answer with `epochs` belongs to. */
export function epochOf(epochs: PodEpochs | null, pod: string): number {
  return epochs !== null && Object.hasOwn(epochs, pod) ? epochs[pod] : NO_EPOCH;
}

/** The backend pods named by the counters and histograms of `list`. */
export function countedPods(list: readonly SentMetric[], into: Set<string>): void {
  const count = (labels: { backend_pod?: string }): void => {
    if (labels.backend_pod !== undefined) into.add(labels.backend_pod);
  };
  for (const m of list) if (isMonotonic(m)) forEachSeriesLabels(m, count);
}

/**
 * Per pod, the epoch summed in a scrape (null: none, the pod's series go). Decided by the primary
 * at each scrape from the answers to it; kept between scrapes so that it never goes back.
 */
export class ShownEpochs {
  /** By pod, the epoch last summed: none older is summed again. */
  private readonly floor = new Map<string, number>();
  /**
   * By pod that went (left the configuration, no answer had it), the newest epoch it had then: none
   * up to it comes back, not even in an answer to a scrape that was gathering across the change
   * (read before it), which would bring back the live workers' part of the sum alone. A re-add
   * has a newer epoch (a later version of the configuration).
   */
  private readonly gone = new Map<string, number>();
  private current = new Map<string, number | null>();

  /**
   * Decides the epochs of this scrape for `pods` (every pod with a counter in any part of the sum).
   * `held`: by pod, its oldest epoch in the answers to this scrape (heldEpochs); `configured`: the
   * pods of the configuration now (null: every pod is kept); `parts`: epochs of the other parts
   * (stand-ins and exited workers) by pod. Each pod costs lookups, not a pass over the parts.
   * A pod that an answering worker has: its oldest epoch among them. One that none has: not
   * configured, it goes; configured (a re-add not applied yet, or no worker answered), the oldest
   * epoch of the other parts not below the last shown (else the last shown). Never below the last
   * shown, nor at an epoch the pod had when it went. `lingering(pod)`: whether an answer that has
   * the pod may still come (a live worker's last answer has it, or a scrape is still gathering);
   * until none may, what is kept of a pod that left is not forgotten.
   */
  decide(pods: Iterable<string>, heldBy: ReadonlyMap<string, number>, configured: ReadonlySet<string> | null, parts: ReadonlyMap<string, readonly number[]>, lingering: (pod: string) => boolean): void {
    this.current = new Map();
    if (configured === null) return;
    for (const pod of pods) {
      let held = heldBy.get(pod);
      const floor = this.floor.get(pod);
      const gone = this.gone.get(pod);
      const least = gone === undefined ? floor : Math.max(floor ?? gone + 1, gone + 1);
      if (held === undefined) {
        if (!configured.has(pod)) {
          let top = Math.max(gone ?? NO_EPOCH, floor ?? NO_EPOCH);
          for (const e of parts.get(pod) ?? []) if (e > top) top = e;
          this.gone.set(pod, top);
          this.current.set(pod, null);
          continue;
        }
        for (const e of parts.get(pod) ?? []) if ((least === undefined || e >= least) && (held === undefined || e < held)) held = e;
        held ??= least;
        if (held === undefined) continue;
      }
      if (least !== undefined && held < least) held = least;
      this.floor.set(pod, held);
      this.current.set(pod, held);
    }
    // A pod that left the configuration with no count of it anywhere, and no answer to come that has it: nothing to keep of it.
    for (const pod of this.floor.keys()) if (!configured.has(pod) && !this.current.has(pod) && !lingering(pod)) this.floor.delete(pod);
    for (const pod of this.gone.keys()) if (!configured.has(pod) && !this.current.has(pod) && !lingering(pod)) this.gone.delete(pod);
  }


  /**
   * Whether a series of `pod` at `epoch` is in this scrape's sum: true when nothing was decided for
   * the pod (no configuration yet, or no part of it at any epoch).
   */
  shows(pod: string, epoch: number): boolean {
    const e = this.current.get(pod);
    return e === undefined || e === epoch;
  }

  /** Whether a kept series of `pod` at `epoch` can never be summed again (an older epoch, or the pod went). */
  over(pod: string, epoch: number): boolean {
    if (!this.current.has(pod)) return false;
    const e = this.current.get(pod);
    return e === null || epoch < (e as number);
  }
}

/**
 * The counters and histograms of `list` (with `epochs`) in this scrape's sum: those of other
 * epochs of a pod left out. Gauges are kept (they describe now). A new list when any is left out.
 */
export function shownPart(list: readonly SentMetric[], epochs: PodEpochs | null, shown: ShownEpochs, monotonicOnly: boolean): SentMetric[] {
  const out: SentMetric[] = [];
  const keep = (labels: { backend_pod?: string }): boolean => labels.backend_pod === undefined || shown.shows(labels.backend_pod, epochOf(epochs, labels.backend_pod));
  for (const m of list) {
    if (!isMonotonic(m)) {
      if (!monotonicOnly) out.push(m);
      continue;
    }
    out.push(keepSeries(m, keep));
  }
  return out;
}
