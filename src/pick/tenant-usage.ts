/**
 * What each tenant used of one ModelServer recently: weighted tokens over a sliding window, kept in
 * BUCKETS slices of the window (a slice is dropped whole once it is older than the window). The
 * fair queue (fair-gate.ts) lets the tenant that used least go first.
 */
import type { Clock } from '../clock.js';

const BUCKETS = 12;
/** Past this many tenants, those with nothing left in the window are dropped when one is added. */
const PRUNE_AT = 10_000;

/** One tenant's slices: the tokens of slice i began at starts[i] (0: unused). */
interface Slices {
  readonly starts: number[];
  readonly tokens: number[];
}

export class TenantUsage {
  private readonly sliceMs: number;
  private readonly windowMs: number;
  private readonly byTenant = new Map<string, Slices>();

  constructor(windowMs: number, private readonly clock: Clock) {
    this.windowMs = windowMs;
    this.sliceMs = Math.max(1, Math.ceil(windowMs / BUCKETS));
  }

  /** Adds `tokens` (already weighted) to the tenant's use now. */
  add(tenant: string, tokens: number): void {
    if (!(tokens > 0)) return;
    let s = this.byTenant.get(tenant);
    if (s === undefined) {
      if (this.byTenant.size >= PRUNE_AT) this.prune();
      s = { starts: new Array<number>(BUCKETS).fill(0), tokens: new Array<number>(BUCKETS).fill(0) };
      this.byTenant.set(tenant, s);
    }
    const now = this.clock();
    const start = now - (now % this.sliceMs);
    const i = Math.floor(start / this.sliceMs) % BUCKETS;
    if (s.starts[i] !== start) {
      s.starts[i] = start;
      s.tokens[i] = 0;
    }
    s.tokens[i] += tokens;
  }

  /** The tenant's weighted tokens within the window (the slice now begun included). */
  used(tenant: string): number {
    const s = this.byTenant.get(tenant);
    return s === undefined ? 0 : this.sum(s, this.clock());
  }

  /** How many tenants are kept (for tests of the bound). */
  get size(): number {
    return this.byTenant.size;
  }

  private sum(s: Slices, now: number): number {
    const oldest = now - (now % this.sliceMs) - this.windowMs;
    let total = 0;
    for (let i = 0; i < BUCKETS; i++) if (s.starts[i] > oldest) total += s.tokens[i];
    return total;
  }

  private prune(): void {
    const now = this.clock();
    for (const [tenant, s] of this.byTenant) if (this.sum(s, now) === 0) this.byTenant.delete(tenant);
  }
}
