import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ERROR_TYPES, RouterError, statusLine } from '../../src/errors.js';

describe('error registry', () => {
  it('gives each type its status; a RouterError defaults to it', () => {
    expect(new RouterError('rate_limit', 'x').status).toBe(429);
    expect(new RouterError('invalid_request', 'x', 413).status).toBe(413);
    expect(statusLine(429)).toBe('429 Too Many Requests');
    expect(statusLine(599)).toBe('599 Status');
  });

  it('docs/errors.md lists exactly the registry, with the same statuses', () => {
    const doc = readFileSync(new URL('../../docs/errors.md', import.meta.url), 'utf8');
    const rows = [...doc.matchAll(/^\| `([a-z_]+)` \| (\d{3})/gm)].map((m) => [m[1], Number(m[2])]);
    expect(rows).toEqual(Object.entries(ERROR_TYPES).map(([t, v]) => [t, v.status]));
  });
});
