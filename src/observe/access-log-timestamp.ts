/**
 * RFC 3339 UTC timestamps with milliseconds ("2026-11-22T05:01:02.123Z") from epoch ms.
 * The part up to the second is cached, so records of the same second cost one string concat.
 */

let cachedSecond = Number.NaN;
let cachedPrefix = '';

const MS = ['00', '0', ''];

/**
 * The whole milliseconds a record's time is written as: non-finite or out-of-range values cannot
 * come from Date.now(); they are written as the epoch rather than throw.
 */
export function timestampMs(epochMs: number): number {
  return Number.isFinite(epochMs) && Math.abs(epochMs) <= 8.64e15 ? Math.floor(epochMs) : 0;
}

export function isoTimestamp(epochMs: number): string {
  const t = timestampMs(epochMs);
  const second = Math.floor(t / 1000);
  const ms = t - second * 1000;
  if (second !== cachedSecond) {
    cachedPrefix = new Date(second * 1000).toISOString().slice(0, -4);
    cachedSecond = second;
  }
  return cachedPrefix + (ms < 10 ? MS[0] : ms < 100 ? MS[1] : MS[2]) + ms + 'Z';
}
