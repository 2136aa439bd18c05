import type { EndpointState } from '../upstream/endpoint-registry.js';

/**
 * Which pod last served each prompt block hash (prefix-hashes.ts), bounded to `capacity`
 * entries: the least recently used are forgotten first (Map keeps insertion order; a touched
 * entry is moved to the end).
 */
export class PrefixStore {
  private readonly capacity: number;
  private readonly byHash = new Map<number, EndpointState>();

  constructor(capacity: number) {
    this.capacity = capacity;
  }

  get size(): number {
    return this.byHash.size;
  }

  /** Pod of block hash `h`, or undefined. */
  get(h: number): EndpointState | undefined {
    return this.byHash.get(h);
  }

  /** Records that `pod` now holds the first `n` blocks of `hashes`. */
  record(hashes: Uint32Array, n: number, pod: EndpointState): void {
    const m = this.byHash;
    for (let i = 0; i < n; i++) {
      const h = hashes[i];
      if (m.has(h)) m.delete(h);
      m.set(h, pod);
    }
    if (m.size > this.capacity) {
      let drop = m.size - this.capacity;
      for (const k of m.keys()) {
        m.delete(k);
        if (--drop === 0) break;
      }
    }
  }

  /** Forgets a pod that left the configuration. */
  forget(pod: EndpointState): void {
    for (const [h, p] of this.byHash) if (p === pod) this.byHash.delete(h);
  }
}
