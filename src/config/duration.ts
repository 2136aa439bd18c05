/**
 * Go / Kubernetes (metav1.Duration) style durations: a sequence of decimal numbers, each
 * with an optional fraction and a unit, e.g. `500ms`, `30s`, `1m30s`, `1.5h`, `2h45m`.
 * Units: ns, us (or µs / μs), ms, s, m, h. A bare `0` is accepted, as in Go.
 * Signs are rejected: a duration here is always a non-negative length of time.
 */

const UNIT_MS: Readonly<Record<string, number>> = {
  ns: 1e-6,
  us: 1e-3,
  'µs': 1e-3, // U+00B5 micro sign
  'μs': 1e-3, // U+03BC Greek mu
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
};

/** One `<number><unit>` part; sticky so parts must follow each other without gaps. */
const PART = /(\d+(?:\.\d*)?|\.\d+)([a-zµμ]+)/y;

const EXAMPLES = 'e.g. "500ms", "30s", "1m30s", "1.5h"';

/** Parses a duration string into milliseconds (possibly fractional below 1 ms). Throws on bad input. */
export function parseDuration(s: string): number {
  if (typeof s !== 'string') {
    throw new Error(`expected a duration string (${EXAMPLES}), got ${typeof s}`);
  }
  if (s === '') throw new Error(`empty duration; expected a duration like ${EXAMPLES}`);
  if (s === '0') return 0;
  if (s[0] === '-') throw new Error(`negative duration "${s}" is not allowed`);
  if (s[0] === '+') throw new Error(`invalid duration "${s}": a sign is not allowed; expected ${EXAMPLES}`);

  let total = 0;
  let pos = 0;
  PART.lastIndex = 0;
  while (pos < s.length) {
    PART.lastIndex = pos;
    const m = PART.exec(s);
    if (m === null) {
      if (/^\d+(\.\d*)?$|^\.\d+$/.test(s.slice(pos))) {
        throw new Error(`invalid duration "${s}": missing unit after "${s.slice(pos)}" (units: ns, us, ms, s, m, h), ${EXAMPLES}`);
      }
      throw new Error(`invalid duration "${s}" at position ${pos}: expected a number followed by a unit (ns, us, ms, s, m, h), ${EXAMPLES}`);
    }
    const factor = UNIT_MS[m[2]];
    if (factor === undefined) {
      throw new Error(`invalid duration "${s}": unknown unit "${m[2]}" (known units: ns, us, ms, s, m, h)`);
    }
    total += Number(m[1]) * factor;
    pos = PART.lastIndex;
  }
  if (!Number.isFinite(total)) throw new Error(`invalid duration "${s}": too large`);
  return total;
}
