/**
 * Bytes of base64 text decoded a few at a time: a header field of a large image or audio clip is
 * read without decoding the rest. Padding and the standard and URL-safe alphabets are accepted;
 * text with line breaks inside is not (its offsets shift: the header read is then wrong, and the
 * callers check what they read).
 */
import { Buffer } from 'node:buffer';

/** Bytes the base64 text `s` from `start` decodes to (no decoding: from its length and padding). */
export function base64ByteLength(s: string, start: number): number {
  let end = s.length;
  let pad = 0;
  while (end > start && pad < 2 && s.charCodeAt(end - 1) === 0x3d /* = */) {
    end--;
    pad++;
  }
  const chars = end - start;
  return chars <= 0 ? 0 : Math.floor((chars * 3) / 4);
}

/**
 * Bytes [offset, offset + n) of what the base64 text `s` from `start` decodes to; null when the
 * text ends before them. Decodes only the 4-character groups holding them.
 */
export function base64Bytes(s: string, start: number, offset: number, n: number): Buffer | null {
  const group = Math.floor(offset / 3);
  const from = start + group * 4;
  const to = start + Math.ceil((offset + n) / 3) * 4;
  if (from >= s.length) return null;
  const bytes = Buffer.from(s.substring(from, Math.min(to, s.length)), 'base64');
  const skip = offset - group * 3;
  return bytes.length < skip + n ? null : bytes.subarray(skip, skip + n);
}
