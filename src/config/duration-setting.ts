/**
 * One reading of every duration setting of the environment (ROUTER_DRAIN_TIMEOUT,
 * ACCESS_LOG_FLUSH_INTERVAL, RATE_LIMIT_REDIS_TIMEOUT, ...), so that each accepts the same forms
 * and a bad one is reported the same way.
 */
import { parseDuration } from './duration.js';
import { badSetting } from '../setting-message.js';

export interface DurationRange {
  /** Smallest value allowed, ms. */
  readonly min: number;
  /** Largest value allowed, ms (Infinity: no bound). */
  readonly max: number;
  /** `min` itself is not allowed (a duration above 0). */
  readonly aboveMin?: boolean;
}

const BARE_MILLISECONDS = /^\d+$/;

/**
 * The milliseconds of a duration setting: `unset` when the variable is unset or empty; else a
 * duration (`500ms`, `30s`, `1m30s`, see duration.ts) or a number of milliseconds (`250`), white
 * space around it ignored, within `range`, rounded up to a whole millisecond. Throws an Error whose
 * message names the variable, the range and the value that came.
 */
export function durationSetting(name: string, raw: string | undefined, unset: number, range: DurationRange): number {
  if (raw === undefined || raw === '') return unset;
  const text = raw.trim();
  let ms = Number.NaN;
  let fault = '';
  try {
    ms = BARE_MILLISECONDS.test(text) ? Number(text) : parseDuration(text);
  } catch (err) {
    fault = ` (${(err as Error).message})`;
  }
  const inRange = range.aboveMin === true ? ms > range.min : ms >= range.min;
  if (!(inRange && ms <= range.max)) {
    throw new Error(`${badSetting(name, `a duration ${rangeText(range)}, such as ${examples(range)}, or a number of milliseconds`, raw)}${fault}`);
  }
  return Math.ceil(ms);
}

/**
 * A number without a unit is milliseconds, so `ROUTER_UPSTREAM_TIMEOUT=5` (5 seconds meant) is
 * 5 ms, and every request times out. Such values stay valid (configurations written in
 * milliseconds use them), but one from 1 to 999 may be seconds meant: the warning the router
 * logs at start for it, or null (no bare number, 0, or 1000 and above, where milliseconds are
 * the likely meaning). The caller decides whether seconds would be accepted at all
 * (RATE_LIMIT_REDIS_TIMEOUT=80 cannot mean 80 s: at most 60 s).
 */
export function bareMillisecondsWarning(name: string, raw: string | undefined): string | null {
  const text = raw?.trim() ?? '';
  if (!BARE_MILLISECONDS.test(text)) return null;
  const ms = Number(text);
  if (ms < 1 || ms >= 1000) return null;
  return `${name}=${text} is read as ${ms} millisecond${ms === 1 ? '' : 's'}: a number without a unit is milliseconds; ` +
    `write ${ms}s for seconds, or ${ms}ms to keep milliseconds without this warning`;
}

function rangeText(r: DurationRange): string {
  if (r.max === Infinity) return r.aboveMin === true ? `above ${shown(r.min)}` : `of at least ${shown(r.min)}`;
  return r.aboveMin === true ? `above ${shown(r.min)}, up to ${shown(r.max)}` : `from ${shown(r.min)} to ${shown(r.max)}`;
}

/** A bound as a duration: `0`, `50ms`, `2s`, `10m`, `1h`. */
export function shown(ms: number): string {
  if (ms === 0) return '0';
  if (ms % 3_600_000 === 0) return `${ms / 3_600_000}h`;
  if (ms % 60_000 === 0) return `${ms / 60_000}m`;
  if (ms % 1000 === 0) return `${ms / 1000}s`;
  return `${ms}ms`;
}

/** Two durations the range takes, as examples (`500ms or 30s` where it takes them). */
function examples(r: DurationRange): string {
  const fits = (ms: number): boolean => (r.aboveMin === true ? ms > r.min : ms >= r.min) && ms <= r.max;
  const some = ([['500ms', 500], ['30s', 30_000], ['5s', 5_000], ['50ms', 50], ['5m', 300_000], ['1h', 3_600_000]] as const).filter(([, ms]) => fits(ms));
  return some.length === 0 ? 'the bounds above' : some.slice(0, 2).map(([text]) => text).join(' or ');
}
