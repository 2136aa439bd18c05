import { describe, expect, it } from 'vitest';
import { isPostEndpoint, knownEndpointPath } from '../../../src/api/api-registry.js';

describe('api registry', () => {
  it('gives each POST endpoint its path, equal to the one received, and null for any other path', () => {
    for (const path of ['/v1/completions', '/v1/chat/completions', '/v1/embeddings', '/v1/responses']) {
      const fresh = [...path].join(''); // a string made at run time, as uWS's are
      expect(isPostEndpoint(fresh)).toBe(true);
      expect(knownEndpointPath(fresh)).toBe(path);
    }
    for (const path of ['/v1/models', '/v1/completion', '/v1/completions/', '', '/V1/completions']) {
      expect(isPostEndpoint(path)).toBe(false);
      expect(knownEndpointPath(path)).toBeNull();
    }
  });
});
