import type { Endpoint } from '../config/resource-types.js';
import { PodHealth } from './pod-health.js';
import { PodLoad } from './pod-load.js';
import { Http1Pool } from './http1/pool.js';
import { LEFT_CONFIG } from './upstream-errors.js';
import { DEFAULT_UPSTREAM_CONNECT_TIMEOUT_MS, DEFAULT_UPSTREAM_IDLE_RACE_MS, DEFAULT_UPSTREAM_IDLE_TIMEOUT_MS } from '../config/settings.js';

/** Identity of an endpoint across snapshots and processes (pod name and address). */
export function endpointKey(e: Endpoint): string {
  return `${e.name}\u0000${e.host}:${e.port}`;
}

/** Granularity of the pools' coarse clock (connect, headers, body and keep-alive timeouts; interval-ticker.ts). */
const TIMER_RESOLUTION_MS = 100;
/**
 * Requests beyond the connection cap wait in the pool's queue (as many as the router admits):
 * more are refused with HTTP1_QUEUE_FULL, the router's own limit, not the pod's failure.
 */
export const POD_QUEUE = 1 << 20;
/** Text events a stream needs before the tokens per event it reports are learned (EndpointState.learnStream). */
export const LEARN_EVENTS = 256;

/** How a worker's pools connect to each pod: the settings, handed by the registry to each pod's pool. */
export interface PodConnections {
  /** Most connections to one pod (ROUTER_UPSTREAM_CONNECTIONS). */
  readonly connections: number;
  /** How long an unused connection to the pod stays open (ROUTER_UPSTREAM_IDLE_TIMEOUT). */
  readonly idleTimeoutMs?: number;
  /** How long a new connection may take to open (ROUTER_UPSTREAM_CONNECT_TIMEOUT). */
  readonly connectTimeoutMs?: number;
  /** How soon after the send a break is the idle-close race (ROUTER_UPSTREAM_IDLE_RACE). */
  readonly idleRaceMs?: number;
  /** Most requests waiting for a connection (POD_QUEUE; smaller only in tests). */
  readonly maxQueue?: number;
}

/** One backend pod: its keep-alive pool and the in-flight count the picker reads. */
export class EndpointState {
  readonly name: string;
  readonly origin: string;
  /** The pod's host without brackets or port (an IP, or a name from a file). */
  readonly host: string;
  readonly pool: Http1Pool;
  inflight = 0;
  /** Marked by the registry when the endpoint left the config; its pool closes once idle. */
  retired = false;
  /** Passive health (outlier detection); survives reloads with the state. */
  readonly health = new PodHealth();
  /** Scraped and shared load (pod metrics, other workers' in-flight). */
  readonly load = new PodLoad();
  /** endpointKey() of the pod. */
  readonly key: string;
  /**
   * Non-null when the pod's last stream that ended in full ended with an output count: the next
   * streams' events past the usage reader's bound are counted instead of read, each estimated at
   * this many tokens should no count come (InferenceApi.streamUsage). Learned per worker from the
   * pod's own answers (learnStream); a new pod starts at null.
   */
  streamTokensPerEvent: number | null = null;

  constructor(name: string, host: string, port: number, pod: PodConnections) {
    this.name = name;
    this.key = endpointKey({ name, host, port });
    const bare = host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
    this.host = bare;
    const h = bare.includes(':') ? `[${bare}]` : bare;
    this.origin = `http://${h}:${port}`;
    this.pool = new Http1Pool(bare, port, {
      connections: pod.connections,
      maxQueue: pod.maxQueue ?? POD_QUEUE,
      connectTimeoutMs: pod.connectTimeoutMs ?? DEFAULT_UPSTREAM_CONNECT_TIMEOUT_MS,
      // Set per request from the route's timeout.
      headersTimeoutMs: 0,
      bodyTimeoutMs: 0,
      keepAliveTimeoutMs: pod.idleTimeoutMs ?? DEFAULT_UPSTREAM_IDLE_TIMEOUT_MS,
      idleRaceMs: pod.idleRaceMs ?? DEFAULT_UPSTREAM_IDLE_RACE_MS,
      timerResolutionMs: TIMER_RESOLUTION_MS,
    });
  }

