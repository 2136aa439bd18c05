import { Buffer } from 'node:buffer';
import { afterEach, describe, expect, it } from 'vitest';
import { createTokenCounter, type RouterTokenCounter } from '../tokens/request-counter.js';
import { parseTokenizerSettings } from '../../../src/tokens/tokenizer-settings.js';
import { dataUrl, filler, gif, jpeg, png, wav, webpVp8, webpVp8l, webpVp8x } from '../../helpers/media-fixtures.js';

/**
 * Images and audio in a prompt count as input before admission: OpenAI's image rule (85 for
 * `detail: "low"`, else 85 + 170 per 512-px tile of the image scaled to fit 2048 × 2048 and then
 * to a shortest side of at most 768), from the size in a data URL's header, else 765; audio at 10
 * tokens a second, from a WAV header's byte rate, else at 16 000 bytes a second.
 */

function counter(estimator: 'bpe' | 'chars'): RouterTokenCounter {
  return createTokenCounter(parseTokenizerSettings({
    ROUTER_TOKEN_ESTIMATOR: estimator, ROUTER_TOKENIZER_POOL_SIZE: '0', ROUTER_TOKENIZER_INLINE_MAX_CHARS: '100000',
  }));
}

let c: RouterTokenCounter | undefined;
afterEach(async () => {
  await c?.close();
  c = undefined;
});

/** What one chat part adds to a user message that says `Describe:`. */
function chatPart(part: unknown, estimator: 'bpe' | 'chars' = 'bpe'): number {
  c ??= counter(estimator);
  const text = { type: 'text', text: 'Describe:' };
  const base = c.countRequest({ messages: [{ role: 'user', content: [text] }] }, 'chat') as number;
  return (c.countRequest({ messages: [{ role: 'user', content: [text, part] }] }, 'chat') as number) - base;
}

function image(url: unknown, detail?: string): unknown {
  return { type: 'image_url', image_url: detail === undefined ? { url } : { url, detail } };
}

function audio(bytes: Buffer, format: string): unknown {
  return { type: 'input_audio', input_audio: { data: bytes.toString('base64'), format } };
}

describe('chat: image parts', () => {
  it('an image counts before admission: 765 for a URL whose size is not known, 85 at low detail', () => {
    expect(chatPart(image('https://example.com/cat.png'))).toBe(765);
    expect(chatPart(image('https://example.com/cat.png', 'auto'))).toBe(765);
    expect(chatPart(image('https://example.com/cat.png', 'high'))).toBe(765);
    expect(chatPart(image('https://example.com/cat.png', 'low'))).toBe(85);
    expect(chatPart(image(dataUrl('image/png', png(4000, 3000)), 'low'))).toBe(85);
  });

  it('OpenAI\'s published examples: 1024 x 1024 is 765, 2048 x 4096 is 1105', () => {
    expect(chatPart(image(dataUrl('image/png', png(1024, 1024))))).toBe(765);
    expect(chatPart(image(dataUrl('image/png', png(2048, 4096)), 'high'))).toBe(1105);
  });

  it('the size is read from each format\'s header', () => {
    expect(chatPart(image(dataUrl('image/png', png(512, 512))))).toBe(85 + 170); // one tile, never scaled up
    expect(chatPart(image(dataUrl('image/gif', gif(100, 100))))).toBe(85 + 170);
    expect(chatPart(image(dataUrl('image/jpeg', jpeg(1000, 300))))).toBe(85 + 2 * 170);
    expect(chatPart(image(dataUrl('image/jpeg', jpeg(1000, 300, 0xc1))))).toBe(85 + 2 * 170);
    expect(chatPart(image(dataUrl('image/jpeg', jpeg(600, 1500, 0xc2))))).toBe(85 + 2 * 3 * 170);
    expect(chatPart(image(dataUrl('image/webp', webpVp8(1500, 700))))).toBe(85 + 3 * 2 * 170);
    expect(chatPart(image(dataUrl('image/webp', webpVp8l(600, 400))))).toBe(85 + 2 * 170);
    expect(chatPart(image(dataUrl('image/webp', webpVp8x(1200, 500))))).toBe(85 + 3 * 170);
    // Fitted to 2048 x 2048 (1024 x 2048), then to a shortest side of 768 (768 x 1536): 2 x 3 tiles.
    expect(chatPart(image(dataUrl('image/png', png(4096, 8192))))).toBe(85 + 6 * 170);
  });

  it('the format is told by the bytes, not the media type; a large image is read from its header only', () => {
    expect(chatPart(image(dataUrl('image/png', jpeg(1000, 300))))).toBe(85 + 2 * 170);
    expect(chatPart(image(dataUrl('application/octet-stream', png(512, 512))))).toBe(85 + 170);
    // 8 MB of image data behind a JPEG's long Exif segment.
    const big = Buffer.concat([jpeg(1000, 300, 0xc0, 60_000), filler(8 << 20)]);
    expect(chatPart(image(dataUrl('image/jpeg', big)))).toBe(85 + 2 * 170);
  });

  it('a size that cannot be read counts 765: unknown format, corrupt or cut header, not base64', () => {
    expect(chatPart(image(dataUrl('image/bmp', Buffer.concat([Buffer.from('BM'), filler(100)]))))).toBe(765);
    expect(chatPart(image('data:image/png;base64,!!!!not-base64!!!!'))).toBe(765);
    expect(chatPart(image(dataUrl('image/png', png(1024, 1024).subarray(0, 20))))).toBe(765);
    expect(chatPart(image(dataUrl('image/png', png(0, 100))))).toBe(765);
    expect(chatPart(image(dataUrl('image/jpeg', jpeg(1000, 300).subarray(0, 200))))).toBe(765);
    expect(chatPart(image('data:image/png,%89PNG'))).toBe(765);
    expect(chatPart(image('data:'))).toBe(765);
    expect(chatPart(image(''))).toBe(765);
  });

  it('a JPEG whose segments loop or run past the data counts 765', () => {
    const bad = jpeg(1000, 300);
    bad.writeUInt16BE(0xffff, 4); // APP0's length points far past the end
    expect(chatPart(image(dataUrl('image/jpeg', bad)))).toBe(765);
  });

  it('a string image_url counts as its URL; parts of another shape are skipped as before', () => {
    expect(chatPart({ type: 'image_url', image_url: 'https://example.com/cat.png' })).toBe(765);
    expect(chatPart({ type: 'image_url', image_url: 5 })).toBe(0);
    expect(chatPart({ type: 'image_url', image_url: { url: 7 } })).toBe(0);
    expect(chatPart({ type: 'image_url' })).toBe(0);
    expect(chatPart({ type: 'image_url', image_url: null })).toBe(0);
    expect(chatPart({ type: 7, image_url: { url: 'https://example.com/cat.png' } })).toBe(0);
  });

  it('the chars estimator adds the same image estimate', () => {
    expect(chatPart(image(dataUrl('image/png', png(1024, 1024))), 'chars')).toBe(765);
  });
});

