import type { EndpointState } from '../upstream/endpoint-registry.js';

/**
 * Which pod last served each prompt block hash (prefix-hashes.ts), bounded to `capacity`
 * entries: the least recently used are forgotten first (Map keeps insertion order; a touched
 * entry is moved to the end).
 */
export class PrefixStore {
  private readonly capacity: number;
  private readonly byHash = new Map<number, EndpointState>();
  /** Pairs learned here since the last takeNew(), for the other workers (prefix-share.ts); null = not shared. */
  private readonly newHashes: number[] | null;
  private readonly newPods: EndpointState[] = [];
  private readonly maxNew: number;

  /** `shareUpTo`: new (hash, pod) pairs kept for takeNew() (0 = none; beyond it, dropped until taken). */
  constructor(capacity: number, shareUpTo = 0) {
    this.capacity = capacity;
    this.newHashes = shareUpTo > 0 ? [] : null;
    this.maxNew = shareUpTo;
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
    const out = this.newHashes;
    for (let i = 0; i < n; i++) {
      const h = hashes[i];
      const prev = m.get(h);
      if (prev !== undefined) m.delete(h);
      m.set(h, pod);
      if (prev !== pod && out !== null && out.length < this.maxNew) {
        out.push(h);
        this.newPods.push(pod);
      }
    }
    this.trim();
  }

  /** Learns that `pod` holds block hash `h` (from another worker): not shared again. */
  learn(h: number, pod: EndpointState): void {
    const m = this.byHash;
    if (m.get(h) === pod) return;
    m.delete(h);
    m.set(h, pod);
  }

  /** Calls `each` with the pairs recorded here since the last call, then forgets them. */
  takeNew(each: (h: number, pod: EndpointState) => void): void {
    const out = this.newHashes;
    if (out === null) return;
    for (let i = 0; i < out.length; i++) each(out[i], this.newPods[i]);
    out.length = 0;
    this.newPods.length = 0;
  }

  /** Drops the least recently used entries above capacity. */
  trim(): void {
    const m = this.byHash;
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
