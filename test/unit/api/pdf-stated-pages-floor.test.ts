import { describe, expect, it } from 'vitest';
import { fileTokens, MAX_PAGES, PAGE_TOKENS } from '../../../src/api/openai-file.js';
import { dataUrl, pdf } from '../../helpers/media-fixtures.js';

/**
 * The page count a linearized PDF states (`/N`) is the file's word: the model reads its page tree.
 * A large file stating 1 page must not cost a page: at least one page per MiB of the file (a page
 * scanned at print resolution weighs less).
 */

const MIB = 1024 * 1024;

describe('fileTokens of a linearized PDF whose stated page count is far below its size', () => {
  it('a 24 MiB file stating 1 page counts 24 pages', () => {
    expect(fileTokens(dataUrl('application/pdf', pdf(24 * MIB, 1)))).toBe(24 * PAGE_TOKENS);
  });

  it('a file stating more pages than its MiB: the stated count', () => {
    expect(fileTokens(dataUrl('application/pdf', pdf(4 * MIB, 7)))).toBe(7 * PAGE_TOKENS);
    expect(fileTokens(dataUrl('application/pdf', pdf(40_000, 2)))).toBe(2 * PAGE_TOKENS);
  });

  it('at most MAX_PAGES, whatever the size', () => {
    expect(fileTokens(dataUrl('application/pdf', pdf(120 * MIB, 1)))).toBe(MAX_PAGES * PAGE_TOKENS);
  });
});
