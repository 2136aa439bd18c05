import { describe, expect, it } from 'vitest';
import { bareMillisecondsWarning, durationSetting, shown } from '../../../src/config/duration-setting.js';

const UP_TO_10S = { min: 0, max: 10_000 };

describe('durationSetting', () => {
  it('gives the default when the variable is unset or empty', () => {
    expect(durationSetting('X', undefined, 250, UP_TO_10S)).toBe(250);
    expect(durationSetting('X', '', 250, UP_TO_10S)).toBe(250);
  });

  it('reads a duration or a number of milliseconds, white space around it ignored, rounded up to a millisecond', () => {
    expect(durationSetting('X', '1m30s', 0, { min: 0, max: Infinity })).toBe(90_000);
    expect(durationSetting('X', '250', 0, UP_TO_10S)).toBe(250);
    expect(durationSetting('X', ' 2s\n', 0, UP_TO_10S)).toBe(2_000);
    expect(durationSetting('X', '0', 5, UP_TO_10S)).toBe(0);
    expect(durationSetting('X', '1500us', 0, UP_TO_10S)).toBe(2);
    expect(durationSetting('X', '10s', 0, UP_TO_10S)).toBe(10_000);
  });

  it('names the variable, the range and the value; says why a value does not parse', () => {
    expect(() => durationSetting('X', '11s', 0, UP_TO_10S)).toThrow(
      'X: expected a duration from 0 to 10s, such as 500ms or 5s, or a number of milliseconds; got "11s"',
    );
    expect(() => durationSetting('X', 'soon', 0, UP_TO_10S)).toThrow(/^X: expected a duration from 0 to 10s, .*; got "soon" \(invalid duration "soon" at position 0/);
    expect(() => durationSetting('X', '5 s', 0, UP_TO_10S)).toThrow(/got "5 s" \(invalid duration/);
    expect(() => durationSetting('X', '-1s', 0, UP_TO_10S)).toThrow(/\(negative duration "-1s" is not allowed\)$/);
    expect(() => durationSetting('X', '1.5', 0, UP_TO_10S)).toThrow(/missing unit/);
    expect(() => durationSetting('X', '0', 1, { min: 0, max: Infinity, aboveMin: true })).toThrow('X: expected a duration above 0, such as');
    expect(() => durationSetting('X', '20ms', 1, { min: 50, max: 3_600_000 })).toThrow('X: expected a duration from 50ms to 1h, such');
    expect(() => durationSetting('X', '0', 1, { min: 0, max: 600_000, aboveMin: true })).toThrow('X: expected a duration above 0, up to 10m, such');
    expect(() => durationSetting('X', '10ms', 1, { min: 100, max: Infinity })).toThrow('X: expected a duration of at least 100ms, such');
  });

  it('shows bounds as durations', () => {
    expect([0, 1, 50, 1_000, 1_500, 60_000, 600_000, 3_600_000, 86_400_000].map(shown)).toEqual(['0', '1ms', '50ms', '1s', '1500ms', '1m', '10m', '1h', '24h']);
  });
});

describe('bareMillisecondsWarning', () => {
  it('warns of a number without a unit from 1 to 999: read as milliseconds, how to write seconds, how to keep milliseconds', () => {
    expect(bareMillisecondsWarning('ROUTER_UPSTREAM_TIMEOUT', '5')).toBe(
      'ROUTER_UPSTREAM_TIMEOUT=5 is read as 5 milliseconds: a number without a unit is milliseconds; write 5s for seconds, or 5ms to keep milliseconds without this warning');
    expect(bareMillisecondsWarning('X', ' 999\n')).toBe('X=999 is read as 999 milliseconds: a number without a unit is milliseconds; write 999s for seconds, or 999ms to keep milliseconds without this warning');
    expect(bareMillisecondsWarning('X', '1')).toMatch(/^X=1 is read as 1 millisecond: /);
  });

  it('is silent for 0 (none in any unit), 1000 and more (milliseconds meant), a unit, or nothing', () => {
    for (const raw of ['0', '000', '1000', '30000', '5ms', '5s', '1m30s', 'soon', '', undefined]) expect(bareMillisecondsWarning('X', raw), String(raw)).toBeNull();
  });
});
