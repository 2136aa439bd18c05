/**
 * The charge Redis may make late of an admission the `open` failure mode admitted (late-charge.ts):
 * undone once, when both the late reply said it was charged and the request gave it back, in either
 * order, while its window has more than a timeout left.
 */
import { describe, expect, it } from 'vitest';
import { InDoubtCharge } from '../../../src/ratelimit/redis/late-charge.js';

/** A charge of 6 tokens; `undone` counts the undoings (-6) sent, `sent` has every correction sent. */
function charge(): { c: InDoubtCharge; undone: () => number; sent: number[] } {
  const sent: number[] = [];
  const c = new InDoubtCharge({ correctLateCharge: (_c, d) => void sent.push(d) }, ['ir:{a}'], ['minute'], 6, '');
  return { c, undone: () => sent.filter((d) => d === -6).length, sent };
}

describe('InDoubtCharge', () => {
  it('given back, then charged late: undone once', () => {
    const { c, undone } = charge();
    c.giveBack();
    expect(undone()).toBe(0);
    c.ranLate(true, 30_000, 100);
    c.giveBack();
    expect(undone()).toBe(1);
  });

  it('charged late, then given back: undone once', () => {
    const { c, undone } = charge();
    c.ranLate(true, 30_000, 100);
    expect(undone()).toBe(0);
    c.giveBack();
    c.giveBack();
    expect(undone()).toBe(1);
  });

  it('refused by the late call, or never given back (served): nothing to undo', () => {
    const refused = charge();
    refused.c.giveBack();
    refused.c.ranLate(false, 30_000, 100);
    expect(refused.undone()).toBe(0);
    const served = charge();
    served.c.ranLate(true, 30_000, 100);
    expect(served.undone()).toBe(0);
  });

  it('its window ends within the timeout: not undone (it would reach the next window)', () => {
    const { c, undone } = charge();
    c.giveBack();
    c.ranLate(true, 50, 100);
    expect(undone()).toBe(0);
  });

  it('a served request\'s input correction is applied to the charge once it is known to be made, never to one refused', () => {
    const before = charge();
    before.c.correct(-3);
    expect(before.sent).toEqual([]);
    before.c.ranLate(true, 30_000, 100);
    before.c.correct(1);
    expect(before.sent).toEqual([-3, 1]);
    const refused = charge();
    refused.c.correct(-3);
    refused.c.ranLate(false, 30_000, 100);
    refused.c.correct(-1);
    expect(refused.sent).toEqual([]);
  });
});
