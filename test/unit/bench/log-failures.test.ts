import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { addFailures, failuresInLog, failuresNote } from '../../../bench/log-failures.js';

const record = (status: number, error?: { type: string; message: string }): string =>
  `{"timestamp":"2026-12-01T21:00:00.000Z","method":"POST","path":"/v1/completions","protocol":"HTTP/1.1","status_code":${status},${error === undefined ? '' : `"error":${JSON.stringify(error)},`}"model_name":"sf-model","input_tokens":4,"output_tokens":0}\n`;

describe('non-2xx answers named by the access log', () => {
  it('counts each status and error, the backend\'s own answers apart, and skips 2xx', () => {
    const file = join(mkdtempSync(join(tmpdir(), 'log-failures-')), 'access.log');
    const unavailable = { type: 'upstream_error', message: 'rate limiter unavailable: "the store" timed out \\ 50 ms' };
    writeFileSync(file, [
      record(200), record(200),
      record(429, { type: 'rate_limit', message: 'input token rate limit exceeded' }),
      record(503, unavailable), record(503, unavailable),
      record(500), record(201),
    ].join(''));
    const seen = failuresInLog(file);
    expect(Object.fromEntries(seen)).toEqual({
      '429 rate_limit: input token rate limit exceeded': 1,
      [`503 upstream_error: ${unavailable.message}`]: 2,
      '500 from the backend': 1,
    });
    const total = new Map<string, number>([['500 from the backend', 3]]);
    addFailures(total, seen);
    expect(total.get('500 from the backend')).toBe(4);
    expect(failuresNote('router-x', total)).toBe(
      `non-2xx answers (router-x), as its access log names them, over all its runs: 4 × 500 from the backend; 2 × 503 upstream_error: ${unavailable.message}; 1 × 429 rate_limit: input token rate limit exceeded`);
  });
});
