/**
 * Prefix affinity shared by the workers of one instance over the cluster IPC channel:
 *   worker -> primary  { t: 'sched:prefix-new', pods: [key…], pairs: [hash, pod index, …] }
 *     the (block hash → pod) pairs this worker learned since the last interval (prefix-store.ts);
 *   primary -> worker  { t: 'sched:prefix', same shape }
 *     those pairs, to the other workers at once; all pairs the primary remembers to a worker it
 *     hears from the first time (prefix-hub.ts).
 */
import type { EndpointState } from '../upstream/endpoint-registry.js';
import type { PrefixStore } from './prefix-store.js';

export const MSG_PREFIX_NEW = 'sched:prefix-new';
export const MSG_PREFIX = 'sched:prefix';

export interface PrefixPairs { pods: string[]; pairs: number[] }
export interface PrefixReport extends PrefixPairs { t: typeof MSG_PREFIX_NEW }
export interface PrefixShareMessage extends PrefixPairs { t: typeof MSG_PREFIX }

/** Worker side. */
export class PrefixShare {
  private readonly store: PrefixStore;
  private readonly endpoint: (key: string) => EndpointState | undefined;

  constructor(store: PrefixStore, endpoint: (key: string) => EndpointState | undefined) {
    this.store = store;
    this.endpoint = endpoint;
  }

  /** The pairs learned here since the last report, or null when none. */
  report(): PrefixReport | null {
    const pods: string[] = [];
    const index = new Map<string, number>();
    const pairs: number[] = [];
    this.store.takeNew((h, pod) => {
      if (pod.retired) return;
      let i = index.get(pod.key);
      if (i === undefined) {
        i = pods.push(pod.key) - 1;
        index.set(pod.key, i);
      }
      pairs.push(h, i);
    });
    return pairs.length === 0 ? null : { t: MSG_PREFIX_NEW, pods, pairs };
  }

  apply(m: PrefixShareMessage): void {
    const pods = m.pods.map((k) => this.endpoint(k));
    const p = m.pairs;
    for (let i = 0; i + 1 < p.length; i += 2) {
      const pod = pods[p[i + 1]];
      if (pod !== undefined) this.store.learn(p[i] >>> 0, pod);
    }
    this.store.trim();
  }
}

export function isPrefixPairs(m: unknown, t: string): m is PrefixPairs {
  if (m === null || typeof m !== 'object' || (m as { t?: unknown }).t !== t) return false;
  const x = m as PrefixPairs;
  return Array.isArray(x.pods) && Array.isArray(x.pairs);
}
