import { describe, expect, it } from 'vitest';
import type { WindowUnit } from '../../../src/config/resource-types.js';
import { isWindowUnit, sameWindow, secondsUntilReset, windowEnd, windowStart } from '../../../src/ratelimit/windows.js';

const iso = (ms: number): string => new Date(ms).toISOString();
const windowOf = (unit: WindowUnit, ms: number): { start: number; end: number } => ({ start: windowStart(unit, ms), end: windowEnd(unit, ms) });

describe('windowOf', () => {
  const at = Date.UTC(2025, 0, 15, 10, 30, 20, 123);
  it.each([
    ['second', '2025-01-15T10:30:20.000Z', '2025-01-15T10:30:21.000Z'],
    ['minute', '2025-01-15T10:30:00.000Z', '2025-01-15T10:31:00.000Z'],
    ['hour', '2025-01-15T10:00:00.000Z', '2025-01-15T11:00:00.000Z'],
    ['day', '2025-01-15T00:00:00.000Z', '2025-01-16T00:00:00.000Z'],
    ['month', '2025-01-01T00:00:00.000Z', '2025-02-01T00:00:00.000Z'],
  ] as const)('%s is UTC aligned', (unit, start, end) => {
    const w = windowOf(unit, at);
    expect([iso(w.start), iso(w.end)]).toEqual([start, end]);
  });

  it('month is the calendar month, including February of leap years and December', () => {
    const feb = windowOf('month', Date.UTC(2024, 1, 29, 23, 59, 59, 999));
    expect([iso(feb.start), iso(feb.end)]).toEqual(['2024-02-01T00:00:00.000Z', '2024-03-01T00:00:00.000Z']);
    const dec = windowOf('month', Date.UTC(2024, 11, 31, 23, 59, 59, 999));
    expect(iso(dec.end)).toBe('2025-01-01T00:00:00.000Z');
    const jan31 = windowOf('month', Date.UTC(2025, 0, 31, 23, 59, 59, 999));
    expect(iso(jan31.end)).toBe('2025-02-01T00:00:00.000Z');
    expect(iso(windowOf('month', jan31.end).start)).toBe('2025-02-01T00:00:00.000Z');
  });

  it('the end is exclusive: the boundary instant belongs to the next window', () => {
    const boundary = Date.UTC(2025, 0, 15, 11, 0, 0, 0);
    expect(windowOf('hour', boundary).start).toBe(boundary);
    expect(windowOf('hour', boundary - 1).end).toBe(boundary);
  });
});

describe('secondsUntilReset', () => {
  it('rounds up to whole seconds and is at least 1', () => {
    expect(secondsUntilReset('minute', Date.UTC(2025, 0, 15, 10, 30, 20, 0))).toBe(40);
    expect(secondsUntilReset('minute', Date.UTC(2025, 0, 15, 10, 30, 20, 1))).toBe(40);
    expect(secondsUntilReset('minute', Date.UTC(2025, 0, 15, 10, 30, 59, 999))).toBe(1);
    expect(secondsUntilReset('second', Date.UTC(2025, 0, 15, 10, 30, 20, 999))).toBe(1);
    expect(secondsUntilReset('minute', Date.UTC(2025, 0, 15, 10, 31, 0, 0))).toBe(60);
    expect(secondsUntilReset('month', Date.UTC(2025, 1, 1))).toBe(28 * 86_400);
  });
});

describe('isWindowUnit', () => {
  it('accepts the five units only', () => {
    for (const u of ['second', 'minute', 'hour', 'day', 'month']) expect(isWindowUnit(u)).toBe(true);
    for (const u of ['week', 'Minute', '', 1, null]) expect(isWindowUnit(u)).toBe(false);
  });

  it('sameWindow: both times in one window of the unit, whichever comes first (month lengths included)', () => {
    const t = (iso: string) => Date.parse(iso);
    expect(sameWindow('second', t('2025-03-01T00:00:00.999Z'), t('2025-03-01T00:00:00.000Z'))).toBe(true);
    expect(sameWindow('second', t('2025-03-01T00:00:00.999Z'), t('2025-03-01T00:00:01.000Z'))).toBe(false);
    expect(sameWindow('minute', t('2025-03-01T00:00:59.999Z'), t('2025-03-01T00:01:00.000Z'))).toBe(false);
    expect(sameWindow('day', t('2025-03-01T00:00:00.000Z'), t('2025-03-01T23:59:59.999Z'))).toBe(true);
    expect(sameWindow('month', t('2024-02-01T00:00:00.000Z'), t('2024-02-29T23:59:59.999Z'))).toBe(true);
    expect(sameWindow('month', t('2024-02-29T23:59:59.999Z'), t('2024-03-01T00:00:00.000Z'))).toBe(false);
    expect(sameWindow('month', t('2025-12-31T23:59:59.999Z'), t('2026-01-01T00:00:00.000Z'))).toBe(false);
    expect(sameWindow('month', t('2026-01-01T00:00:00.000Z'), t('2025-12-31T23:59:59.999Z'))).toBe(false);
  });
});
