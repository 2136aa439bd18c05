import { describe, expect, it } from 'vitest';
import { encodeRateHeaders, RATE_HEADERS_FIRST_NAME } from '../../../src/http/rate-headers.js';
import { writeRateHeaders } from '../../../src/http/exchange.js';
import type { HttpResponse } from 'uWebSockets.js';
import { putNumber } from '../../../src/decimal-digits.js';
import type { Decision, LimitState } from '../../../src/ratelimit/limiter.js';

function decision(input: LimitState | null, output: LimitState | null): Decision {
  return { allowed: true, rejectedBy: null, retryAfterSeconds: 1, input, output };
}

/** The header lines uWS writes for writeHeader(name, value): `name: value\r\n`. */
function lines(d: Decision, scope: 'route' | 'tenant' | null): string[] {
  return `${RATE_HEADERS_FIRST_NAME}: ${Buffer.from(encodeRateHeaders(d, scope)).toString('latin1')}\r\n`.split('\r\n').slice(0, -1);
}

describe('rate-limit headers as bytes', () => {
  it('writes the scope, then limit, remaining and reset of each limited direction, as the text version did', () => {
    expect(lines(decision({ limit: 4294967295, remaining: 4294967291, resetSeconds: 1 }, { limit: 100000, remaining: 0, resetSeconds: 59 }), 'route')).toEqual([
      'x-ratelimit-scope: route',
      'x-ratelimit-limit-input-tokens: 4294967295',
      'x-ratelimit-remaining-input-tokens: 4294967291',
      'x-ratelimit-reset-input-tokens: 1',
      'x-ratelimit-limit-output-tokens: 100000',
      'x-ratelimit-remaining-output-tokens: 0',
      'x-ratelimit-reset-output-tokens: 59',
    ]);
  });

  it('leaves out a direction without a limit, and says the tenant scope (no scope: route)', () => {
    expect(lines(decision(null, { limit: 10, remaining: 3, resetSeconds: 86400 }), 'tenant')).toEqual([
      'x-ratelimit-scope: tenant',
      'x-ratelimit-limit-output-tokens: 10',
      'x-ratelimit-remaining-output-tokens: 3',
      'x-ratelimit-reset-output-tokens: 86400',
    ]);
    expect(lines(decision({ limit: 7, remaining: 7, resetSeconds: 2 }, null), null)).toEqual([
      'x-ratelimit-scope: route',
      'x-ratelimit-limit-input-tokens: 7',
      'x-ratelimit-remaining-input-tokens: 7',
      'x-ratelimit-reset-input-tokens: 2',
    ]);
  });

  it('writes every number as String() does: powers of ten and their neighbours up to 2^53, and non-integers', () => {
    const buf = Buffer.alloc(64);
    const values = [0, -0, 1, 9, Number.MAX_SAFE_INTEGER, 2 ** 31, 2 ** 32 - 1, -1, 1.5, 9.5, 99.9, 0.25, Number.NaN, 2 ** 60];
    for (let n = 0; n <= 120; n++) values.push(n); // the one- and two-digit path, and past it
    for (let p = 1; p <= 1e16; p *= 10) values.push(p - 1, p, p + 1);
    for (const n of values) {
      const end = putNumber(buf, 3, n);
      expect(buf.toString('latin1', 3, end), String(n)).toBe(String(n));
    }
  });

  it('each call gives the current decision (the buffer is reused)', () => {
    const a = Buffer.from(encodeRateHeaders(decision({ limit: 5, remaining: 4, resetSeconds: 1 }, null), 'route')).toString('latin1');
    const b = Buffer.from(encodeRateHeaders(decision({ limit: 50, remaining: 40, resetSeconds: 10 }, null), 'route')).toString('latin1');
    expect(a).toContain('remaining-input-tokens: 4\r\n');
    expect(b).toContain('remaining-input-tokens: 40\r\n');
  });
});

describe('rate-limit header templates', () => {
  it('the fixed text is kept per scope and limits: alternating limits, a changed limit and more limits than are kept all come out right', () => {
    const route = (limit: number, remaining: number): Decision => decision({ limit, remaining, resetSeconds: 1 }, { limit: limit * 2, remaining: remaining * 2, resetSeconds: 1 });
    const tenant = (remaining: number): Decision => decision(null, { limit: 500, remaining, resetSeconds: 30 });
    const expected = (d: Decision, scope: 'route' | 'tenant'): string[] => [
      `x-ratelimit-scope: ${scope}`,
      ...(d.input === null ? [] : [`x-ratelimit-limit-input-tokens: ${d.input.limit}`, `x-ratelimit-remaining-input-tokens: ${d.input.remaining}`, `x-ratelimit-reset-input-tokens: ${d.input.resetSeconds}`]),
      ...(d.output === null ? [] : [`x-ratelimit-limit-output-tokens: ${d.output.limit}`, `x-ratelimit-remaining-output-tokens: ${d.output.remaining}`, `x-ratelimit-reset-output-tokens: ${d.output.resetSeconds}`]),
    ];
    for (let k = 0; k < 3; k++) {
      for (const [d, scope] of [[route(1000, 999 - k), 'route'], [tenant(400 - k), 'tenant'], [route(1000, 998), 'tenant'], [route(2000, 5), 'route']] as const) {
        expect(lines(d, scope)).toEqual(expected(d, scope));
      }
    }
    for (let limit = 1; limit <= 20; limit++) expect(lines(route(limit, 0), 'route')).toEqual(expected(route(limit, 0), 'route'));
    expect(lines(route(1, 1), 'route')).toEqual(expected(route(1, 1), 'route'));
    expect(lines(tenant(7), 'tenant')).toEqual(expected(tenant(7), 'tenant'));
  });
});

describe('rate-limit header views', () => {
  it('a view of a length seen before is reused, and shows the bytes of the latest call', () => {
    const d = (remaining: number): Decision => decision({ limit: 90, remaining, resetSeconds: 1 }, null);
    const first = encodeRateHeaders(d(10), 'route');
    const second = encodeRateHeaders(d(20), 'route');
    expect(second).toBe(first); // same length: the same view object
    expect(Buffer.from(second).toString('latin1')).toContain('remaining-input-tokens: 20\r\n');
    expect(encodeRateHeaders(d(5), 'route').length).toBe(first.length - 1);
  });

  it('writes nothing for a decision without limit state (open failure mode: the counts are unknown), the scope included', () => {
    const written: string[] = [];
    const res = { writeHeader: (name: string) => { written.push(name); return res; } } as unknown as HttpResponse;
    writeRateHeaders(res, decision(null, null), 'route');
    expect(written).toEqual([]);
    writeRateHeaders(res, decision(null, { limit: 10, remaining: 3, resetSeconds: 5 }), 'tenant');
    expect(written).toEqual([RATE_HEADERS_FIRST_NAME]);
  });
});
