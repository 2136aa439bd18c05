/**
 * The duration of a WAV file from its header: the size of its `data` chunk (or of what of it the
 * file holds, when the header says more, or says 0: a header written before the recording's end)
 * over the byte rate of its `fmt ` chunk - at most the rate its sample rate, channels and sample
 * size make, the rate a decoder plays PCM samples at whatever byte rate the header states (a
 * compressed format states a lower one). The file is base64 text and only the chunk headers are
 * decoded.
 */
import { base64ByteLength, base64Bytes } from './base64-window.js';

/** Where readWavData() puts what it read. */
export const wavData = { bytes: 0, byteRate: 0 };

/** Most chunks stepped over before `data` (a file has two to four). */
const MAX_CHUNKS = 16;
/** A chunk's id and size, and of a `fmt ` chunk's body the fields up to the bits per sample. */
const CHUNK_HEADER = 8;
const FMT_HEAD = CHUNK_HEADER + 16;

/**
 * Reads the bytes of audio data and the byte rate of the WAV file whose base64 text is `s` from
 * `start` into `wavData`; false when it is not a WAV file, its header is cut or has no byte rate.
 */
export function readWavData(s: string, start: number): boolean {
  const head = base64Bytes(s, start, 0, 12);
  if (head === null || head.toString('latin1', 0, 4) !== 'RIFF' || head.toString('latin1', 8, 12) !== 'WAVE') return false;
  const length = base64ByteLength(s, start);
  let byteRate = 0;
  let at = 12;
  for (let i = 0; i < MAX_CHUNKS; i++) {
    const header = base64Bytes(s, start, at, CHUNK_HEADER);
    if (header === null) return false;
    const id = header.toString('latin1', 0, 4);
    const size = header.readUInt32LE(4);
    if (id === 'fmt ') {
      const fmt = base64Bytes(s, start, at, FMT_HEAD);
      if (fmt === null || size < 16) return false;
      byteRate = fmt.readUInt32LE(CHUNK_HEADER + 8);
      const sampleBytes = Math.ceil(fmt.readUInt16LE(CHUNK_HEADER + 14) / 8);
      const pcmByteRate = fmt.readUInt32LE(CHUNK_HEADER + 4) * fmt.readUInt16LE(CHUNK_HEADER + 2) * sampleBytes;
      if (pcmByteRate > 0 && pcmByteRate < byteRate) byteRate = pcmByteRate;
    } else if (id === 'data') {
      if (byteRate === 0) return false;
      const held = length - (at + CHUNK_HEADER);
      wavData.bytes = size === 0 ? held : Math.min(size, held);
      wavData.byteRate = byteRate;
      return true;
    }
    at += CHUNK_HEADER + size + (size & 1);
    if (at >= length) return false;
  }
  return false;
}
