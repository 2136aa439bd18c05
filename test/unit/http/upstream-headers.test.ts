import { describe, expect, it } from 'vitest';
import { connectionNames, dropNamed, forwardRequestHeader, forwardResponseHeader, isRateLimitHeader } from '../../../src/http/upstream-headers.js';

describe('upstream headers', () => {
  it('reads the names a Connection header lists, lower-cased, without its options', () => {
    expect(connectionNames(undefined)).toEqual([]);
    expect(connectionNames('keep-alive')).toEqual([]);
    expect(connectionNames('Keep-Alive, X-Private , ,Upgrade')).toEqual(['x-private', 'upgrade']);
    expect(connectionNames(['close', 'x-a'])).toEqual(['x-a']);
  });

  it('drops named pairs from a flat header list, keeping the order of the rest', () => {
    const flat = ['a', '1', 'x-private', '2', 'b', '3', 'x-private', '4', 'content-encoding', 'gzip'];
    dropNamed(flat, ['x-private', 'content-encoding']);
    expect(flat).toEqual(['a', '1', 'b', '3']);
  });

  it('never forwards the client content-type or te; never copies te back', () => {
    expect(forwardRequestHeader('content-type')).toBe(false);
    expect(forwardRequestHeader('te')).toBe(false);
    expect(forwardRequestHeader('x-custom')).toBe(true);
    expect(forwardResponseHeader('te')).toBe(false);
    expect(forwardResponseHeader('content-type')).toBe(true);
  });

  it('recognises x-ratelimit-* names only', () => {
    expect(isRateLimitHeader('x-ratelimit-remaining-input-tokens')).toBe(true);
    expect(isRateLimitHeader('x-ratelimit-')).toBe(false);
    expect(isRateLimitHeader('x-ratelimits')).toBe(false);
  });
});
