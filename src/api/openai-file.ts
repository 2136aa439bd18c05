/**
 * What a file part of an OpenAI-style prompt costs, estimated before the request is forwarded
 * (docs/tokens.md#images-and-audio): Responses `input_file` (`file_data`, `file_id`, `file_url`)
 * and chat `file` (`file: {file_data, file_id}`). OpenAI gives the model both the text it extracts
 * from each page of a PDF and an image of the page, so a file is counted as pages at PAGE_TOKENS
 * each: the page count a linearized PDF states in its first kilobyte (at least one page per
 * MAX_BYTES_PER_PAGE of the file: the statement is not checked), else one page per
 * BYTES_PER_PAGE of the file's size; at least one page and at most MAX_PAGES (OpenAI's limit per
 * request). A file whose data is not in the request (a file id or URL) counts UNKNOWN_PAGES.
 */
import { base64ByteLength } from './base64-window.js';
import { base64DataStart } from './data-url.js';
import { IMAGE_UNKNOWN_SIZE_TOKENS } from './image-tokens.js';
import { linearizedPdfPages } from './pdf-page-count.js';

/** A page's image (its size not known: 765) and its text (about 375 words of prose: 500 tokens). */
export const PAGE_TOKENS = IMAGE_UNKNOWN_SIZE_TOKENS + 500;
/** A page of a PDF mixing text, fonts and a picture; a page of text alone is smaller, a scan larger. */
export const BYTES_PER_PAGE = 32 * 1024;
/** The most a page weighs (scanned at print resolution): a stated page count is at least the file's size over this. */
export const MAX_BYTES_PER_PAGE = 1024 * 1024;
export const MAX_PAGES = 100;
export const UNKNOWN_PAGES = 10;

/** A file given as `data` (a base64 `data:` URL or bare base64) or, when null, by reference only. */
export function fileTokens(data: string | null): number {
  if (data === null) return UNKNOWN_PAGES * PAGE_TOKENS;
  let start = 0;
  if (data.startsWith('data:')) {
    start = base64DataStart(data);
    if (start < 0) return UNKNOWN_PAGES * PAGE_TOKENS;
  }
  const bytes = base64ByteLength(data, start);
  const stated = linearizedPdfPages(data, start);
  // A stated count is the file's word, the page tree what the model reads: a large file stating few pages counts by its size.
  const pages = stated === 0 ? Math.ceil(bytes / BYTES_PER_PAGE) : Math.max(stated, Math.ceil(bytes / MAX_BYTES_PER_PAGE));
  return Math.min(Math.max(pages, 1), MAX_PAGES) * PAGE_TOKENS;
}
