/**
 * What an image or audio part of an OpenAI-style prompt costs, estimated before the request is
 * forwarded (docs/tokens.md#images-and-audio); the model server's reported usage replaces the
 * request's whole count afterwards.
 *
 * - Images (chat `image_url`: `{url, detail}` or a URL string; Responses `input_image`:
 *   `image_url` or `file_id`, and `detail`): OpenAI's rule (image-tokens.ts).
 * - Audio (`input_audio`: `{data, format}`, base64): 10 tokens a second (audio-tokens.ts).
 *
 * Parts of another shape cost 0 (they are skipped, as before). Never throws.
 */
import { audioTokens } from './audio-tokens.js';
import { imageTokens } from './image-tokens.js';

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
    return typeof data === 'string' ? audioTokens(data, 0) : 0;
  }
  return 0;
}
