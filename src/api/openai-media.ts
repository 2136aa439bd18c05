/**
 * What an image or audio part of an OpenAI-style prompt costs, estimated before the request is
 * forwarded (docs/tokens.md#images-and-audio); the model server's reported usage replaces the
 * request's whole count afterwards.
 *
 * - Images (chat `image_url`: `{url, detail}` or a URL string; Responses `input_image`:
 *   `image_url` or `file_id`, and `detail`): OpenAI's published rule for its GPT-4o-family models.
 *   `detail: "low"` costs 85; otherwise the image is scaled to fit 2048 x 2048, then so that its
 *   shortest side is at most 768, and costs 85 + 170 per 512-px tile. The size is read from the
 *   header of a base64 `data:` URL; when it is not known (a remote URL, a file id, a format not
 *   read, a corrupt header) the image costs what a 1024 x 1024 one does: 765.
 * - Audio (`input_audio`: `{data, format}`, base64): 10 tokens a second (OpenAI's rate for input
 *   audio: one token per 100 ms), rounded up; the duration from a WAV header, otherwise from the
 *   data's size at 16 000 bytes a second (MP3 at 128 kbit/s).
 *
 * Parts of another shape cost 0 (they are skipped, as before). Never throws.
 */
import { base64ByteLength } from './base64-window.js';
import { imageSize, readImageSize } from './image-size.js';
import { readWavData, wavData } from './wav-duration.js';

export const IMAGE_BASE_TOKENS = 85;
export const IMAGE_TILE_TOKENS = 170;
/** A 1024 x 1024 image at high detail: 4 tiles. */
export const IMAGE_UNKNOWN_SIZE_TOKENS = IMAGE_BASE_TOKENS + 4 * IMAGE_TILE_TOKENS;
export const AUDIO_TOKENS_PER_SECOND = 10;
export const AUDIO_BYTES_PER_SECOND = 16_000;

const IMAGE_FIT = 2048;
const IMAGE_SHORT_SIDE = 768;
const TILE = 512;

/** Tokens of one content part that is an image or audio; 0 for any other part. */
export function mediaPartTokens(part: object): number {
  const type = (part as { type?: unknown }).type;
  if (type === 'image_url') {
    const ref = (part as { image_url?: unknown }).image_url;
    if (typeof ref === 'string') return imageTokens(ref, undefined);
    if (ref === null || typeof ref !== 'object') return 0;
    const url = (ref as { url?: unknown }).url;
    return typeof url === 'string' ? imageTokens(url, (ref as { detail?: unknown }).detail) : 0;
  }
  if (type === 'input_image') {
    const { image_url: url, file_id: file, detail } = part as { image_url?: unknown; file_id?: unknown; detail?: unknown };
    if (typeof url === 'string') return imageTokens(url, detail);
    return typeof file === 'string' ? imageTokens('', detail) : 0;
  }
  if (type === 'input_audio') {
    const audio = (part as { input_audio?: unknown }).input_audio;
    if (audio === null || typeof audio !== 'object') return 0;
    const data = (audio as { data?: unknown }).data;
    return typeof data === 'string' ? audioTokens(data) : 0;
  }
  return 0;
}

/** An image at `url` (a data URL, any other URL, or '' when unknown) at `detail`. */
function imageTokens(url: string, detail: unknown): number {
  if (detail === 'low') return IMAGE_BASE_TOKENS;
  const start = base64DataStart(url);
  if (start < 0 || !readImageSize(url, start)) return IMAGE_UNKNOWN_SIZE_TOKENS;
  return highDetailTokens(imageSize.width, imageSize.height);
}

/** Scaled to fit IMAGE_FIT square, then to a shortest side of at most IMAGE_SHORT_SIDE; 85 + 170 per tile. */
export function highDetailTokens(width: number, height: number): number {
  let w = width;
  let h = height;
  if (w > IMAGE_FIT || h > IMAGE_FIT) {
    const scale = IMAGE_FIT / Math.max(w, h);
    w = Math.max(1, Math.floor(w * scale));
    h = Math.max(1, Math.floor(h * scale));
  }
  const short = Math.min(w, h);
  if (short > IMAGE_SHORT_SIDE) {
    const scale = IMAGE_SHORT_SIDE / short;
    w = Math.max(1, Math.floor(w * scale));
    h = Math.max(1, Math.floor(h * scale));
  }
  return IMAGE_BASE_TOKENS + IMAGE_TILE_TOKENS * Math.ceil(w / TILE) * Math.ceil(h / TILE);
}

/** Where the base64 payload of a `data:…;base64,` URL starts; -1 for any other URL. */
function base64DataStart(url: string): number {
  if (!url.startsWith('data:')) return -1;
  const comma = url.indexOf(',', 5);
  return comma > 0 && url.startsWith(';base64', comma - 7) ? comma + 1 : -1;
}

/** Base64 audio data: 10 tokens a second of its duration, from a WAV header or its size. */
function audioTokens(data: string): number {
  if (readWavData(data, 0)) return Math.ceil((wavData.bytes * AUDIO_TOKENS_PER_SECOND) / wavData.byteRate);
  return Math.ceil((base64ByteLength(data, 0) * AUDIO_TOKENS_PER_SECOND) / AUDIO_BYTES_PER_SECOND);
}
