/**
 * The first bytes of images and audio as their formats lay them out, for the tests of the prompt's
 * image and audio estimate: only the header fields the router reads are meaningful, the rest is
 * filler (the router never decodes pixels or samples).
 */
import { Buffer } from 'node:buffer';

/** `n` as an unsigned integer of `bytes` bytes, little-endian. */
function le(n: number, bytes: number): Buffer {
  const b = Buffer.alloc(bytes);
  b.writeUIntLE(n, 0, bytes);
  return b;
}

/** `n` as an unsigned integer of `bytes` bytes, big-endian. */
function be(n: number, bytes: number): Buffer {
  const b = Buffer.alloc(bytes);
  b.writeUIntBE(n, 0, bytes);
  return b;
}

/** `n` filler bytes (a fixed pattern, not zeros: base64 of zeros could hide an offset error). */
export function filler(n: number): Buffer {
  const b = Buffer.allocUnsafe(n);
  for (let i = 0; i < n; i++) b[i] = (i * 131 + 7) & 0xff;
  return b;
}

export function png(width: number, height: number, rest = 64): Buffer {
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    be(13, 4), Buffer.from('IHDR'), be(width, 4), be(height, 4), Buffer.from([8, 2, 0, 0, 0]), be(0x12345678, 4),
    filler(rest),
  ]);
}

export function gif(width: number, height: number): Buffer {
  return Buffer.concat([Buffer.from('GIF89a'), le(width, 2), le(height, 2), filler(32)]);
}

/** A JPEG whose frame header (SOF0/1/2: `sof` 0xc0..0xc2) follows an APP0, an APP1 of `exifBytes` and a DQT segment. */
export function jpeg(width: number, height: number, sof = 0xc0, exifBytes = 2000): Buffer {
  const segment = (marker: number, body: Buffer): Buffer => Buffer.concat([Buffer.from([0xff, marker]), be(body.length + 2, 2), body]);
  return Buffer.concat([
    Buffer.from([0xff, 0xd8]),
    segment(0xe0, Buffer.concat([Buffer.from('JFIF\0'), Buffer.from([1, 1, 0]), be(72, 2), be(72, 2), Buffer.from([0, 0])])),
    segment(0xe1, Buffer.concat([Buffer.from('Exif\0\0'), filler(exifBytes)])),
    segment(0xdb, filler(65)),
    segment(sof, Buffer.concat([Buffer.from([8]), be(height, 2), be(width, 2), Buffer.from([3, 1, 0x22, 0, 2, 0x11, 1, 3, 0x11, 1])])),
    filler(64),
  ]);
}

function riff(form: string, chunks: Buffer[]): Buffer {
  const body = Buffer.concat(chunks);
  return Buffer.concat([Buffer.from('RIFF'), le(body.length + 4, 4), Buffer.from(form), body]);
}

function chunk(id: string, body: Buffer): Buffer {
  return Buffer.concat([Buffer.from(id), le(body.length, 4), body, body.length % 2 === 1 ? Buffer.from([0]) : Buffer.alloc(0)]);
}

/** A lossy WebP (VP8 key frame). */
export function webpVp8(width: number, height: number): Buffer {
  return riff('WEBP', [chunk('VP8 ', Buffer.concat([Buffer.from([0x50, 0x02, 0x00, 0x9d, 0x01, 0x2a]), le(width, 2), le(height, 2), filler(40)]))]);
}

/** A lossless WebP (VP8L). */
export function webpVp8l(width: number, height: number): Buffer {
  const bits = ((width - 1) & 0x3fff) | (((height - 1) & 0x3fff) << 14);
  return riff('WEBP', [chunk('VP8L', Buffer.concat([Buffer.from([0x2f]), le(bits >>> 0, 4), filler(40)]))]);
}

/** An extended WebP (VP8X, its canvas size). */
export function webpVp8x(width: number, height: number): Buffer {
  return riff('WEBP', [
    chunk('VP8X', Buffer.concat([Buffer.from([0x10, 0, 0, 0]), le(width - 1, 3), le(height - 1, 3)])),
    chunk('ALPH', filler(20)),
  ]);
}

/** A PCM WAV of `seconds` at `rate` Hz, 16-bit, `channels` channels; a LIST chunk before `data` when `list`. */
export function wav(seconds: number, rate = 16_000, channels = 1, list = false): Buffer {
  const blockAlign = 2 * channels;
  const byteRate = rate * blockAlign;
  const fmt = Buffer.concat([le(1, 2), le(channels, 2), le(rate, 4), le(byteRate, 4), le(blockAlign, 2), le(16, 2)]);
  const chunks = [chunk('fmt ', fmt)];
  if (list) chunks.push(chunk('LIST', Buffer.concat([Buffer.from('INFO'), filler(30)])));
  chunks.push(chunk('data', filler(Math.round(seconds * byteRate))));
  return riff('WAVE', chunks);
}

export function dataUrl(mime: string, bytes: Buffer): string {
  return `data:${mime};base64,${bytes.toString('base64')}`;
}

/**
 * A PDF of `bytes` bytes: its header line, then - when `linearizedPages` is given - the
 * linearization dictionary a "fast web view" PDF opens with (`/N` its page count), then filler.
 */
export function pdf(bytes: number, linearizedPages?: number): Buffer {
  const head = linearizedPages === undefined
    ? '%PDF-1.7\n%\xe2\xe3\xcf\xd3\n'
    : `%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj\n<< /Linearized 1 /L ${bytes} /H [ 1200 180 ] /O 4 /E 9000 /N ${linearizedPages} /T ${bytes - 400} >>\nendobj\n`;
  const start = Buffer.from(head, 'latin1');
  return Buffer.concat([start, filler(Math.max(0, bytes - start.length))]);
}