  /**
   * A stream from this pod ended in full (status < 300) with `completionTokens` reported (or null)
   * over `textEvents` events that could carry text. Without a count: null, every event is read.
   * With one: the tokens per event of that stream when it had LEARN_EVENTS or more (where a role
   * and a finish event move it by under 1%), else what was learned before, or 1.
   */
  learnStream(completionTokens: number | null, textEvents: number): void {
    if (completionTokens === null) this.streamTokensPerEvent = null;
    else if (textEvents >= LEARN_EVENTS) this.streamTokensPerEvent = completionTokens / textEvents;
    else if (this.streamTokensPerEvent === null) this.streamTokensPerEvent = 1;
  }

  /** One more request on this pod. */
  begin(): void {
    this.inflight++;
  }

  /** Connections open (or opening) to the pod from this process. */
  get connections(): number {
    return this.pool.stats.connections;
  }

  /** Requests waiting for a connection to the pod: beyond the cap, or while one opens. */
  get queued(): number {
    return this.pool.stats.queued;
  }

  /** A request on this pod is over; the last one on a retired pod closes its pool. */
  end(): void {
    if (--this.inflight === 0 && this.retired) this.pool.close(LEFT_CONFIG);
  }

  /** Left the config: closes the pool now if idle, else once the last request ends. */
  retire(): void {
    this.retired = true;
    if (this.inflight === 0) this.pool.close(LEFT_CONFIG);
  }
}

/**
 * Endpoint states outlive snapshots: the same pod keeps its pool and in-flight count across
 * config changes, so a reload drops no connection and the picker's view stays true.
 */
export class EndpointRegistry {
  private readonly byKey = new Map<string, EndpointState>();
  private readonly used = new Set<string>();
  /**
   * Retired pods that still had requests when they left (their pools close when those end): kept
   * so that closeAll() at shutdown closes their pools too, ending those requests as the live pods'.
   * Pruned at each reload of those whose pools have closed since.
   */
  private readonly retiring = new Set<EndpointState>();
  /** How each pod's pool connects (the settings). */
  private readonly pod: PodConnections;

  constructor(pod: PodConnections) {
    this.pod = pod;
  }

  acquire(e: Endpoint): EndpointState {
    const key = endpointKey(e);
    this.used.add(key);
    let s = this.byKey.get(key);
    if (s === undefined) {
      s = new EndpointState(e.name, e.host, e.port, this.pod);
      this.byKey.set(key, s);
    }
    return s;
  }

  /**
   * Retires pods no longer named by the latest snapshot: their pools close gracefully (in-flight
   * requests finish; a request that picks a retired pod later is sent to another one).
   */
  releaseUnused(): void {
    for (const s of this.retiring) if (s.inflight === 0) this.retiring.delete(s);
    for (const [key, s] of this.byKey) {
      if (this.used.has(key)) continue;
      this.byKey.delete(key);
      s.retire();
      if (s.inflight > 0) this.retiring.add(s);
    }
    this.used.clear();
  }

  /** The live endpoint of endpointKey() `key`, if any. */
  get(key: string): EndpointState | undefined {
    return this.byKey.get(key);
  }

  /** Live endpoints (for the in-flight-per-pod gauge). */
  states(): IterableIterator<EndpointState> {
    return this.byKey.values();
  }

  /**
   * At shutdown (after the drain): closes every pool, those of retired pods still busy included,
   * failing what is still in flight (`why` says why).
   */
  async closeAll(why?: string): Promise<void> {
    const all = [...this.byKey.values(), ...this.retiring];
    this.byKey.clear();
    this.retiring.clear();
    for (const s of all) s.pool.close(why);
  }
}
