import type { Decision, LimitState } from '../ratelimit/limiter.js';
import { putNumber } from '../decimal-digits.js';
import { Buffer } from 'node:buffer';

/**
 * The x-ratelimit-* headers of a limited route, encoded as bytes into one reused buffer and
 * written by one `writeHeader` call (uWS writes `name: value\r\n` as given, so the value carries
 * the other header lines). The numbers are written as digits directly, with no string made. Paired
 * benchmarks showed the text version (template strings of the numbers, three calls) costing about
 * 2.5 µs more per answer; which part of it (the text, or native code's handling of the strings)
 * was not measured apart (docs/internals/performance-changes.md, "Rate-limit headers as bytes").
 * The text that depends only on the scope and the limits (the limit lines) is made once per limit;
 * numbers are written in int32 arithmetic (a block of two 10-digit limits: 254 → 130 ns, the
 * same section).
 */

/** Longest block: 7 header lines, each under 70 bytes even with a number written by String(), fit well inside. */
const SCRATCH = Buffer.allocUnsafeSlow(1024);
/** Views of SCRATCH by length, made once each: no view object per answer. */
const VIEWS: Uint8Array[] = [];

const bytes = (s: string): Uint8Array => new Uint8Array(Buffer.from(s, 'latin1'));
const RESET_INPUT = bytes('\r\nx-ratelimit-reset-input-tokens: ');
const RESET_OUTPUT = bytes('\r\nx-ratelimit-reset-output-tokens: ');

/**
 * The fixed text of one limit's block (scope and limits), cut where the numbers that change go:
 * `head` (the scope, then the input's limit line and its remaining line's name) n [reset-name] n
 * `out` (the output's limit line and its remaining line's name) n [reset-name] n. A direction
 * without a limit has no text and no numbers.
 */
class Template {
  constructor(
    readonly scope: 'route' | 'tenant',
    readonly inLimit: number,
    readonly outLimit: number,
    readonly head: Uint8Array,
    readonly out: Uint8Array | null,
  ) {}
}

/** The templates of the last few limits seen (a route's and a tenant's alternate); most recent first. */
const TEMPLATES: Template[] = [];
const MAX_TEMPLATES = 8;
const NONE = -1;

function templateOf(scope: 'route' | 'tenant', i: LimitState | null, o: LimitState | null): Template {
  const inLimit = i === null ? NONE : i.limit;
  const outLimit = o === null ? NONE : o.limit;
  for (let k = 0; k < TEMPLATES.length; k++) {
    const t = TEMPLATES[k];
    if (t.inLimit === inLimit && t.outLimit === outLimit && t.scope === scope) return t;
  }
  const input = i === null ? '' : `\r\nx-ratelimit-limit-input-tokens: ${inLimit}\r\nx-ratelimit-remaining-input-tokens: `;
  const output = o === null ? null : bytes(`\r\nx-ratelimit-limit-output-tokens: ${outLimit}\r\nx-ratelimit-remaining-output-tokens: `);
  const t = new Template(scope, inLimit, outLimit, bytes(scope + input), output);
  TEMPLATES.unshift(t);
  if (TEMPLATES.length > MAX_TEMPLATES) TEMPLATES.pop();
  return t;
}

/** The name of the first header line; the value returned by encodeRateHeaders carries the rest. */
export const RATE_HEADERS_FIRST_NAME = 'x-ratelimit-scope';

/**
 * The value to write under RATE_HEADERS_FIRST_NAME: the scope, then for each direction with a
 * limit its limit, remaining and reset lines. A view of a shared buffer, valid until the next
 * call: write it at once (uWS copies it). The text that depends only on the scope and the limits
 * is made once per limit (a few are kept); per answer only the remaining and reset numbers are
 * written as digits.
 */
export function encodeRateHeaders(d: Decision, scope: 'route' | 'tenant' | null): Uint8Array {
  const i = d.input;
  const o = d.output;
  const t = templateOf(scope === 'tenant' ? 'tenant' : 'route', i, o);
  let at = put(SCRATCH, 0, t.head);
  if (i !== null) {
    at = putNumber(SCRATCH, at, i.remaining);
    at = put(SCRATCH, at, RESET_INPUT);
    at = putNumber(SCRATCH, at, i.resetSeconds);
  }
  if (o !== null) {
    at = put(SCRATCH, at, t.out!);
    at = putNumber(SCRATCH, at, o.remaining);
    at = put(SCRATCH, at, RESET_OUTPUT);
    at = putNumber(SCRATCH, at, o.resetSeconds);
  }
  return VIEWS[at] ??= new Uint8Array(SCRATCH.buffer, SCRATCH.byteOffset, at);
}

function put(buf: Buffer, at: number, b: Uint8Array): number {
  buf.set(b, at);
  return at + b.length;
}
