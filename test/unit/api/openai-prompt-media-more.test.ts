import { Buffer } from 'node:buffer';
import { afterEach, describe, expect, it } from 'vitest';
import { createTokenCounter, type RouterTokenCounter } from '../tokens/request-counter.js';
import { parseTokenizerSettings } from '../../../src/tokens/tokenizer-settings.js';
import { linearizedPdfPages } from '../../../src/api/pdf-page-count.js';
import { dataUrl, filler, pdf, png, wav } from '../../helpers/media-fixtures.js';

/**
 * vLLM's audio_url and video_url parts (and its parts without `type`), and file parts (Responses
 * `input_file`, chat `file`) count as input before admission: audio at 10 tokens a second (a
 * remote URL: 30 s, 300), a video 32 frames at 128 tokens (4096), a file 1265 tokens a page: the
 * page count a linearized PDF states, else one page per 32 KiB, from 1 to 100 pages; a file by
 * id or URL 10 pages.
 */

function counter(): RouterTokenCounter {
  return createTokenCounter(parseTokenizerSettings({
    ROUTER_TOKEN_ESTIMATOR: 'bpe', ROUTER_TOKENIZER_POOL_SIZE: '0', ROUTER_TOKENIZER_INLINE_MAX_CHARS: '100000',
  }));
}

let c: RouterTokenCounter | undefined;
afterEach(async () => {
  await c?.close();
  c = undefined;
});

/** What one part adds to a user message that says `Describe:`, in chat or in Responses input. */
function added(part: unknown, api: 'chat' | 'responses' = 'chat'): number {
  c ??= counter();
  const text = { type: api === 'chat' ? 'text' : 'input_text', text: 'Describe:' };
  const body = (content: unknown[]): Record<string, unknown> =>
    api === 'chat' ? { messages: [{ role: 'user', content }] } : { input: [{ role: 'user', content }] };
  return (c.countRequest(body([text, part]), api) as number) - (c.countRequest(body([text]), api) as number);
}

const PAGE = 765 + 500;

describe('vLLM audio_url parts', () => {
  it('a base64 data URL counts as input_audio data: from its WAV header, else 16 000 bytes a second', () => {
    expect(added({ type: 'audio_url', audio_url: { url: dataUrl('audio/wav', wav(2)) } })).toBe(20);
    expect(added({ type: 'audio_url', audio_url: { url: dataUrl('audio/wav', wav(1.5, 44_100, 2, true)) } })).toBe(15);
    expect(added({ type: 'audio_url', audio_url: { url: dataUrl('audio/mpeg', filler(48_000)) } })).toBe(30);
    expect(added({ type: 'audio_url', audio_url: dataUrl('audio/wav', wav(3)) })).toBe(30);
  });

  it('a remote URL, or a data URL that is not base64, counts 30 seconds: 300', () => {
    expect(added({ type: 'audio_url', audio_url: { url: 'https://example.com/a.mp3' } })).toBe(300);
    expect(added({ type: 'audio_url', audio_url: 'https://example.com/a.mp3' })).toBe(300);
    expect(added({ type: 'audio_url', audio_url: { url: 'data:audio/wav,RIFF' } })).toBe(300);
  });

  it('parts of another shape are skipped', () => {
    expect(added({ type: 'audio_url', audio_url: { url: 5 } })).toBe(0);
    expect(added({ type: 'audio_url', audio_url: null })).toBe(0);
    expect(added({ type: 'audio_url' })).toBe(0);
  });
});

describe('vLLM video_url parts', () => {
  it('a video counts 32 frames at 128 tokens, whatever its URL or length', () => {
    expect(added({ type: 'video_url', video_url: { url: 'https://example.com/v.mp4' } })).toBe(4096);
    expect(added({ type: 'video_url', video_url: 'https://example.com/v.mp4' })).toBe(4096);
    expect(added({ type: 'video_url', video_url: { url: dataUrl('video/mp4', filler(3 << 20)) } })).toBe(4096);
  });

  it('parts of another shape are skipped', () => {
    expect(added({ type: 'video_url', video_url: { url: null } })).toBe(0);
    expect(added({ type: 'video_url', video_url: 4 })).toBe(0);
    expect(added({ type: 'video_url' })).toBe(0);
  });
});