describe('chat: audio parts', () => {
  it('a WAV counts 10 tokens a second of its duration (data size / byte rate)', () => {
    expect(chatPart(audio(wav(2), 'wav'))).toBe(20);
    expect(chatPart(audio(wav(1.5, 44_100, 2, true), 'wav'))).toBe(15);
    expect(chatPart(audio(wav(0.01), 'wav'))).toBe(1); // a started tenth of a second counts
  });

  it('other audio, or a WAV whose header cannot be read, counts its bytes at 16 000 a second', () => {
    expect(chatPart(audio(filler(48_000), 'mp3'))).toBe(30);
    expect(chatPart(audio(filler(48_001), 'mp3'))).toBe(31);
    expect(chatPart(audio(filler(48_000), 'wav'))).toBe(30);
    const noFmt = wav(2);
    noFmt.write('junk', 12); // the fmt chunk renamed
    expect(chatPart(audio(noFmt, 'wav'))).toBe(Math.ceil(noFmt.length / 1600));
  });

  it('audio parts of another shape are skipped as before', () => {
    expect(chatPart({ type: 'input_audio', input_audio: 'abc' })).toBe(0);
    expect(chatPart({ type: 'input_audio', input_audio: { data: 5, format: 'wav' } })).toBe(0);
    expect(chatPart({ type: 'input_audio' })).toBe(0);
    expect(chatPart({ type: 'input_audio', input_audio: { data: '', format: 'wav' } })).toBe(0);
  });
});

describe('responses: input_image and input_audio items', () => {
  it('count as in chat', () => {
    const k = c = counter('bpe');
    const text = { type: 'input_text', text: 'Describe:' };
    const base = k.countRequest({ input: [{ role: 'user', content: [text] }] }, 'responses') as number;
    const withMedia = k.countRequest({
      input: [{
        role: 'user',
        content: [
          text,
          { type: 'input_image', image_url: dataUrl('image/png', png(1024, 1024)) },
          { type: 'input_image', image_url: 'https://example.com/a.png', detail: 'low' },
          { type: 'input_image', file_id: 'file-abc' },
          { type: 'input_audio', input_audio: { data: wav(2).toString('base64'), format: 'wav' } },
          { type: 'input_image', image_url: 3 },
        ],
      }],
    }, 'responses') as number;
    expect(withMedia - base).toBe(765 + 85 + 765 + 20);
  });
});
