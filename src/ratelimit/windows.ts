import type { WindowUnit } from '../config/resource-types.js';

/**
 * Fixed rate-limit windows aligned to UTC boundaries. `second`..`day` have a constant length
 * (UTC has no DST; leap seconds do not exist in epoch milliseconds); `month` is the calendar
 * month, so its length is 28..31 days.
 */
export interface Window {
  /** Inclusive start, epoch ms. */
  start: number;
  /** Exclusive end, epoch ms (the start of the next window). */
  end: number;
}

const FIXED_MS: Readonly<Record<Exclude<WindowUnit, 'month'>, number>> = {
  second: 1_000,
  minute: 60_000,
  hour: 3_600_000,
  day: 86_400_000,
};

export const WINDOW_UNITS: readonly WindowUnit[] = ['second', 'minute', 'hour', 'day', 'month'];

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

/** The window of `unit` that contains `nowMs`. */
export function windowOf(unit: WindowUnit, nowMs: number): Window {
  return { start: windowStart(unit, nowMs), end: windowEnd(unit, nowMs) };
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
