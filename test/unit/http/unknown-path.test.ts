import { describe, expect, it } from 'vitest';
import { hasV1Twice, v1TwiceError } from '../../../src/http/unknown-path.js';

describe('a /v1 path with /v1 twice', () => {
  it('is a path whose first two segments are both v1', () => {
    for (const p of ['/v1/v1', '/v1/v1/', '/v1/v1/chat/completions', '/v1/v1/v1/models']) expect(hasV1Twice(p), p).toBe(true);
    for (const p of ['/v1/chat/completions', '/v1/v10/x', '/v1/v1x', '/v1/models/v1/v1', '/v1/', '/v1']) expect(hasV1Twice(p), p).toBe(false);
  });

  it('is answered 404 unknown_endpoint naming the path meant, every repeated prefix dropped', () => {
    const err = v1TwiceError('/v1/v1/v1/chat/completions');
    expect([err.status, err.type, err.code]).toEqual([404, 'invalid_request', 'unknown_endpoint']);
    expect(err.message).toBe('no such path: /v1/v1/v1/chat/completions; the path has /v1 twice: did you mean /v1/chat/completions? '
      + 'An OpenAI client\'s base URL ends in /v1 once (http://<router>:<port>/v1)');
    expect(v1TwiceError('/v1/v1').message).toMatch(/did you mean \/v1\?/);
  });
});
