import { Buffer } from 'node:buffer';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { imageSize, readImageSize } from '../../../src/api/image-size.js';
import { highDetailTokens } from '../../../src/api/image-tokens.js';
import { readWavData, wavData } from '../../../src/api/wav-duration.js';
import { filler, gif, jpeg, png, wav, webpVp8, webpVp8l, webpVp8x } from '../../helpers/media-fixtures.js';
import { xorshift } from '../../helpers/xorshift.js';

function size(bytes: Buffer, prefix = ''): [number, number] | null {
  const s = prefix + bytes.toString('base64');
  return readImageSize(s, prefix.length) ? [imageSize.width, imageSize.height] : null;
}

afterEach(() => { vi.restoreAllMocks(); });

describe('readImageSize', () => {
  it('reads each format\'s header, from where the payload starts', () => {
    expect(size(png(640, 480), 'data:image/png;base64,')).toEqual([640, 480]);
    expect(size(gif(65535, 1))).toEqual([65535, 1]);
    expect(size(jpeg(1000, 300, 0xc2))).toEqual([1000, 300]);
    expect(size(webpVp8(16383, 2))).toEqual([16383, 2]);
    expect(size(webpVp8l(16384, 16384))).toEqual([16384, 16384]);
    expect(size(webpVp8x(1 << 24, 3))).toEqual([1 << 24, 3]);
  });

  it('steps over JPEG fill bytes and segments without length; stops at image data or the end', () => {
    const j = jpeg(50, 60);
    expect(size(Buffer.concat([j.subarray(0, 2), Buffer.from([0xff, 0xff, 0xff, 0xd0]), j.subarray(2)]))).toEqual([50, 60]);
    expect(size(Buffer.concat([Buffer.from([0xff, 0xd8, 0xff, 0xda]), filler(100)]))).toBeNull();
    expect(size(Buffer.concat([Buffer.from([0xff, 0xd8, 0xff, 0xd9]), filler(100)]))).toBeNull();
    expect(size(Buffer.concat([Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0x00, 0x01]), filler(100)]))).toBeNull(); // length < 2
  });

  it('decodes only a few bytes at a time of a large image', () => {
    const big = Buffer.concat([jpeg(1000, 300, 0xc0, 60_000), filler(4 << 20)]).toString('base64');
    const from = vi.spyOn(Buffer, 'from');
    expect(readImageSize(big, 0)).toBe(true);
    expect(from.mock.calls.length).toBeGreaterThan(0);
    expect(Math.max(...from.mock.calls.map((c) => String(c[0]).length))).toBeLessThanOrEqual(40);
  });

  it('never throws on random bytes behind each format\'s magic; what it reads costs 85 + 170 x 1..8 tiles', () => {
    const r = xorshift(7);
    const int = (n: number): number => Math.floor(r() * n);
    const magics = [png(1, 1).subarray(0, 16), Buffer.from('GIF89a'), Buffer.from([0xff, 0xd8]), webpVp8(1, 1).subarray(0, 16),
      webpVp8l(1, 1).subarray(0, 16), webpVp8x(1, 1).subarray(0, 16), Buffer.from('RIFF\0\0\0\0WAVE')];
    for (let i = 0; i < 3000; i++) {
      const tail = Buffer.alloc(int(81));
      for (let j = 0; j < tail.length; j++) tail[j] = (j % 7 === 0 ? 0xff : int(256));
      const s = Buffer.concat([magics[i % magics.length], tail]).toString('base64');
      if (readImageSize(s, 0)) {
        const t = highDetailTokens(imageSize.width, imageSize.height);
        expect(t).toBeGreaterThanOrEqual(85 + 170);
        expect(t).toBeLessThanOrEqual(85 + 8 * 170);
      }
      if (readWavData(s, 0)) expect(wavData.bytes).toBeGreaterThanOrEqual(0);
    }
  });
});

describe('highDetailTokens', () => {
  it('follows OpenAI\'s examples and never scales up', () => {
    expect(highDetailTokens(1024, 1024)).toBe(765);
    expect(highDetailTokens(2048, 4096)).toBe(1105);
    expect(highDetailTokens(1, 1)).toBe(255);
    expect(highDetailTokens(768, 2048)).toBe(85 + 8 * 170);
    expect(highDetailTokens(1, 1_000_000)).toBe(85 + 4 * 170); // 1 x 2048 after the fit
  });
});

describe('readWavData', () => {
  it('reads the data size and byte rate; a header that claims more data than the file holds is cut to it', () => {
    expect(readWavData(wav(1, 8000).toString('base64'), 0)).toBe(true);
    expect(wavData).toEqual({ bytes: 16_000, byteRate: 16_000 });
    const streamed = wav(1, 8000);
    streamed.writeUInt32LE(0xffffffff, 40); // the data chunk's size, as a recorder writes it before the end
    expect(readWavData(streamed.toString('base64'), 0)).toBe(true);
    expect(wavData.bytes).toBe(16_000);
    expect(readWavData(filler(100).toString('base64'), 0)).toBe(false);
  });
});
