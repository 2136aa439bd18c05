/**
 * What an image costs by OpenAI's published rule for its GPT-4o-family models
 * (docs/tokens.md#images-and-audio): `detail: "low"` costs 85; otherwise the image is scaled to
 * fit 2048 x 2048, then so that its shortest side is at most 768, and costs 85 + 170 per 512-px
 * tile. The size is read from the header of a base64 `data:` URL; when it is not known (a remote
 * URL, a file id, a format not read, a corrupt header) the image costs what a 1024 x 1024 one
 * does: 765.
 */
import { base64DataStart } from './data-url.js';
import { imageSize, readImageSize } from './image-size.js';

export const IMAGE_BASE_TOKENS = 85;
export const IMAGE_TILE_TOKENS = 170;
/** A 1024 x 1024 image at high detail: 4 tiles. */
export const IMAGE_UNKNOWN_SIZE_TOKENS = IMAGE_BASE_TOKENS + 4 * IMAGE_TILE_TOKENS;

const IMAGE_FIT = 2048;
const IMAGE_SHORT_SIDE = 768;
const TILE = 512;

/** An image at `url` (a data URL, any other URL, or '' when unknown) at `detail`. */
export function imageTokens(url: string, detail: unknown): number {
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
