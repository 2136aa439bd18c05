import { describe, expect, it } from 'vitest';
import { hasV1Twice, misspeltEndpoint, misspeltEndpointError, v1TwiceError } from '../../../src/http/unknown-path.js';

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

describe('a misspelt inference endpoint', () => {
  it('is a path within two letters (or another case) of one of the router\'s endpoints, not the endpoint itself', () => {
    const meant: [string, string][] = [
      ['/v1/chat/completion', '/v1/chat/completions'], ['/v1/completion', '/v1/completions'], ['/v1/chat/completions/', '/v1/chat/completions'],
      ['/v1/Chat/Completions', '/v1/chat/completions'], ['/v1/embedding', '/v1/embeddings'], ['/v1/response', '/v1/responses'],
      ['/v1/chat/compeltions', '/v1/chat/completions'], ['/v1/chatcompletions', '/v1/chat/completions'],
    ];
    for (const [p, m] of meant) expect(misspeltEndpoint(p), p).toBe(m);
    // The endpoints themselves, and other model-server paths (forwarded as they are).
    for (const p of ['/v1/completions', '/v1/chat/completions', '/v1/embeddings', '/v1/responses', '/v1/rerank', '/v1/score',
      '/v1/audio/transcriptions', '/v1/tokenize', '/v1/responses/resp_123', '/v1/models', '/v1/foo']) expect(misspeltEndpoint(p), p).toBeNull();
  });

  it('is answered 404 unknown_endpoint naming the endpoint meant', () => {
    const err = misspeltEndpointError('/v1/chat/completion', '/v1/chat/completions');
    expect([err.status, err.type, err.code, err.message]).toEqual([404, 'invalid_request', 'unknown_endpoint', 'no such path: /v1/chat/completion; did you mean /v1/chat/completions?']);
  });
});
