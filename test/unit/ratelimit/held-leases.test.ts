/**
 * A worker's leases of the local limit (held-leases.ts) at the edge of a window: a request with a
 * route's and a tenant's limit is decided from both leases or from neither, whatever the clock
 * reads between one limit and the next.
 */
import { describe, expect, it } from 'vitest';
import type { RateLimitSpec } from '../../../src/config/resource-types.js';
import { DECISION_STRIDE, NO_LIMIT, STATUS_ALLOWED } from '../../../src/ratelimit/decision-codec.js';
import { HeldLeases } from '../../../src/ratelimit/local/held-leases.js';

const WINDOW_END = 1_000;
const ROUTE: RateLimitSpec = { inputTokensPerUnit: 1_000, outputTokensPerUnit: null, unit: 'second', global: null, mode: 'enforce' };
const TENANT: RateLimitSpec = { ...ROUTE, inputTokensPerUnit: 500 };

/** A reply granting a lease of `granted` input tokens of the window ending at WINDOW_END: the decision, then [lease id, input, output, window end]. */
function grant(id: number, limit: RateLimitSpec, granted: number): number[] {
  const r = [STATUS_ALLOWED, 1, limit.inputTokensPerUnit!, limit.inputTokensPerUnit!, 1, NO_LIMIT, 0, 0];
  expect(r).toHaveLength(DECISION_STRIDE);
  return [...r, id, granted, NO_LIMIT, WINDOW_END];
}

/** Leases of the route and the tenant, held under `clock`. */
function leasesOf(clock: () => number): HeldLeases {
  const h = new HeldLeases(() => {}, clock, () => {});
  expect(h.take('route/default/r', ROUTE.inputTokensPerUnit, null, 'second', grant(1, ROUTE, 200), 0, DECISION_STRIDE)).toBe(true);
  expect(h.take('tenant/key/t', TENANT.inputTokensPerUnit, null, 'second', grant(2, TENANT, 100), 0, DECISION_STRIDE)).toBe(true);
  return h;
}

const terms = [{ key: 'route/default/r', limit: ROUTE }, { key: 'tenant/key/t', limit: TENANT }];

describe('leases held by a worker, at the end of a window', () => {
  it('a multi-limit admission whose window ends while it is decided gets a decision for every limit (one clock reading), not a missing one', () => {
    let readings = 0;
    // The first reading is the window's last millisecond; every later one is past its end.
    const h = leasesOf(() => (readings++ === 0 ? WINDOW_END - 1 : WINDOW_END));
    const ds = h.admitAll(terms, 10);
    expect(ds).not.toBeNull();
    expect(ds!.map((d) => d?.allowed)).toEqual([true, true]);
    expect(ds!.map((d) => d.input?.limit)).toEqual([1_000, 500]);
  });

  it('past the window\'s end neither lease admits: the request goes to the primary', () => {
    const h = leasesOf(() => WINDOW_END);
    expect(h.admitAll(terms, 10)).toBeNull();
    expect(h.admitAll(terms.slice(1), 10)).toBeNull();
    expect(h.size).toBe(0); // both dropped: that window's counters are gone
  });

  it('a request one lease does not cover is admitted from neither', () => {
    const h = leasesOf(() => 0);
    expect(h.admitAll(terms, 150)).toBeNull(); // the route's lease holds 200, the tenant's 100
    expect(h.admitAll(terms.slice(0, 1), 200)?.map((d) => d.allowed)).toEqual([true]); // the route's lease kept all its tokens
  });
});
