/**
 * What audio costs (docs/tokens.md#images-and-audio): 10 tokens a second (OpenAI's rate for input
 * audio: one token per 100 ms), rounded up; the duration from a WAV header, otherwise from the
 * data's size at 16 000 bytes a second (MP3 at 128 kbit/s). Audio whose data is not in the request
 * (a remote URL) counts 30 seconds: the window Whisper-based audio encoders take at a time.
 */
import { base64ByteLength } from './base64-window.js';
import { readWavData, wavData } from './wav-duration.js';

export const AUDIO_TOKENS_PER_SECOND = 10;
export const AUDIO_BYTES_PER_SECOND = 16_000;
export const AUDIO_UNKNOWN_SECONDS = 30;
export const AUDIO_UNKNOWN_TOKENS = AUDIO_UNKNOWN_SECONDS * AUDIO_TOKENS_PER_SECOND;

/** Base64 audio data from `start` of `s`: 10 tokens a second of its duration, from a WAV header or its size. */
export function audioTokens(s: string, start: number): number {
  if (readWavData(s, start)) return Math.ceil((wavData.bytes * AUDIO_TOKENS_PER_SECOND) / wavData.byteRate);
  return Math.ceil((base64ByteLength(s, start) * AUDIO_TOKENS_PER_SECOND) / AUDIO_BYTES_PER_SECOND);
}
