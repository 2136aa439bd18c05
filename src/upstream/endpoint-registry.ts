import { Pool } from 'undici';
import type { Endpoint } from '../config/resource-types.js';
import { PodHealth } from './pod-health.js';
import { PodLoad } from './pod-load.js';

/** Identity of an endpoint across snapshots and processes (pod name and address). */
export function endpointKey(e: Endpoint): string {
  return `${e.name}\u0000${e.host}:${e.port}`;
}

/** One backend pod: its keep-alive pool and the in-flight count the picker reads. */
export class EndpointState {
  readonly name: string;
  readonly origin: string;
  readonly pool: Pool;
  inflight = 0;
  /** Marked by the registry when the endpoint left the config; closed once idle. */
  retired = false;
  /** Passive health (outlier detection); survives reloads with the state. */
  readonly health = new PodHealth();
  /** Scraped and shared load (pod metrics, other workers' in-flight). */
  readonly load = new PodLoad();
  /** endpointKey() of the pod. */
  readonly key: string;

  constructor(name: string, host: string, port: number, connections: number) {
    this.name = name;
    this.key = endpointKey({ name, host, port });
    const h = host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
    this.origin = `http://${h}:${port}`;
    this.pool = new Pool(this.origin, {
      connections,
      pipelining: 1,
      keepAliveTimeout: 30_000,
      keepAliveMaxTimeout: 600_000,
      // Our own timers bound the exchange; undici's are set per request.
      headersTimeout: 0,
      bodyTimeout: 0,
      connectTimeout: 5_000,
    });
  }
}

/**
 * Endpoint states outlive snapshots: the same pod keeps its pool and in-flight count across
 * config changes, so a reload drops no connection and the picker's view stays true.
 */
export class EndpointRegistry {
  private readonly byKey = new Map<string, EndpointState>();
  private readonly used = new Set<string>();
  private readonly connections: number;

  constructor(connections = 128) {
    this.connections = connections;
  }

  acquire(e: Endpoint): EndpointState {
    const key = endpointKey(e);
    this.used.add(key);
    let s = this.byKey.get(key);
    if (s === undefined) {
      s = new EndpointState(e.name, e.host, e.port, this.connections);
      this.byKey.set(key, s);
    }
    s.retired = false;
    return s;
  }

  /** Closes pools no longer named by the latest snapshot (gracefully: in-flight requests finish). */
  releaseUnused(): void {
    for (const [key, s] of this.byKey) {
      if (this.used.has(key)) continue;
      s.retired = true;
      this.byKey.delete(key);
      void s.pool.close().catch(() => undefined);
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

  async closeAll(): Promise<void> {
    const all = [...this.byKey.values()];
    this.byKey.clear();
    await Promise.allSettled(all.map((s) => s.pool.close()));
  }
}
