/**
 * The give-backs held while Redis is unavailable (held-give-backs.ts): summed per limit and window,
 * bounded, and handed out only to the instance that charged them, in a window still on.
 */
import { describe, expect, it } from 'vitest';
import { HeldGiveBacks, MAX_HELD_GIVE_BACKS } from '../../../src/ratelimit/redis/held-give-backs.js';

const T0 = Date.UTC(2025, 0, 15, 10, 30, 20);
const MINUTE_START_MS = T0 - (T0 % 60_000);

function known(runId: string): HeldGiveBacks {
  const h = new HeldGiveBacks();
  h.takeFor(runId, T0, 100);
  return h;
}

describe('HeldGiveBacks', () => {
  it('holds nothing while no instance is known (Redis never answered)', () => {
    const h = new HeldGiveBacks();
    expect(h.hold('ir:{a}', 'minute', T0, 4)).toBe(false);
    expect(h.takeFor('r1', T0, 100)).toEqual([]);
  });

  it('sums the give-backs of one limit and window, and hands them to the same instance once', () => {
    const h = known('r1');
    h.hold('ir:{a}', 'minute', T0, 4);
    h.hold('ir:{a}', 'minute', T0 + 1000, 3);
    h.hold('ir:{b}', 'hour', T0, 2);
    expect(h.takeFor('r1', T0 + 2000, 100)).toEqual([
      { base: 'ir:{a}', unit: 'minute', window: MINUTE_START_MS, incarnation: '', charged: -1, tokens: 7 },
      { base: 'ir:{b}', unit: 'hour', window: T0 - (T0 % 3_600_000), incarnation: '', charged: -1, tokens: 2 },
    ]);
    expect(h.takeFor('r1', T0 + 2000, 100)).toEqual([]);
    expect(h.takeDropped()).toBe(0);
  });

  it('on a Cluster, keeps the give-backs of one window made under different incarnations apart', () => {
    const h = known('cluster');
    h.hold('ir:{a}', 'minute', T0, 4, '111');
    h.hold('ir:{a}', 'minute', T0, 3, '222');
    h.hold('ir:{a}', 'minute', T0, 1, '111');
    expect(h.takeFor('cluster', T0, 100)).toEqual([
      { base: 'ir:{a}', unit: 'minute', window: MINUTE_START_MS, incarnation: '111', charged: -1, tokens: 5 },
      { base: 'ir:{a}', unit: 'minute', window: MINUTE_START_MS, incarnation: '222', charged: -1, tokens: 3 },
    ]);
  });

  it('with the window Redis charged them in known, hands them to the same instance whatever this clock says of that window (the script checks it by its own)', () => {
    const h = known('r1');
    const redisMinute = MINUTE_START_MS + 60_000; // Redis's clock is ahead: it charged the next minute
    h.hold('ir:{a}', 'minute', MINUTE_START_MS + 59_990, 4, '', redisMinute);
    h.hold('ir:{a}', 'minute', MINUTE_START_MS + 59_995, 3, '', redisMinute);
    h.hold('ir:{a}', 'minute', MINUTE_START_MS + 59_995, 2); // not known: this clock decides
    // 5 ms before this clock's minute ends (within the margin): only the known ones go.
    expect(h.takeFor('r1', MINUTE_START_MS + 59_995, 100)).toEqual([
      { base: 'ir:{a}', unit: 'minute', window: MINUTE_START_MS, incarnation: '', charged: redisMinute, tokens: 7 },
    ]);
    expect(h.takeDropped()).toBe(2);
    h.hold('ir:{a}', 'minute', T0, 4, '', MINUTE_START_MS);
    expect(h.takeFor('r2', T0, 100)).toEqual([]); // another instance never held them
    expect(h.takeDropped()).toBe(4);
  });

  it('drops (and counts) the give-backs of another instance, of a window over or about to end, and of unknown instance', () => {
    const h = known('r1');
    h.hold('ir:{a}', 'minute', T0, 4);
    expect(h.takeFor('r2', T0, 100)).toEqual([]);
    expect(h.takeDropped()).toBe(4);
    h.hold('ir:{a}', 'minute', T0, 5);
    expect(h.takeFor('r2', MINUTE_START_MS + 60_000, 100)).toEqual([]);
    h.hold('ir:{a}', 'minute', T0, 6);
    expect(h.takeFor('r2', MINUTE_START_MS + 59_950, 100)).toEqual([]); // 50 ms left: within the margin
    h.hold('ir:{a}', 'minute', T0, 7);
    expect(h.takeFor(null, T0, 100)).toEqual([]);
    expect(h.takeDropped()).toBe(18);
    expect(h.hold('ir:{a}', 'minute', T0, 1)).toBe(false); // instance unknown now
  });

  it('holds at most MAX_HELD_GIVE_BACKS limits; more are dropped and counted', () => {
    const h = known('r1');
    for (let i = 0; i < MAX_HELD_GIVE_BACKS; i++) expect(h.hold(`ir:{k${i}}`, 'minute', T0, 1)).toBe(true);
    expect(h.hold('ir:{one-more}', 'minute', T0, 9)).toBe(false);
    expect(h.hold('ir:{k0}', 'minute', T0, 1)).toBe(true); // one already held still sums
    expect(h.takeDropped()).toBe(9);
    expect(h.takeFor('r1', T0, 100)).toHaveLength(MAX_HELD_GIVE_BACKS);
  });
});
