import type { EndpointState } from '../upstream/endpoint-registry.js';
import type { PrefixStore } from './prefix-store.js';
import type { SchedulerConfig, ScorerName } from './scheduler-config.js';

/** Why a pick went the way it did: the scorer with the largest weighted margin, or these. */
export type Decider = ScorerName | 'single' | 'tie';

/** Score of an unknown KV-cache use (no metrics yet, stale): neither favoured nor avoided. */
const UNKNOWN = 0.5;
/**
 * Latency added before comparing, ms: differences of a few ms (noise) barely count, a pod
 * several times slower than the fastest does. An unknown latency scores 1, so a new pod is tried.
 */
const LATENCY_FLOOR_MS = 50;
/** least-request: a pod LOAD_STEP requests above the least loaded one scores 1/2, 2 × LOAD_STEP above 1/3, ... */
const LOAD_STEP = 1;

/**
 * Scores the candidate pods of one pick and returns the best (ties at random). Each scorer gives
 * 0..1 (higher is better); the pod's score is their weighted mean:
 *   least-request   1 / (1 + load − least load); load = in flight from every worker of the instance + the pod queue
 *   least-latency   (min latency + 50 ms) / (latency + 50 ms); the pods' TTFT (+ TPOT) from their
 *                   metrics when all candidates report it, else what this worker saw (unknown: 1)
 *   prefix-cache    share of the prompt's blocks this pod served last
 *   kv-cache        1 − KV-cache use
 * Before scoring, pods whose waiting queue is above maxWaiting are left out while another is at or
 * below it. Scratch arrays are kept between picks: no allocation per request.
 */
export class PodScorer {
  private readonly w: Float64Array;
  private readonly wSum: number;
  private readonly maxWaiting: number;
  private cand: EndpointState[] = [];
  private load = new Float64Array(16);
  private lat = new Float64Array(16);
  private kv = new Float64Array(16);
  private pre = new Float64Array(16);
  private obs = new Float64Array(16);
  /** Decider of the last pick and the winner's score. */
  decider: Decider = 'single';
  score = 0;

  constructor(config: SchedulerConfig) {
    const c = config.weights;
    this.w = Float64Array.of(c['least-request'], c['least-latency'], c['prefix-cache'], c['kv-cache']);
    this.wSum = this.w[0] + this.w[1] + this.w[2] + this.w[3];
    this.maxWaiting = config.maxWaiting;
  }

  /**
   * The best pod of `endpoints` not in `exclude` nor retired. Ejected pods (health.ejectedUntil > now)
   * only when no other is left: then the one whose ejection ends first. `hashes[0..n)`: the prompt's
   * block hashes for prefix-cache (n = 0: none).
   */
  pick(
    endpoints: readonly EndpointState[], exclude: readonly EndpointState[] | null, now: number,
    prefix: PrefixStore | null, hashes: Uint32Array, n: number, random: () => number,
  ): EndpointState | null {
    let count = this.gather(endpoints, exclude, now, false);
    const cand = this.cand;
    if (count === 0) {
      // Every pod left is ejected: the one back soonest is tried, without scoring.
      count = this.gather(endpoints, exclude, now, true);
      if (count === 0) return null;
      this.decider = 'single';
      this.score = 1;
      return soonestBack(cand, count);
    }
    if (count === 1) {
      this.decider = 'single';
      this.score = 1;
      return cand[0];
    }
    // Prefix matches: walk the prompt's blocks until the first one no pod served.
    if (prefix !== null && n > 0 && this.w[2] > 0) {
      for (let j = 0; j < n; j++) {
        const p = prefix.get(hashes[j]);
        if (p === undefined) break;
        p.load.prefixMatch = j + 1;
      }
    }
    let minLoad = Infinity;
    let minLat = Infinity;
    let minObs = Infinity;
    let scraped = 0;
    for (let i = 0; i < count; i++) {
      const l = cand[i].load;
      const fresh = l.scrapedUntil > now;
      const waiting = fresh && l.waiting === l.waiting ? l.waiting : 0;
      const load = cand[i].inflight + (l.sharedUntil > now ? l.otherInflight : 0) + waiting;
      this.load[i] = load;
      if (load < minLoad) minLoad = load;
      if (fresh && l.ttftMs === l.ttftMs) {
        const lat = l.ttftMs + (l.tpotMs === l.tpotMs ? l.tpotMs : 0);
        this.lat[i] = lat;
        if (lat < minLat) minLat = lat;
        scraped++;
      } else {
        this.lat[i] = NaN;
      }
      this.obs[i] = l.observedMs;
      if (l.observedMs < minObs) minObs = l.observedMs;
      this.kv[i] = fresh && l.kvUsage === l.kvUsage ? 1 - Math.min(1, Math.max(0, l.kvUsage)) : UNKNOWN;
      this.pre[i] = n > 0 ? l.prefixMatch / n : 0;
    }
    if (prefix !== null && n > 0 && this.w[2] > 0) {
      // Clear the scratch on every pod marked above (some may not be candidates).
      for (let j = 0; j < n; j++) {
        const p = prefix.get(hashes[j]);
        if (p === undefined) break;
        p.load.prefixMatch = 0;
      }
    }
    // Latencies of one kind only: the pods' own TTFT when every candidate reports it, else what
    // this worker saw (the two are not comparable).
    if (scraped < count) {
      const t = this.lat;
      this.lat = this.obs;
      this.obs = t;
      minLat = minObs;
    }
    const w = this.w;
    let best = -1;
    let second = -1;
    let bestScore = -1;
    let secondScore = -1;
    let ties = 0;
    for (let i = 0; i < count; i++) {
      this.load[i] = 1 / (1 + (this.load[i] - minLoad) / LOAD_STEP);
      const lat = this.lat[i];
      this.lat[i] = lat !== lat ? 1 : (minLat + LATENCY_FLOOR_MS) / (lat + LATENCY_FLOOR_MS);
      const s = (w[0] * this.load[i] + w[1] * this.lat[i] + w[2] * this.pre[i] + w[3] * this.kv[i]) / this.wSum;
      if (s > bestScore + 1e-12) {
        second = best;
        secondScore = bestScore;
        best = i;
        bestScore = s;
        ties = 1;
      } else if (s >= bestScore - 1e-12) {
        // Reservoir sampling among ties, without allocating.
        ties++;
        if (random() * ties < 1) {
          second = best;
          best = i;
        } else {
          second = i;
        }
        secondScore = s;
      } else if (s > secondScore) {
        second = i;
        secondScore = s;
      }
    }
    this.score = bestScore;
    this.decider = ties > 1 ? 'tie' : this.margin(best, second);
    return cand[best];
  }

