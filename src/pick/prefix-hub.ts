/**
 * Primary side of shared prefix affinity (prefix-share.ts): the (block hash → pod key) pairs of
 * every worker in one bounded map (least recently reported forgotten first); each report goes
 * on to the other workers as it came, and a worker heard from the first time gets the whole map.
 */
import { MSG_PREFIX, type PrefixPairs, type PrefixShareMessage } from './prefix-share.js';

export class PrefixHub {
  private readonly capacity: number;
  private readonly byHash = new Map<number, string>();
  private readonly known = new Set<number>();

  constructor(capacity: number) {
    this.capacity = capacity;
  }

  get size(): number {
    return this.byHash.size;
  }

  /** Takes a worker's report; returns what the other workers get. */
  report(m: PrefixPairs): PrefixShareMessage {
    const m2 = this.byHash;
    const pods = m.pods;
    const p = m.pairs;
    for (let i = 0; i + 1 < p.length; i += 2) {
      const key = pods[p[i + 1]];
      if (typeof key !== 'string') continue;
      const h = p[i] >>> 0;
      m2.delete(h);
      m2.set(h, key);
    }
    if (m2.size > this.capacity) {
      let drop = m2.size - this.capacity;
      for (const k of m2.keys()) {
        m2.delete(k);
        if (--drop === 0) break;
      }
    }
    return { t: MSG_PREFIX, pods, pairs: p };
  }

  /** The whole map for `worker` the first time it is asked for it, else null. */
  firstTime(worker: number): PrefixShareMessage | null {
    if (this.known.has(worker)) return null;
    this.known.add(worker);
    if (this.byHash.size === 0) return null;
    const pods: string[] = [];
    const index = new Map<string, number>();
    const pairs: number[] = [];
    for (const [h, key] of this.byHash) {
      let i = index.get(key);
      if (i === undefined) {
        i = pods.push(key) - 1;
        index.set(key, i);
      }
      pairs.push(h, i);
    }
    return { t: MSG_PREFIX, pods, pairs };
  }

  /** A worker left: a new one with the same id would be a new process. */
  gone(worker: number): void {
    this.known.delete(worker);
  }
}
