import { describe, expect, it } from 'vitest';
import { audioTokens } from '../../../src/api/audio-tokens.js';
import { wav } from '../../helpers/media-fixtures.js';

/**
 * A WAV's duration is what its samples play for: a decoder reads its PCM data by the sample rate,
 * channels and sample size of its `fmt ` chunk, not by the byte rate it states. A byte rate far above
 * what those say (or a `data` size of 0, the header of a recording never closed) must not make a
 * long recording cost next to nothing.
 */

const BYTE_RATE_AT = 28; // RIFF header (12), fmt chunk header (8), format, channels, sample rate
const DATA_SIZE_AT = 40; // ... the 16 bytes of fmt, the data chunk's id

describe('audioTokens of a WAV whose header disagrees with its data', () => {
  it('an honest PCM WAV: its duration (60 s at 16 kHz, 16-bit mono: 600 tokens)', () => {
    expect(audioTokens(wav(60).toString('base64'), 0)).toBe(600);
    expect(audioTokens(wav(60, 44_100, 2).toString('base64'), 0)).toBe(600);
  });

  it('a byte rate forged far above the sample rate x block size: still the samples\' duration', () => {
    const w = wav(60);
    w.writeUInt32LE(0xffffffff, BYTE_RATE_AT);
    expect(audioTokens(w.toString('base64'), 0)).toBe(600);
  });

  it('a data size of 0 over data that follows: the data the file holds', () => {
    const w = wav(60);
    w.writeUInt32LE(0, DATA_SIZE_AT);
    expect(audioTokens(w.toString('base64'), 0)).toBe(600);
  });

  it('a byte rate below the samples\' (a compressed format): the stated one', () => {
    const w = wav(60);
    w.writeUInt16LE(0x11, 20); // IMA ADPCM: 4 bits a sample
    w.writeUInt32LE(8_000, BYTE_RATE_AT);
    expect(audioTokens(w.toString('base64'), 0)).toBe(2400); // 1.92 MB at 8000 bytes a second
  });
});
