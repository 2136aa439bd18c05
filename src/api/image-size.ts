/**
 * The width and height of an image from the first bytes of its file, without decoding it: PNG
 * (IHDR), GIF (logical screen), WebP (VP8, VP8L, VP8X) and JPEG (the first frame header, SOF0-15
 * but DHT, JPG and DAC: its segments are stepped over by their lengths, each read a few bytes at a
 * time). The file is base64 text (a data URL's payload) and only the bytes needed are decoded.
 */
import { base64ByteLength, base64Bytes } from './base64-window.js';
import type { Buffer } from 'node:buffer';

/** Where imageSize() puts what it read. */
export const imageSize = { width: 0, height: 0 };

/** Bytes read at once at the start: every format's size but JPEG's lies in them. */
const HEAD_BYTES = 30;
/** Most JPEG segments stepped over before its frame header (a file has about ten). */
const MAX_JPEG_SEGMENTS = 64;

/**
 * Reads the size of the image whose file is the base64 text `s` from `start` into `imageSize`;
 * false when the format is not one of the above or its header is cut or says 0.
 */
export function readImageSize(s: string, start: number): boolean {
  const head = base64Bytes(s, start, 0, HEAD_BYTES);
  if (head === null) return false;
  if (head[0] === 0xff && head[1] === 0xd8) return readJpegSize(s, start);
  let w = 0;
  let h = 0;
  if (head.readUInt32BE(0) === 0x89504e47 && head.readUInt32BE(4) === 0x0d0a1a0a && head.toString('latin1', 12, 16) === 'IHDR') {
    w = head.readUInt32BE(16);
    h = head.readUInt32BE(20);
  } else if (head.toString('latin1', 0, 6) === 'GIF87a' || head.toString('latin1', 0, 6) === 'GIF89a') {
    w = head.readUInt16LE(6);
    h = head.readUInt16LE(8);
  } else if (head.toString('latin1', 0, 4) === 'RIFF' && head.toString('latin1', 8, 12) === 'WEBP') {
    const chunk = head.toString('latin1', 12, 16);
    if (chunk === 'VP8 ' && head[23] === 0x9d && head[24] === 0x01 && head[25] === 0x2a) {
      w = head.readUInt16LE(26) & 0x3fff;
      h = head.readUInt16LE(28) & 0x3fff;
    } else if (chunk === 'VP8L' && head[20] === 0x2f) {
      const bits = head.readUInt32LE(21);
      w = (bits & 0x3fff) + 1;
      h = ((bits >>> 14) & 0x3fff) + 1;
    } else if (chunk === 'VP8X') {
      w = head.readUIntLE(24, 3) + 1;
      h = head.readUIntLE(27, 3) + 1;
    }
  }
  return found(w, h);
}

function found(w: number, h: number): boolean {
  if (w <= 0 || h <= 0) return false;
  imageSize.width = w;
  imageSize.height = h;
  return true;
}

/** A JPEG's size from its first frame header, stepping over the segments before it. */
function readJpegSize(s: string, start: number): boolean {
  const length = base64ByteLength(s, start);
  let at = 2;
  for (let i = 0; i < MAX_JPEG_SEGMENTS; i++) {
    const seg: Buffer | null = base64Bytes(s, start, at, 9);
    if (seg === null || seg[0] !== 0xff) return false;
    const marker = seg[1];
    if (marker === 0xff) { // fill byte before a marker
      at++;
      continue;
    }
    if (marker === 0x01 || (marker >= 0xd0 && marker <= 0xd7)) { // no length
      at += 2;
      continue;
    }
    if (marker === 0xd9 || marker === 0xda) return false; // end, or image data, before any frame header
    if (marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc) {
      return found(seg.readUInt16BE(7), seg.readUInt16BE(5));
    }
    const segmentLength = seg.readUInt16BE(2);
    if (segmentLength < 2) return false;
    at += 2 + segmentLength;
    if (at >= length) return false;
  }
  return false;
}
