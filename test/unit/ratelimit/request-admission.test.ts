import { describe, expect, it } from 'vitest';
import type { RateLimitSpec } from '../../../src/config/resource-types.js';
import { CounterStore } from '../../../src/ratelimit/local/counter-store.js';
import { admitRequest, type RequestAdmission, type ScopedTerm } from '../../../src/ratelimit/request-admission.js';
import { secondsUntilReset } from '../../../src/ratelimit/windows.js';

const T0 = Date.UTC(2025, 0, 15, 10, 30, 20);
const limit = (input: number, unit: RateLimitSpec['unit']): RateLimitSpec => ({ inputTokensPerUnit: input, outputTokensPerUnit: null, unit, global: null, mode: 'enforce' });

describe('admitRequest against a route limit and a tenant budget', () => {
  const store = new CounterStore(() => T0);
  const terms = (route: RateLimitSpec, tenant: RateLimitSpec, id: string): ScopedTerm[] => [
    { key: `default/${id}`, limit: route, limiter: store, scope: 'route' },
    { key: `tenant:key:${id}`, limit: tenant, limiter: store, scope: 'tenant' },
  ];
  const admit = (ts: ScopedTerm[]): RequestAdmission => admitRequest(ts, 4) as RequestAdmission;

  it('both refuse: the answer shows the limit that resets last, so retry-after is when the request can pass', () => {
    for (const [route, tenant, id] of [[limit(4, 'minute'), limit(4, 'day'), 'a'], [limit(4, 'day'), limit(4, 'minute'), 'b']] as const) {
      const ts = terms(route, tenant, id);
      expect(admit(ts).admitted).toBe(true);
      const a = admit(ts);
      expect(a.admitted).toBe(false);
      const last = route.unit === 'day' ? 'route' : 'tenant';
      expect(a.shownScope, id).toBe(last);
      expect(a.shown!.retryAfterSeconds).toBe(secondsUntilReset('day', T0));
    }
  });

  it('one refuses: that one is shown, even when the other resets later', () => {
    const ts = terms(limit(4, 'minute'), limit(100, 'day'), 'c');
    expect(admit(ts).admitted).toBe(true);
    const a = admit(ts);
    expect(a.admitted).toBe(false);
    expect(a.shownScope).toBe('route');
    expect(a.shown!.retryAfterSeconds).toBe(secondsUntilReset('minute', T0));
  });
});
