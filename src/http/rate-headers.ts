import type { Decision, LimitState } from '../ratelimit/limiter.js';

/**
 * The x-ratelimit-* headers of a limited route, encoded as bytes into one reused buffer and
 * written by one `writeHeader` call (uWS writes `name: value\r\n` as given, so the value carries
 * the other header lines). The numbers are written as digits directly, with no string made. Paired
 * benchmarks showed the text version (template strings of the numbers, three calls) costing about
 * 2.5 µs more per answer; which part of it (the text, or native code's handling of the strings)
 * was not measured apart (docs/internals/performance-changes.md, "Rate-limit headers as bytes").
 */

/** Longest block: 7 header lines, each under 70 bytes even with a number written by String(), fit well inside. */
const SCRATCH = Buffer.allocUnsafeSlow(1024);
/** Views of SCRATCH by length, made once each: no view object per answer. */
const VIEWS: Uint8Array[] = [];

const bytes = (s: string): Uint8Array => new Uint8Array(Buffer.from(s, 'latin1'));
const SCOPE_ROUTE = bytes('route');
const SCOPE_TENANT = bytes('tenant');
const LIMIT_INPUT = bytes('\r\nx-ratelimit-limit-input-tokens: ');
const REMAINING_INPUT = bytes('\r\nx-ratelimit-remaining-input-tokens: ');
const RESET_INPUT = bytes('\r\nx-ratelimit-reset-input-tokens: ');
const LIMIT_OUTPUT = bytes('\r\nx-ratelimit-limit-output-tokens: ');
const REMAINING_OUTPUT = bytes('\r\nx-ratelimit-remaining-output-tokens: ');
const RESET_OUTPUT = bytes('\r\nx-ratelimit-reset-output-tokens: ');

/** The name of the first header line; the value returned by encodeRateHeaders carries the rest. */
export const RATE_HEADERS_FIRST_NAME = 'x-ratelimit-scope';

/**
 * The value to write under RATE_HEADERS_FIRST_NAME: the scope, then for each direction with a
 * limit its limit, remaining and reset lines. A view of a shared buffer, valid until the next
 * call: write it at once (uWS copies it).
 */
export function encodeRateHeaders(d: Decision, scope: 'route' | 'tenant' | null): Uint8Array {
  let at = put(SCRATCH, 0, scope === 'tenant' ? SCOPE_TENANT : SCOPE_ROUTE);
  const i = d.input;
  if (i !== null) at = putDirection(at, i, LIMIT_INPUT, REMAINING_INPUT, RESET_INPUT);
  const o = d.output;
  if (o !== null) at = putDirection(at, o, LIMIT_OUTPUT, REMAINING_OUTPUT, RESET_OUTPUT);
  return VIEWS[at] ??= new Uint8Array(SCRATCH.buffer, SCRATCH.byteOffset, at);
}

function putDirection(at: number, s: LimitState, limit: Uint8Array, remaining: Uint8Array, reset: Uint8Array): number {
  at = put(SCRATCH, at, limit);
  at = putNumber(SCRATCH, at, s.limit);
  at = put(SCRATCH, at, remaining);
  at = putNumber(SCRATCH, at, s.remaining);
  at = put(SCRATCH, at, reset);
  return putNumber(SCRATCH, at, s.resetSeconds);
}

function put(buf: Buffer, at: number, b: Uint8Array): number {
  buf.set(b, at);
  return at + b.length;
}

/** Writes `n` as decimal digits at `at`; anything but a non-negative safe integer as String(n) would. */
export function putNumber(buf: Buffer, at: number, n: number): number {
  if (!(n >= 0 && n <= Number.MAX_SAFE_INTEGER && Math.floor(n) === n)) return at + buf.write(String(n), at, 'latin1');
  let digits = 1;
  for (let p = 10; p <= n; p *= 10) digits++;
  let v = n;
  for (let k = at + digits - 1; k >= at; k--) {
    const q = Math.floor(v / 10);
    buf[k] = 48 + (v - q * 10);
    v = q;
  }
  return at + digits;
}
