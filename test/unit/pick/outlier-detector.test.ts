import { describe, expect, it } from 'vitest';
import { OutlierDetector, countsAs5xx } from '../../../src/pick/outlier-detector.js';
import { PodHealth } from '../../../src/upstream/pod-health.js';
import type { EndpointState } from '../../../src/upstream/endpoint-registry.js';

const pod = (name: string) => ({ name, health: new PodHealth() }) as unknown as EndpointState;

function detector(failures = 3, errors = 5) {
  let now = 1_000;
  const events: string[] = [];
  const d = new OutlierDetector({ consecutiveFailures: failures, consecutive5xx: errors, baseEjectionMs: 1_000, maxEjectionMs: 5_000 }, () => now, {
    ejected: (p, ms, n, k, cause) => events.push(`ejected ${p} ${ms} ${n} ${k}${cause === '5xx' ? ' 5xx' : ''}`),
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
    d.success(a, now());
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
    const { d, events, at, now } = detector(1);
    const a = pod('a');
    d.failure(a);
    at(2_500);
    d.failure(a);
    at(5_000);
    d.success(a, now());
    d.success(a, now());
    expect(a.health).toMatchObject({ ejectedUntil: 0, ejections: 0, consecutiveFailures: 0 });
    d.failure(a);
    expect(events).toEqual(['ejected a 1000 1 1', 'ejected a 2000 1 2', 'returned a', 'ejected a 1000 1 1']);
  });

  it('ejects after N 5xx answers in a row, not before; another answer in between resets the run', () => {
    const { d, events, now } = detector(3, 4);
    const a = pod('a');
    for (let i = 0; i < 3; i++) d.serverError(a);
    d.success(a, now());
    for (let i = 0; i < 3; i++) d.serverError(a);
    expect(OutlierDetector.ejected(a, now())).toBe(false);
    expect(a.health.consecutive5xx).toBe(3);
    d.serverError(a);
    expect(OutlierDetector.ejected(a, now())).toBe(true);
    expect(a.health).toMatchObject({ ejectedUntil: now() + 1_000, ejections: 1, consecutive5xx: 0, consecutiveFailures: 0 });
    expect(events).toEqual(['ejected a 1000 4 1 5xx']);
  });

  it('5xx ejections double like the others, one 5xx on probation is enough, and an answer puts the pod back', () => {
    const { d, events, at, now } = detector(3, 2);
    const a = pod('a');
    d.serverError(a);
    d.serverError(a); // ejected at 1000 for 1 s
    at(1_500);
    d.serverError(a); // answered while ejected (sent before, or all pods were): nothing changes
    expect(a.health.ejectedUntil).toBe(2_000);
    expect(a.health.consecutive5xx).toBe(0);
    at(2_000);
    d.serverError(a); // 2 s
    at(4_000);
    d.failure(a); // a connect failure on probation also ejects: 4 s
    at(8_000);
    d.serverError(a); // 8 s capped to 5 s
    expect(a.health.ejectedUntil).toBe(13_000);
    at(13_000);
    d.success(a, now());
    expect(a.health).toMatchObject({ ejectedUntil: 0, ejections: 0, consecutive5xx: 0 });
    expect(events).toEqual(['ejected a 1000 2 1 5xx', 'ejected a 2000 1 2 5xx', 'ejected a 4000 1 3', 'ejected a 5000 1 4 5xx', 'returned a']);
  });

  it('the two runs are counted apart: a 5xx answer does not end a run of connect failures, nor the reverse', () => {
    const { d, events, now } = detector(2, 2);
    const a = pod('a');
    d.failure(a);
    d.serverError(a);
    expect(OutlierDetector.ejected(a, now())).toBe(false);
    d.failure(a);
    expect(events).toEqual(['ejected a 1000 2 1']);
    const b = pod('b');
    d.serverError(b);
    d.failure(b);
    d.serverError(b);
    expect(events).toEqual(['ejected a 1000 2 1', 'ejected b 1000 2 1 5xx']);
  });

  it('consecutive5xx 0: 5xx answers never eject', () => {
    const { d, events, now } = detector(3, 0);
    const a = pod('a');
    expect(d.on5xx).toBe(false);
    for (let i = 0; i < 100; i++) d.serverError(a);
    expect(OutlierDetector.ejected(a, now())).toBe(false);
    expect(a.health.consecutive5xx).toBe(0);
    expect(events).toEqual([]);
  });

  it('counts 500, 502, 504 and a 503 without retry-after; not a 503 with retry-after, 501, other 5xx or 4xx', () => {
    for (const s of [500, 502, 504]) {
      expect(countsAs5xx(s, false)).toBe(true);
      expect(countsAs5xx(s, true)).toBe(true);
    }
    expect(countsAs5xx(503, false)).toBe(true);
    expect(countsAs5xx(503, true)).toBe(false);
    for (const s of [200, 204, 301, 400, 404, 408, 429, 499, 501, 505, 507, 599]) expect(countsAs5xx(s, false)).toBe(false);
  });

  it('an answer to a request sent before the ejection (or in its millisecond) does not end it, nor the probation after it', () => {
    const { d, events, at, now } = detector(3, 2);
    const a = pod('a');
    d.serverError(a);
    at(1_100);
    d.serverError(a); // ejected at 1100 for 1 s
    expect(a.health.ejectedAt).toBe(1_100);
    at(1_400);
    d.success(a, 1_050); // sent before the ejection, answered during it
    d.success(a, 1_100); // sent in the ejection's millisecond
    expect(OutlierDetector.ejected(a, now())).toBe(true);
    expect(a.health).toMatchObject({ ejectedUntil: 2_100, ejections: 1 });
    at(2_100);
    d.success(a, 1_000); // on probation: still old news
    expect(a.health.ejections).toBe(1);
    d.serverError(a); // the next failure ejects again, for longer
    expect(a.health).toMatchObject({ ejectedAt: 2_100, ejectedUntil: 4_100, ejections: 2 });
    at(4_100);
    d.success(a, 2_000); // sent before the second ejection
    expect(a.health.ejections).toBe(2);
    d.success(a, 4_100 - 1); // sent during the ejection (every pod was ejected): the pod answered since
    expect(a.health).toMatchObject({ ejectedUntil: 0, ejections: 0, consecutive5xx: 0 });
    expect(events).toEqual(['ejected a 1000 2 1 5xx', 'ejected a 2000 1 2 5xx', 'returned a']);
    // Not ejected: any answer ends the runs, whenever its request went out.
    d.serverError(a);
    d.success(a, 0);
    expect(a.health.consecutive5xx).toBe(0);
  });

  it('a failure brings no answer back: with connect failures, too, only answers to requests sent after the ejection end it', () => {
    const { d, events, at } = detector(1, 5);
    const a = pod('a');
    at(5_000);
    d.failure(a);
    d.success(a, 4_999);
    expect(a.health.ejections).toBe(1);
    d.success(a, 5_001);
    expect(events).toEqual(['ejected a 1000 1 1', 'returned a']);
  });
});
