import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ERROR_CODES, ERROR_TYPES, RouterError, statusLine, statusLineBytes } from '../../src/errors.js';
import { acceptsJson, errorBody } from '../../src/http/error-body.js';
import { builtFile } from '../helpers/built-file.js';

const doc = readFileSync(new URL('../../docs/errors.md', import.meta.url), 'utf8');

describe('error registry', () => {
  it('gives each type its status and code; a RouterError defaults to them', () => {
    expect(new RouterError('rate_limit', 'x').status).toBe(429);
    expect(new RouterError('rate_limit', 'x').code).toBe('input_tokens_exceeded');
    expect(new RouterError('invalid_request', 'x', 413, null, 'request_too_large').code).toBe('request_too_large');
    expect(new RouterError('invalid_request', 'x', 413).status).toBe(413);
    expect(statusLine(429)).toBe('429 Too Many Requests');
    expect(statusLine(304)).toBe('304 Not Modified');
    expect(statusLine(422)).toBe('422 Unprocessable Entity');
    expect(statusLine(599)).toBe('599 Status');
  });

  it('a RouterError is an Error without a stack trace (its first line only), and leaves the stack trace limit as it was', () => {
    const before = Error.stackTraceLimit;
    const e = new RouterError('rate_limit', 'input token rate limit exceeded');
    expect(e).toBeInstanceOf(Error);
    expect(e.message).toBe('input token rate limit exceeded');
    expect(e.stack).toBe('Error: input token rate limit exceeded');
    expect(Error.stackTraceLimit).toBe(before);
    // Other errors keep their frames.
    expect(new Error('x').stack!.split('\n').length).toBeGreaterThan(1);
    Error.stackTraceLimit = 3;
    try {
      new RouterError('model_not_found', 'y');
      expect(Error.stackTraceLimit).toBe(3);
    } finally {
      Error.stackTraceLimit = before;
    }
  });

  it('under node --frozen-intrinsics, where the stack trace limit cannot be set, a RouterError is made all the same (with a stack)', () => {
    const errors = builtFile('errors.js', 'src/errors.ts');
    const script = `const { RouterError } = await import(${JSON.stringify(errors)}); const e = new RouterError('rate_limit', 'x'); console.log(e.status, e.stack.split('\\n').length > 1);`;
    const r = spawnSync(process.execPath, ['--frozen-intrinsics', '--no-warnings', '--input-type=module', '-e', script], { encoding: 'utf8', timeout: 20_000 });
    expect(r.stderr).toBe('');
    expect(r.stdout.trim()).toBe('429 true');
  });

  it('gives status lines as bytes, the same object for a code each time', () => {
    const line = statusLineBytes(429);
    expect(Buffer.from(line).toString('latin1')).toBe('429 Too Many Requests');
    expect(statusLineBytes(429)).toBe(line);
    expect(Buffer.from(statusLineBytes(599)).toString('latin1')).toBe('599 Status');
    expect(Buffer.from(statusLineBytes(200)).toString('latin1')).toBe('200 OK');
  });

  it("each type's default code is a code of that type with the type's status", () => {
    for (const [type, t] of Object.entries(ERROR_TYPES)) {
      expect(ERROR_CODES[t.code], type).toEqual({ type, status: t.status });
    }
  });

  it('docs/errors.md lists exactly the registry, with the same statuses', () => {
    const rows = [...doc.matchAll(/^\| `([a-z_]+)` \| (\d{3})/gm)].map((m) => [m[1], Number(m[2])]);
    expect(rows).toEqual(Object.entries(ERROR_TYPES).map(([t, v]) => [t, v.status]));
  });

  it('docs/errors.md lists exactly the codes, with their types and statuses', () => {
    const rows = [...doc.matchAll(/^\| `([a-z_]+)` \| `([a-z_]+)` \| (\d{3})/gm)].map((m) => [m[1], m[2], Number(m[3])]);
    expect(rows).toEqual(Object.entries(ERROR_CODES).map(([c, v]) => [c, v.type, v.status]));
  });
});

describe('error bodies', () => {
  it('plain: exactly the message', () => {
    expect(errorBody(new RouterError('rate_limit', 'input token rate limit exceeded', 429), false)).toBe('input token rate limit exceeded');
  });

  it('JSON: the OpenAI shape, message escaped, type and code from the error', () => {
    const err = new RouterError('model_not_found', 'model "a\\b\n\u0001é" is not served by any route');
    const body = errorBody(err, true);
    expect(JSON.parse(body)).toEqual({ error: { message: err.message, type: 'model_not_found', param: null, code: 'model_not_found' } });
    const out = new RouterError('rate_limit', 'output token rate limit exceeded', 429, null, 'output_tokens_exceeded');
    expect(errorBody(out, true)).toBe('{"error":{"message":"output token rate limit exceeded","type":"rate_limit","param":null,"code":"output_tokens_exceeded"}}');
  });

  it('every code gives a parseable body', () => {
    for (const [code, v] of Object.entries(ERROR_CODES)) {
      const parsed = JSON.parse(errorBody(new RouterError(v.type, 'm', v.status, null, code as keyof typeof ERROR_CODES), true));
      expect(parsed.error).toEqual({ message: 'm', type: v.type, param: null, code });
    }
  });
});

describe('Accept negotiation', () => {
  it('JSON when Accept names application/json', () => {
    for (const a of ['application/json', 'Application/JSON', 'text/plain, application/json', 'application/json; charset=utf-8', 'text/html,application/json;q=0.9', '*/*, application/json']) {
      expect(acceptsJson(a), a).toBe(true);
    }
  });
  it('text otherwise', () => {
    for (const a of ['', '*/*', 'text/plain', 'application/*', 'application/json-seq', 'application/jsonx', 'xapplication/json', 'text/event-stream']) {
      expect(acceptsJson(a), a).toBe(false);
    }
  });
});