  /** Candidates into this.cand (ejected ones too when `ejectedToo`); returns how many. */
  private gather(endpoints: readonly EndpointState[], exclude: readonly EndpointState[] | null, now: number, ejectedToo: boolean): number {
    if (this.cand.length < endpoints.length) this.grow(endpoints.length);
    let count = 0;
    let below = 0;
    for (let i = 0; i < endpoints.length; i++) {
      const e = endpoints[i];
      // Left the configuration (a request routed before the reload): its pool is closing.
      if (e.retired) continue;
      if (exclude !== null && exclude.includes(e)) continue;
      if (!ejectedToo && e.health.ejectedUntil > now) continue;
      this.cand[count++] = e;
      if (!this.queued(e, now)) below++;
    }
    // Queue filter: drop pods above the threshold while another is at or below it.
    if (below > 0 && below < count) {
      let k = 0;
      for (let i = 0; i < count; i++) if (!this.queued(this.cand[i], now)) this.cand[k++] = this.cand[i];
      count = k;
    }
    return count;
  }

  private queued(e: EndpointState, now: number): boolean {
    const l = e.load;
    return l.scrapedUntil > now && l.waiting > this.maxWaiting;
  }

  private grow(n: number): void {
    const size = Math.max(n, this.load.length * 2);
    this.cand = new Array<EndpointState>(size);
    this.load = new Float64Array(size);
    this.lat = new Float64Array(size);
    this.kv = new Float64Array(size);
    this.pre = new Float64Array(size);
    this.obs = new Float64Array(size);
  }

  /** The scorer whose weighted difference between the winner and the runner-up is largest. */
  private margin(best: number, second: number): Decider {
    if (second < 0) return 'single';
    const w = this.w;
    const d0 = w[0] * (this.load[best] - this.load[second]);
    const d1 = w[1] * (this.lat[best] - this.lat[second]);
    const d2 = w[2] * (this.pre[best] - this.pre[second]);
    const d3 = w[3] * (this.kv[best] - this.kv[second]);
    let m = d0;
    let name: Decider = 'least-request';
    if (d1 > m) { m = d1; name = 'least-latency'; }
    if (d2 > m) { m = d2; name = 'prefix-cache'; }
    if (d3 > m) { m = d3; name = 'kv-cache'; }
    return m > 0 ? name : 'tie';
  }
}

/** Of the first `count` candidates, the one whose ejection ends first. */
function soonestBack(cand: readonly EndpointState[], count: number): EndpointState {
  let best = cand[0];
  for (let i = 1; i < count; i++) if (cand[i].health.ejectedUntil < best.health.ejectedUntil) best = cand[i];
  return best;
}
