/**
 * The incarnations of limit windows a worker has seen on a Redis Cluster (incarnations.ts): what a
 * give-back expects, and which admissions' give-backs are dropped once another process answers.
 */
import { describe, expect, it } from 'vitest';
import { Incarnations, MAX_INCARNATIONS, NO_INCARNATION } from '../../../src/ratelimit/redis/incarnations.js';

const W = 1_764_288_000_000;
const B = 'ir:{a}';

describe('Incarnations', () => {
  it('expects nothing known before a reply, and the incarnation seen last after one', () => {
    const inc = new Incarnations();
    expect(inc.expected(B, 'minute')).toBe(NO_INCARNATION);
    expect(inc.keeps(B, 'minute', 1)).toBe(true);
    expect(inc.saw(B, 'minute', W, '111', 30_000, 1000)).toBe(false);
    expect(inc.expected(B, 'minute')).toBe('111');
    expect(inc.expected(B, 'hour')).toBe(NO_INCARNATION);
    expect(inc.keeps(B, 'minute', 500)).toBe(true);
  });

  it('another incarnation in the same window: give-backs of admissions begun before it was seen are dropped', () => {
    const inc = new Incarnations();
    inc.saw(B, 'minute', W, '111', 30_000, 1000);
    expect(inc.saw(B, 'minute', W, '222', 29_000, 2000)).toBe(true);
    expect(inc.expected(B, 'minute')).toBe('222');
    expect(inc.keeps(B, 'minute', 1999)).toBe(false);
    expect(inc.keeps(B, 'minute', 0)).toBe(false); // not known when: dropped
    expect(inc.keeps(B, 'minute', 2000)).toBe(true);
    expect(inc.saw(B, 'minute', W, '222', 28_000, 3000)).toBe(false);
    expect(inc.keeps(B, 'minute', 2500)).toBe(true);
  });

  it('a window that lost its incarnation (a settle reached a node that restarted) counts as another one', () => {
    const inc = new Incarnations();
    inc.saw(B, 'minute', W, '111', 30_000, 1000);
    expect(inc.saw(B, 'minute', W, NO_INCARNATION, 29_000, 2000)).toBe(true);
    expect(inc.keeps(B, 'minute', 1500)).toBe(false);
    // The next admission names one: the admissions begun before the loss stay dropped.
    expect(inc.saw(B, 'minute', W, '333', 28_000, 3000)).toBe(true);
    expect(inc.keeps(B, 'minute', 1500)).toBe(false);
    expect(inc.keeps(B, 'minute', 3000)).toBe(true);
  });

  it('a late reply of an earlier window changes nothing of the current one', () => {
    const inc = new Incarnations();
    inc.saw(B, 'minute', W + 60_000, '111', 30_000, 1000);
    inc.saw(B, 'minute', W + 60_000, '222', 29_000, 2000);
    expect(inc.saw(B, 'minute', W, '999', 0, 2500)).toBe(false);
    expect(inc.expected(B, 'minute')).toBe('222');
    expect(inc.keeps(B, 'minute', 1500)).toBe(false);
  });

  it('a first incarnation after a window seen without one replaces nothing; a new window starts afresh', () => {
    const inc = new Incarnations();
    inc.saw(B, 'minute', W, NO_INCARNATION, 30_000, 1000);
    expect(inc.saw(B, 'minute', W, '111', 29_000, 2000)).toBe(false);
    expect(inc.keeps(B, 'minute', 1500)).toBe(true);
    inc.saw(B, 'minute', W, '222', 28_000, 3000);
    expect(inc.keeps(B, 'minute', 2500)).toBe(false);
    expect(inc.saw(B, 'minute', W + 60_000, '444', 60_000, 31_000)).toBe(false);
    expect(inc.expected(B, 'minute')).toBe('444');
    expect(inc.keeps(B, 'minute', 2500)).toBe(true);
  });

  it('bounded: at the bound, the windows that ended are forgotten (their give-backs then expect none)', () => {
    const inc = new Incarnations();
    for (let i = 0; i < MAX_INCARNATIONS; i++) inc.saw(`ir:{k${i}}`, 'second', W, String(i + 1), i === 0 ? 5_000 : 500, 1000);
    expect(inc.expected('ir:{k0}', 'second')).toBe('1');
    inc.saw('ir:{new}', 'second', W, '7', 1000, 2000);
    expect(inc.expected('ir:{new}', 'second')).toBe('7');
    expect(inc.expected('ir:{k0}', 'second')).toBe('1'); // still on
    expect(inc.expected('ir:{k1}', 'second')).toBe(NO_INCARNATION);
  });
});
