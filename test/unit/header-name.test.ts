import { describe, expect, it } from 'vitest';
import { isHeader, isUsualHeader } from '../../src/header-name.js';

describe('header names in any case', () => {
  it('isHeader: any case of the name, nothing else', () => {
    expect(isHeader('Content-Length', 'content-length')).toBe(true);
    expect(isHeader('CONTENT-LENGTH', 'content-length')).toBe(true);
    expect(isHeader('content-lengt', 'content-length')).toBe(false);
    expect(isHeader('content_length', 'content-length')).toBe(false);
    expect(isHeader('Connection', 'connection')).toBe(true);
    expect(isHeader('Connectio~', 'connection')).toBe(false);
  });

  it('isUsualHeader: the usual spellings and any other case of the name, nothing else', () => {
    for (const name of ['content-length', 'Content-Length', 'CONTENT-LENGTH', 'content-Length']) {
      expect(isUsualHeader(name, 'content-length', 'Content-Length'), name).toBe(true);
    }
    for (const name of ['content-lengt', 'Content-Lengths', 'content_length', '']) {
      expect(isUsualHeader(name, 'content-length', 'Content-Length'), name).toBe(false);
    }
  });
});
