import { WINDOW_UNITS, type WindowUnit } from '../config/resource-types.js';

/**
 * Fixed rate-limit windows aligned to UTC boundaries: a window starts at windowStart (inclusive)
 * and ends at windowEnd (exclusive, the start of the next one). `second`..`day` have a constant
 * length (UTC has no DST; leap seconds do not exist in epoch milliseconds); `month` is the
 * calendar month, so its length is 28..31 days.
 */

const FIXED_MS: Readonly<Record<Exclude<WindowUnit, 'month'>, number>> = {
  second: 1_000,
  minute: 60_000,
  hour: 3_600_000,
  day: 86_400_000,
};

export function isWindowUnit(value: unknown): value is WindowUnit {
  return typeof value === 'string' && (WINDOW_UNITS as readonly string[]).includes(value);
}

/** Start of the window of `unit` that contains `nowMs`. */
export function windowStart(unit: WindowUnit, nowMs: number): number {
  if (unit === 'month') {
    const d = new Date(nowMs);
    return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1);
  }
  const len = FIXED_MS[unit];
  if (len === undefined) throw new Error(`unknown rate limit unit "${String(unit)}"`);
  return Math.floor(nowMs / len) * len;
}

/** End (exclusive) of the window of `unit` that contains `nowMs`. */
export function windowEnd(unit: WindowUnit, nowMs: number): number {
  if (unit === 'month') {
    const d = new Date(nowMs);
    // Date.UTC normalizes month 12 to January of the next year.
    return Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1);
  }
  const len = FIXED_MS[unit];
  if (len === undefined) throw new Error(`unknown rate limit unit "${String(unit)}"`);
  return Math.floor(nowMs / len) * len + len;
}

/** The longest a window of each unit lasts (a month: 31 days). */
const LONGEST_MS: Readonly<Record<WindowUnit, number>> = { ...FIXED_MS, month: 31 * 86_400_000 };

/**
 * Whether a window of `unit` ending at `endMs` is over at `nowMs`, or cannot be the one that holds
 * it: it ends further off than a window of that unit lasts, as after the clock stepped back (an
 * NTP step, a VM resumed). What was decided in such a window is asked again instead of waiting for
 * its end, which could be as far off as the step.
 */
export function windowOver(unit: WindowUnit, endMs: number, nowMs: number): boolean {
  return nowMs >= endMs || endMs - nowMs > LONGEST_MS[unit];
}

/** Whole seconds until the window containing `nowMs` resets: ceil, at least 1. */
export function secondsUntilReset(unit: WindowUnit, nowMs: number): number {
  return secondsUntil(windowEnd(unit, nowMs), nowMs);
}

/** Whole seconds from `nowMs` to `endMs`: ceil, at least 1 (a reset is never "now"). */
export function secondsUntil(endMs: number, nowMs: number): number {
  const s = Math.ceil((endMs - nowMs) / 1000);
  return s < 1 ? 1 : s;
}

/**
 * Whether `atMs` and `nowMs` fall in the same window of `unit`. A request's input correction or
 * give-back belongs to the window that admitted it: once that window is over, the new one owes it
 * nothing (its counters start at 0).
 */
export function sameWindow(unit: WindowUnit, atMs: number, nowMs: number): boolean {
  return nowMs >= atMs ? nowMs < windowEnd(unit, atMs) : atMs < windowEnd(unit, nowMs);
}
