/**
 * The page count a linearized ("fast web view") PDF states at its start: its first object is the
 * linearization dictionary, `<< /Linearized 1 … /N <pages> … >>`, within the file's first
 * kilobyte. Other PDFs state their page count only in the page tree, which may be anywhere in the
 * file: it is not looked for. The file is base64 text and only its first kilobyte is decoded.
 */
import { base64ByteLength, base64Bytes } from './base64-window.js';

/** Bytes of the file read: the linearization dictionary must lie within them. */
const HEAD_BYTES = 1024;
const PAGE_COUNT = /\/Linearized\b[^>]*?\/N\s+(\d{1,9})\b/;

/** The page count of the linearized PDF whose base64 text is `s` from `start`; 0 when not stated. */
export function linearizedPdfPages(s: string, start: number): number {
  const head = base64Bytes(s, start, 0, Math.min(HEAD_BYTES, base64ByteLength(s, start)));
  if (head === null || head.length < 5 || head.toString('latin1', 0, 5) !== '%PDF-') return 0;
  const m = PAGE_COUNT.exec(head.toString('latin1'));
  return m === null ? 0 : Number(m[1]);
}
