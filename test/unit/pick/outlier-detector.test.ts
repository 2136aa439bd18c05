import { describe, expect, it } from 'vitest';
import { OutlierDetector } from '../../../src/pick/outlier-detector.js';
import { PodHealth } from '../../../src/upstream/pod-health.js';
import type { EndpointState } from '../../../src/upstream/endpoint-registry.js';

const pod = (name: string) => ({ name, health: new PodHealth() }) as unknown as EndpointState;

function detector(failures = 3) {
  let now = 1_000;
  const events: string[] = [];
  const d = new OutlierDetector({ consecutiveFailures: failures, baseEjectionMs: 1_000, maxEjectionMs: 5_000 }, () => now, {
    ejected: (p, ms, n, k) => events.push(`ejected ${p} ${ms} ${n} ${k}`),
    returned: (p) => events.push(`returned ${p}`),
  });
  return { d, events, at: (t: number) => { now = t; }, now: () => now };
}

describe('OutlierDetector', () => {
  it('ejects after N failures in a row, not before; an answer in between resets the count', () => {
    const { d, events, now } = detector(3);
    const a = pod('a');
    d.failure(a);
    d.failure(a);
    d.success(a);
    d.failure(a);
    d.failure(a);
    expect(OutlierDetector.ejected(a, now())).toBe(false);
    d.failure(a);
    expect(OutlierDetector.ejected(a, now())).toBe(true);
    expect(a.health.ejectedUntil).toBe(now() + 1_000);
    expect(events).toEqual(['ejected a 1000 3 1']);
  });

  it('the interval doubles on each ejection in a row (one failure on probation is enough), capped', () => {
    const { d, events, at } = detector(2);
    const a = pod('a');
    d.failure(a);
    d.failure(a); // ejected at 1000 for 1 s
    at(1_500);
    d.failure(a); // tried while ejected (all pods were): nothing changes
    expect(a.health.ejectedUntil).toBe(2_000);
    at(2_000);
    expect(OutlierDetector.ejected(a, 2_000)).toBe(false); // back, on probation
    d.failure(a); // 2 s
    at(4_000);
    d.failure(a); // 4 s
    at(8_000);
    d.failure(a); // 8 s capped to 5 s
    expect(a.health.ejectedUntil).toBe(13_000);
    expect(events).toEqual(['ejected a 1000 2 1', 'ejected a 2000 1 2', 'ejected a 4000 1 3', 'ejected a 5000 1 4']);
  });

  it('an answer puts an ejected pod back for good: logged once, next ejection starts from the base interval', () => {
    const { d, events, at } = detector(1);
    const a = pod('a');
    d.failure(a);
    at(2_500);
    d.failure(a);
    at(5_000);
    d.success(a);
    d.success(a);
    expect(a.health).toMatchObject({ ejectedUntil: 0, ejections: 0, consecutiveFailures: 0 });
    d.failure(a);
    expect(events).toEqual(['ejected a 1000 1 1', 'ejected a 2000 1 2', 'returned a', 'ejected a 1000 1 1']);
  });
});