describe('vLLM parts without type', () => {
  it('count as the typed part their media member names', () => {
    expect(added({ image_url: 'https://example.com/a.png' })).toBe(765);
    expect(added({ image_url: { url: dataUrl('image/png', png(512, 512)) } })).toBe(255);
    expect(added({ audio_url: 'https://example.com/a.mp3' })).toBe(300);
    expect(added({ audio_url: { url: dataUrl('audio/wav', wav(2)) } })).toBe(20);
    expect(added({ input_audio: { data: wav(2).toString('base64'), format: 'wav' } })).toBe(20);
    expect(added({ video_url: 'https://example.com/v.mp4' })).toBe(4096);
  });

  it('other members, or a type that is not a string, count nothing', () => {
    expect(added({ uuid: 'abc' })).toBe(0);
    expect(added({ input_audio: null })).toBe(0);
    expect(added({ type: 7, video_url: 'https://example.com/v.mp4' })).toBe(0);
    expect(added({ type: null, audio_url: 'https://example.com/a.mp3' })).toBe(0);
  });
});

describe('file parts', () => {
  it('a linearized PDF counts the pages it states in its first kilobyte', () => {
    expect(added({ type: 'input_file', filename: 'a.pdf', file_data: dataUrl('application/pdf', pdf(40_000, 2)) }, 'responses')).toBe(2 * PAGE);
    expect(added({ type: 'input_file', file_data: dataUrl('application/pdf', pdf(4 << 20, 7)) }, 'responses')).toBe(7 * PAGE);
    expect(added({ type: 'input_file', file_data: dataUrl('application/pdf', pdf(10_000, 500)) }, 'responses')).toBe(100 * PAGE);
  });

  it('another file counts one page per 32 KiB of its size, at least one and at most 100', () => {
    expect(added({ type: 'input_file', file_data: dataUrl('application/pdf', pdf(5_000)) }, 'responses')).toBe(PAGE);
    expect(added({ type: 'input_file', file_data: dataUrl('application/pdf', pdf(3 * 32 * 1024 + 1)) }, 'responses')).toBe(4 * PAGE);
    expect(added({ type: 'input_file', file_data: dataUrl('text/plain', filler(64 * 1024)) }, 'responses')).toBe(2 * PAGE);
    expect(added({ type: 'input_file', file_data: pdf(64 * 1024).toString('base64') }, 'responses')).toBe(2 * PAGE);
    expect(added({ type: 'input_file', file_data: dataUrl('application/pdf', pdf(8 << 20)) }, 'responses')).toBe(100 * PAGE);
    expect(added({ type: 'input_file', file_data: '' }, 'responses')).toBe(PAGE);
  });

  it('a file by id or URL, or a data URL that is not base64, counts 10 pages', () => {
    expect(added({ type: 'input_file', file_id: 'file-abc' }, 'responses')).toBe(10 * PAGE);
    expect(added({ type: 'input_file', file_url: 'https://example.com/a.pdf' }, 'responses')).toBe(10 * PAGE);
    expect(added({ type: 'input_file', file_data: 'data:application/pdf,%25PDF-1.7' }, 'responses')).toBe(10 * PAGE);
  });

  it('chat file parts count the same', () => {
    expect(added({ type: 'file', file: { filename: 'a.pdf', file_data: dataUrl('application/pdf', pdf(40_000, 3)) } })).toBe(3 * PAGE);
    expect(added({ type: 'file', file: { file_id: 'file-abc' } })).toBe(10 * PAGE);
  });

  it('parts of another shape are skipped', () => {
    expect(added({ type: 'input_file', file_data: 5 }, 'responses')).toBe(0);
    expect(added({ type: 'input_file', filename: 'a.pdf' }, 'responses')).toBe(0);
    expect(added({ type: 'file', file: 'file-abc' })).toBe(0);
    expect(added({ type: 'file', file: { filename: 'a.pdf' } })).toBe(0);
    expect(added({ type: 'file' })).toBe(0);
  });
});

describe('linearizedPdfPages', () => {
  const b64 = (b: Buffer): string => b.toString('base64');
  it('reads /N of the linearization dictionary only, from the first kilobyte', () => {
    expect(linearizedPdfPages(b64(pdf(10_000, 12)), 0)).toBe(12);
    expect(linearizedPdfPages(b64(pdf(10_000)), 0)).toBe(0);
    // Past the first kilobyte: not read.
    const late = Buffer.concat([Buffer.from('%PDF-1.7\n'), filler(1100), pdf(2000, 5).subarray(9)]);
    expect(linearizedPdfPages(b64(late), 0)).toBe(0);
    // Not a PDF, or too short to say.
    expect(linearizedPdfPages(b64(Buffer.from('<< /Linearized 1 /N 4 >>')), 0)).toBe(0);
    expect(linearizedPdfPages('', 0)).toBe(0);
    expect(linearizedPdfPages('JVBE', 0)).toBe(0);
  });
});
