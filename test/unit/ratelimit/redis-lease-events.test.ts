/**
 * The lease events of inference_router_ratelimit_leases_total: every lease Redis lends is counted
 * `lent`, also one lent while another is held (handed straight back, and counted `given_back`), so
 * that no more leases are ever given back or forfeited than were lent.
 */
import { describe, expect, it } from 'vitest';
import type { RateLimitSpec } from '../../../src/config/resource-types.js';
import { RedisLeases, type LeaseEvent } from '../../../src/ratelimit/redis/leases.js';

const LIMIT: RateLimitSpec = { inputTokensPerUnit: 1000, outputTokensPerUnit: null, unit: 'minute', global: { redis: { address: '127.0.0.1:1' } }, mode: 'enforce' };
const counts = (lent: number) => ({ inUsed: 100, outUsed: 0, lent, window: 60_000, recall: false, leasesOut: lent, msLeft: 30_000 });

describe('RedisLeases events', () => {
  it('a lease lent while one is held is counted lent, and returned to be given back', () => {
    const events: LeaseEvent[] = [];
    const leases = new RedisLeases(() => 0, (e) => events.push(e));
    expect(leases.fromCounts('route/a', LIMIT, 'minute', counts(50))).toBeNull(); // held
    const back = leases.fromCounts('route/a', LIMIT, 'minute', counts(30)); // another: straight back
    expect(back).toMatchObject({ key: 'route/a', tokens: 30, lent: 30 });
    expect(events).toEqual(['lent', 'lent']);
    expect(leases.fromCounts('route/a', LIMIT, 'minute', counts(0))).toBeNull(); // nothing lent
    expect(events).toEqual(['lent', 'lent']);
    expect(leases.takeAll()).toHaveLength(1);
  });
});
