import { describe, expect, it } from 'vitest';
import { PodHealthHub } from '../../../src/pick/pod-health-hub.js';
import { PodHealthShare, type EjectionShare, type HealthReport } from '../../../src/pick/pod-health-share.js';
import { EndpointState } from '../../../src/upstream/endpoint-registry.js';

const settings = { consecutiveFailures: 3, consecutive5xx: 4, baseEjectionMs: 1_000, maxEjectionMs: 8_000 };

function hub() {
  let now = 10_000;
  const lines: string[] = [];
  const levels: string[] = [];
  const h = new PodHealthHub(settings, () => now, (level, m) => { levels.push(level); lines.push(m); });
  return { h, lines, levels, at: (t: number) => { now = t; }, now: () => now };
}

describe('PodHealthHub (primary: one detector per instance)', () => {
  it('failures reported by different workers add up to one ejection, shared with the reporting worker named', () => {
    const { h, lines } = hub();
    expect(h.report(1, [['k', 'pod-a', 0, 1, 0, 0]])).toBeNull();
    expect(h.report(2, [['k', 'pod-a', 0, 1, 0, 0]])).toBeNull();
    const share = h.report(1, [['k', 'pod-a', 0, 1, 0, 0]]);
    expect(share).toEqual({ t: 'sched:eject', by: 1, pods: [['k', 'pod-a', 1_000, 1, 10_000]] });
    expect(lines).toEqual(['pod pod-a ejected for 1000ms after 3 connect failure(s)/timeout(s)/reset(s) in a row (ejection 1 in a row)']);
    expect(h.ejected()).toEqual([['k', 'pod-a', 1_000, 1, 10_000]]);
    // More failures during the ejection change nothing.
    expect(h.report(2, [['k', 'pod-a', 0, 5, 0, 0]])).toBeNull();
  });

  it('an answer from any worker resets the count and returns an ejected pod; a clean pod is forgotten', () => {
    const { h, lines, levels, at, now } = hub();
    h.report(1, [['k', 'pod-a', 0, 2, 0, 0]]);
    expect(h.report(2, [['k', 'pod-a', 1, 0, 0, now()]])).toBeNull();
    expect(h.size).toBe(0);
    expect(h.report(1, [['k', 'pod-a', 0, 2, 0, 0]])).toBeNull();
    h.report(1, [['k', 'pod-a', 0, 1, 0, 0]]);
    at(11_500);
    expect(h.ejected()).toEqual([]);
    // On probation one failure ejects again, for twice as long.
    expect(h.report(2, [['k', 'pod-a', 0, 1, 0, 0]])!.pods).toEqual([['k', 'pod-a', 2_000, 2, 11_500]]);
    at(14_000);
    expect(h.report(2, [['k', 'pod-a', 1, 0, 0, now()]])).toEqual({ t: 'sched:eject', by: 2, pods: [['k', 'pod-a', 0, 0, 11_500]] });
    expect(lines.at(-1)).toBe('pod pod-a answered again: back in rotation');
    // An ejection is a warning; a pod back in rotation, information.
    expect(levels).toEqual(['warn', 'warn', 'info']);
    expect(h.size).toBe(0);
  });

  it('answered then failed in one report: the failures after the answer count', () => {
    const { h, now } = hub();
    h.report(1, [['k', 'pod-a', 0, 2, 0, 0]]);
    expect(h.report(1, [['k', 'pod-a', 1, 2, 0, now()]])).toBeNull();
    expect(h.report(1, [['k', 'pod-a', 0, 1, 0, 0]])!.pods[0]![2]).toBe(1_000);
  });

  it('5xx failures reported by different workers add up to one ejection; an answer resets the run', () => {
    const { h, lines, at, now } = hub();
    expect(h.report(1, [['k', 'pod-a', 0, 0, 2, 0]])).toBeNull();
    expect(h.report(2, [['k', 'pod-a', 1, 0, 0, now()]])).toBeNull(); // another answer: the run starts again
    expect(h.size).toBe(0);
    expect(h.report(1, [['k', 'pod-a', 0, 0, 2, 0]])).toBeNull();
    // Connect failures do not end the run of 5xx failures, nor add to it.
    expect(h.report(2, [['k', 'pod-a', 0, 1, 1, 0]])).toBeNull();
    expect(h.report(1, [['k', 'pod-a', 0, 0, 1, 0]])).toEqual({ t: 'sched:eject', by: 1, pods: [['k', 'pod-a', 1_000, 1, 10_000]] });
    expect(lines).toEqual(['pod pod-a ejected for 1000ms after 4 5xx answer(s) in a row (ejection 1 in a row)']);
    // On probation one 5xx failure ejects again, for twice as long.
    at(11_000);
    expect(h.report(2, [['k', 'pod-a', 0, 0, 1, 0]])!.pods).toEqual([['k', 'pod-a', 2_000, 2, 11_000]]);
    at(13_000);
    expect(h.report(2, [['k', 'pod-a', 1, 0, 0, now()]])!.pods).toEqual([['k', 'pod-a', 0, 0, 11_000]]);
    expect(h.size).toBe(0);
  });

  it('an answer to a request sent before the primary\'s ejection (or in its millisecond) leaves it in force; one sent after ends it', () => {
    const { h, lines, at } = hub();
    h.report(1, [['k', 'pod-a', 0, 0, 3, 0]]);
    at(10_200);
    expect(h.report(2, [['k', 'pod-a', 0, 0, 1, 0]])!.pods).toEqual([['k', 'pod-a', 1_000, 1, 10_200]]); // ejected at 10200
    at(10_600);
    // Answers to requests sent before it, from both workers, in flight when it was ejected.
    expect(h.report(1, [['k', 'pod-a', 1, 0, 0, 10_150]])).toBeNull();
    expect(h.report(2, [['k', 'pod-a', 1, 0, 0, 10_200]])).toBeNull();
    expect(h.ejected()).toEqual([['k', 'pod-a', 600, 1, 10_200]]);
    expect(h.size).toBe(1); // not forgotten
    at(11_300);
    expect(h.report(1, [['k', 'pod-a', 1, 0, 0, 10_199]])).toBeNull(); // on probation: still old news
    // The next failure ejects again, for longer.
    expect(h.report(2, [['k', 'pod-a', 0, 0, 1, 0]])!.pods).toEqual([['k', 'pod-a', 2_000, 2, 11_300]]);
    at(13_400);
    expect(h.report(1, [['k', 'pod-a', 1, 0, 0, 13_350]])!.pods).toEqual([['k', 'pod-a', 0, 0, 11_300]]);
    expect(lines.at(-1)).toBe('pod pod-a answered again: back in rotation');
    expect(h.size).toBe(0);
  });
});

