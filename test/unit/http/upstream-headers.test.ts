import { describe, expect, it } from 'vitest';
import { connectionNames, connectionNamesIn, dropNamed, headerBlock, forwardRequestHeader, forwardResponseHeader, isRateLimitHeader, responseHeaderName } from '../../../src/http/upstream-headers.js';

describe('upstream headers', () => {
  it('reads the names a Connection header lists, lower-cased, without its options', () => {
    expect(connectionNames(undefined)).toEqual([]);
    expect(connectionNames('keep-alive')).toEqual([]);
    expect(connectionNames('Keep-Alive, X-Private , ,Upgrade')).toEqual(['x-private', 'upgrade']);
    expect(connectionNames(['close', 'x-a'])).toEqual(['x-a']);
  });

  it('reads the names of every Connection header of a pod\'s flat list, in any case, and of no other header', () => {
    for (const spelling of ['connection', 'Connection', 'CONNECTION', 'cOnNeCtIoN']) {
      expect(connectionNamesIn(['x-a', '1', spelling, 'X-Trace, close', 'x-b', '2', spelling, 'x-c']), spelling).toEqual(['x-trace', 'x-c']);
    }
    // Names of its length that are not it, one of them starting with C.
    expect(connectionNamesIn(['x-mock-pod', 'x-trace', 'Connectio~', 'x-trace', 'connection2', 'x-trace'])).toEqual([]);
    expect(connectionNamesIn(['connection', 'close'])).toEqual([]);
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

  it('names every hop-by-hop request header as dropped, and nothing else', () => {
    for (const name of ['host', 'connection', 'keep-alive', 'transfer-encoding', 'content-length', 'te', 'trailer', 'upgrade',
      'proxy-authorization', 'proxy-connection', 'expect', 'x-request-id', 'content-type']) expect(forwardRequestHeader(name)).toBe(false);
    for (const name of ['authorization', 'accept', 'x-tenant', 'tee', 't', 'content-types', 'x-request-ids', '']) expect(forwardRequestHeader(name)).toBe(true);
  });

  it('gives a response header its lower-case name, or null for the dropped ones, in any case it arrives in', () => {
    const dropped = ['connection', 'keep-alive', 'transfer-encoding', 'content-length', 'date', 'te', 'trailer', 'upgrade',
      'proxy-connection', 'x-request-id', 'uwebsockets'];
    const upper = (s: string): string => s.toUpperCase();
    const capital = (s: string): string => s.replace(/(^|-)([a-z])/g, (_m, d: string, c: string) => d + c.toUpperCase());
    const odd = (s: string): string => [...s].map((c, i) => (i % 2 === 1 ? c.toUpperCase() : c)).join('');
    for (const name of dropped) {
      for (const form of [name, upper(name), capital(name), odd(name)]) expect(responseHeaderName(form), form).toBeNull();
      expect(forwardResponseHeader(name)).toBe(false);
    }
    expect(responseHeaderName('uWebSockets')).toBeNull();
    expect(responseHeaderName('X-Request-ID')).toBeNull();
    for (const name of ['content-type', 'server', 'cache-control', 'vary', 'content-encoding', 'x-mock-pod', 'x-ratelimit-limit-requests', 'dates', 'te2', '']) {
      for (const form of [name, upper(name), capital(name), odd(name)]) expect(responseHeaderName(form), form).toBe(name);
      expect(forwardResponseHeader(name)).toBe(true);
    }
  });

  it('recognises x-ratelimit-* names only', () => {
    expect(isRateLimitHeader('x-ratelimit-remaining-input-tokens')).toBe(true);
    expect(isRateLimitHeader('x-ratelimit-')).toBe(false);
    expect(isRateLimitHeader('x-ratelimits')).toBe(false);
  });
});

describe('headerBlock', () => {
  it('keeps ASCII header lines as the string, and gives text with characters above 0x7f as its latin1 bytes', () => {
    const ascii = 'application/json\r\nx-pod: a\r\nx-request-id: 1';
    expect(headerBlock(ascii)).toBe(ascii);
    expect(headerBlock('')).toBe('');
    // A value read as latin1 from the bytes of 'café' in UTF-8: written back as those bytes.
    const read = Buffer.from('x\r\nx-note: café', 'utf8').toString('latin1');
    const out = headerBlock(read);
    expect(Buffer.isBuffer(out)).toBe(true);
    expect((out as Buffer).toString('utf8')).toBe('x\r\nx-note: café');
    expect(headerBlock('\x7f')).toBe('\x7f');
    expect(Buffer.isBuffer(headerBlock('\x80'))).toBe(true);
  });
});
