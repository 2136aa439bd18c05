/**
 * What an image, audio, video or file part of an OpenAI-style prompt costs, estimated before the
 * request is forwarded (docs/tokens.md#images-and-audio); the model server's reported usage
 * replaces the request's whole count afterwards.
 *
 * - Images (chat `image_url`: `{url, detail}` or a URL string; Responses `input_image`:
 *   `image_url` or `file_id`, and `detail`): OpenAI's rule (image-tokens.ts).
 * - Audio (`input_audio`: `{data, format}`, base64; vLLM's `audio_url`: `{url}` or a URL string):
 *   10 tokens a second (audio-tokens.ts); a remote URL counts 30 seconds.
 * - Video (vLLM's `video_url`: `{url}` or a URL string): VIDEO_TOKENS, whatever its length.
 * - Files (Responses `input_file`, chat `file`): pages of text and image (openai-file.ts).
 * - vLLM's parts without `type` (`{"image_url": …}`, `{"audio_url": …}`, `{"input_audio": …}`,
 *   `{"video_url": …}`) count as the typed ones.
 *
 * Parts of another shape cost 0 (they are skipped, as before). Never throws.
 */
import { AUDIO_UNKNOWN_TOKENS, audioTokens } from './audio-tokens.js';
import { base64DataStart } from './data-url.js';
import { imageTokens } from './image-tokens.js';
import { fileTokens } from './openai-file.js';

/**
 * vLLM samples 32 frames of a video, spread over its whole length (its default `num_frames`),
 * whatever the video's duration: 32 frames at 128 tokens each (Qwen2.5-VL's cost of a 448 x 448
 * frame, two frames sharing 256 tokens).
 */
export const VIDEO_FRAMES = 32;
export const VIDEO_FRAME_TOKENS = 128;
export const VIDEO_TOKENS = VIDEO_FRAMES * VIDEO_FRAME_TOKENS;

/** Tokens of one content part that is an image, audio, video or file; 0 for any other part. */
export function mediaPartTokens(part: object): number {
  const type = (part as { type?: unknown }).type;
  if (type === 'image_url') return imageUrlTokens((part as { image_url?: unknown }).image_url);
  if (type === 'input_image') {
    const { image_url: url, file_id: file, detail } = part as { image_url?: unknown; file_id?: unknown; detail?: unknown };
    if (typeof url === 'string') return imageTokens(url, detail);
    return typeof file === 'string' ? imageTokens('', detail) : 0;
  }
  if (type === 'input_audio') return inputAudioTokens((part as { input_audio?: unknown }).input_audio);
  if (type === 'audio_url') return audioUrlTokens((part as { audio_url?: unknown }).audio_url);
  if (type === 'video_url') return urlOf((part as { video_url?: unknown }).video_url) === null ? 0 : VIDEO_TOKENS;
  if (type === 'input_file') {
    const { file_data: data, file_id: id, file_url: url } = part as { file_data?: unknown; file_id?: unknown; file_url?: unknown };
    if (typeof data === 'string') return fileTokens(data);
    return typeof id === 'string' || typeof url === 'string' ? fileTokens(null) : 0;
  }
  if (type === 'file') return chatFileTokens((part as { file?: unknown }).file);
  if (type === undefined) return untypedPartTokens(part);
  return 0;
}

/** vLLM's parts without `type`: told by their one media member, in the order vLLM looks. */
function untypedPartTokens(part: object): number {
  const p = part as { image_url?: unknown; audio_url?: unknown; input_audio?: unknown; video_url?: unknown };
  if (p.image_url !== undefined) return imageUrlTokens(p.image_url);
  if (p.audio_url !== undefined) return audioUrlTokens(p.audio_url);
  if (p.input_audio !== undefined && p.input_audio !== null) return inputAudioTokens(p.input_audio);
  if (p.video_url !== undefined) return urlOf(p.video_url) === null ? 0 : VIDEO_TOKENS;
  return 0;
}

/** A URL given as a string or as `{url}`; null for any other shape. */
function urlOf(ref: unknown): string | null {
  if (typeof ref === 'string') return ref;
  if (ref === null || typeof ref !== 'object') return null;
  const url = (ref as { url?: unknown }).url;
  return typeof url === 'string' ? url : null;
}

/** Chat's `image_url`: `{url, detail}` or a URL string. */
function imageUrlTokens(ref: unknown): number {
  const url = urlOf(ref);
  if (url === null) return 0;
  return imageTokens(url, typeof ref === 'object' ? (ref as { detail?: unknown }).detail : undefined);
}

/** `input_audio`: `{data, format}`, the data base64. */
function inputAudioTokens(audio: unknown): number {
  if (audio === null || typeof audio !== 'object') return 0;
  const data = (audio as { data?: unknown }).data;
  return typeof data === 'string' ? audioTokens(data, 0) : 0;
}

/** vLLM's `audio_url`: a base64 data URL is read as `input_audio` data; any other URL counts 30 s. */
function audioUrlTokens(ref: unknown): number {
  const url = urlOf(ref);
  if (url === null) return 0;
  const start = base64DataStart(url);
  return start < 0 ? AUDIO_UNKNOWN_TOKENS : audioTokens(url, start);
}

/** Chat's `file`: `{file_data, file_id, filename}`. */
function chatFileTokens(file: unknown): number {
  if (file === null || typeof file !== 'object') return 0;
  const { file_data: data, file_id: id } = file as { file_data?: unknown; file_id?: unknown };
  if (typeof data === 'string') return fileTokens(data);
  return typeof id === 'string' ? fileTokens(null) : 0;
}