describe('PodHealthShare (worker side)', () => {
  it('reports outcomes once, applies ejections and returns, and counts only ejections it caused', async () => {
    const a = new EndpointState('pod-a', '127.0.0.1', 1, { connections: 1 });
    const sent: HealthReport[] = [];
    const counted: string[] = [];
    const now = 5_000;
    const share = new PodHealthShare(() => [a], () => now, (m) => sent.push(m), 7, (p) => counted.push(p));
    share.flush();
    expect(sent).toEqual([]);
    a.health.reportFailures = 2;
    share.soon();
    share.soon();
    await new Promise((r) => setImmediate(r));
    await new Promise((r) => setImmediate(r));
    expect(sent).toEqual([{ t: 'sched:health', outcomes: [[a.key, 'pod-a', 0, 2, 0, 0]] }]);
    expect(a.health.reportFailures).toBe(0);
    a.health.report5xx = 3;
    share.flush();
    expect(sent.at(-1)).toEqual({ t: 'sched:health', outcomes: [[a.key, 'pod-a', 0, 0, 3, 0]] });
    expect(a.health.report5xx).toBe(0);
    a.health.consecutive5xx = 2;

    const eject: EjectionShare = { t: 'sched:eject', by: 3, pods: [[a.key, 'pod-a', 1_000, 1, 4_999]] };
    share.apply(eject);
    expect(a.health.ejectedUntil).toBe(6_000);
    expect(a.health.consecutive5xx).toBe(0);
    expect(counted).toEqual([]);
    share.apply({ ...eject, by: 7 });
    expect(counted).toEqual(['pod-a']);
    share.apply({ t: 'sched:eject', by: 3, pods: [[a.key, 'pod-a', 0, 0, 4_999]] });
    expect(a.health.ejectedUntil).toBe(0);
    expect(a.health.ejections).toBe(0);
    await a.pool.close();
  });

  it('reports when the latest answered request went out; an ejection new to the worker is dated by its arrival, a repeat is not', async () => {
    const a = new EndpointState('pod-a', '127.0.0.1', 1, { connections: 1 });
    const sent: HealthReport[] = [];
    let now = 5_000;
    const share = new PodHealthShare(() => [a], () => now, (m) => sent.push(m), 7, () => {});
    a.health.reportSuccess = true;
    a.health.reportSentAt = 4_990;
    share.flush();
    expect(sent.at(-1)).toEqual({ t: 'sched:health', outcomes: [[a.key, 'pod-a', 1, 0, 0, 4_990]] });
    expect(a.health.reportSentAt).toBe(0);
    share.applyRows([[a.key, 'pod-a', 1_000, 1, 4_998]]); // ejected by the primary at 4998
    expect(a.health).toMatchObject({ ejectedAt: 5_000, ejectedUntil: 6_000, ejections: 1 });
    now = 5_500;
    share.applyRows([[a.key, 'pod-a', 500, 1, 4_998]]); // the periodic repeat of the same ejection
    expect(a.health.ejectedAt).toBe(5_000);
    now = 6_200;
    share.applyRows([[a.key, 'pod-a', 2_000, 2, 6_199]]); // ejected again on probation
    expect(a.health).toMatchObject({ ejectedAt: 6_200, ejectedUntil: 8_200, ejections: 2 });
    await a.pool.close();
  });
});
