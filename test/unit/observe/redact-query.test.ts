import { describe, expect, it } from 'vitest';
import { isSecretParam, redactPath } from '../../../src/observe/redact-query.js';

describe('redactPath', () => {
  it('returns the same string without a query or without credentials', () => {
    const p = '/v1/completions?n=2&keys=a&monkey=b';
    expect(redactPath(p)).toBe(p);
    expect(redactPath('/v1/completions')).toBe('/v1/completions');
  });

  it('redacts credential values only, keeping names, order and other parameters', () => {
    expect(redactPath('/v1/x?a=1&api_key=sk&KEY=k&x-api-key=h&hf_token=t&flag&empty=&b=2'))
      .toBe('/v1/x?a=1&api_key=[redacted]&KEY=[redacted]&x-api-key=[redacted]&hf_token=[redacted]&flag&empty=&b=2');
  });

  it('reads percent-encoded names; keeps undecodable names as sent', () => {
    expect(isSecretParam('api%5Fkey')).toBe(true);
    expect(isSecretParam('%E0%A4%A')).toBe(false);
    expect(redactPath('/v1/x?access%5Ftoken=abc')).toBe('/v1/x?access%5Ftoken=[redacted]');
  });
});
