import { describe, expect, it } from 'vitest';
import { parseDuration } from '../../../src/config/duration.js';

describe('parseDuration', () => {
  it.each([
    ['500ms', 500],
    ['30s', 30_000],
    ['2m', 120_000],
    ['1h', 3_600_000],
    ['1m30s', 90_000],
    ['1.5s', 1500],
    ['.5s', 500],
    ['2h45m', 9_900_000],
    ['1h2m3s4ms', 3_723_004],
    ['1500us', 1.5],
    ['1500µs', 1.5],
    ['2000000ns', 2],
    ['0', 0],
    ['0s', 0],
  ])('%s -> %d ms', (text, ms) => {
    expect(parseDuration(text)).toBeCloseTo(ms, 9);
  });

  it('rejects an empty string', () => {
    expect(() => parseDuration('')).toThrow(/empty duration/);
  });

  it('rejects negative durations', () => {
    expect(() => parseDuration('-1s')).toThrow(/negative duration "-1s"/);
  });

  it('rejects a sign', () => {
    expect(() => parseDuration('+1s')).toThrow(/sign is not allowed/);
  });

  it('rejects unknown units, naming the unit', () => {
    expect(() => parseDuration('5d')).toThrow(/unknown unit "d"/);
    expect(() => parseDuration('5sec')).toThrow(/unknown unit "sec"/);
  });

  it('rejects a number without unit', () => {
    expect(() => parseDuration('30')).toThrow(/missing unit after "30"/);
    expect(() => parseDuration('1m30')).toThrow(/missing unit after "30"/);
  });

  it.each(['abc', 's', '1 s', '1s ', ' 1s', '1..5s', '1,5s', '1s-2s', 'ms5'])('rejects garbage %j', (text) => {
    expect(() => parseDuration(text)).toThrow(/invalid duration/);
  });

  it('rejects non-strings', () => {
    expect(() => parseDuration(30 as unknown as string)).toThrow(/expected a duration string/);
  });
});
