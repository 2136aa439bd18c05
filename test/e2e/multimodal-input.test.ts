import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postFresh, resourcesFor, startMock, startRouter, type MockBackend, type Router } from '../helpers/processes.js';
import { dataUrl, pdf, png, wav } from '../helpers/media-fixtures.js';

// Images and audio in a prompt count as input before admission (docs/tokens.md). The pod reports
// no usage (--no-usage), so what the router counted is what stays charged; one worker, so each
// answer's headers show the charges of the requests before it.
const LIMIT = 1200;

function chat(content: unknown[]): unknown {
  return { model: 'sf-model', messages: [{ role: 'user', content }] };
}

const TEXT = { type: 'text', text: 'What is in this image?' };
const IMAGE = { type: 'image_url', image_url: { url: dataUrl('image/png', png(1024, 1024, 200_000)) } };

describe('images and audio in a prompt count against the input limit', () => {
  let mock: MockBackend;
  let router: Router;
  beforeAll(async () => {
    mock = await startMock('pod-n', ['--no-usage']);
    router = await startRouter(resourcesFor([{ name: 'pod-n', port: mock.port }], {
      rateLimit: `    inputTokensPerUnit: ${LIMIT}\n    unit: day`,
    }), { workers: 1 });
  });
  afterAll(async () => {
    await Promise.all([router?.kill(), mock?.kill()]);
  });

  it('a 1024 x 1024 image is charged 765 tokens besides its text; a burst past the budget is refused', async () => {
    const remaining = async (body: unknown): Promise<{ status: number; remaining: number }> => {
      const r = await postFresh(`${router.url}/v1/chat/completions`, body);
      return { status: r.status, remaining: Number(r.headers['x-ratelimit-remaining-input-tokens']) };
    };
    const text = await remaining(chat([TEXT]));
    expect(text.status).toBe(200);
    const textTokens = LIMIT - text.remaining;
    expect(textTokens).toBeGreaterThan(5);
    expect(textTokens).toBeLessThan(30);

    const first = await remaining(chat([TEXT, IMAGE]));
    expect(first).toEqual({ status: 200, remaining: text.remaining - textTokens - 765 });
    // What is left cannot hold a second image: refused before the pod sees it.
    const second = await remaining(chat([TEXT, IMAGE]));
    expect(second.status).toBe(429);
    expect((await mock.stats()).requests).toBe(2);

    // Two seconds of WAV audio: 20 tokens.
    const audio = await remaining(chat([TEXT, { type: 'input_audio', input_audio: { data: wav(2).toString('base64'), format: 'wav' } }]));
    expect(audio).toEqual({ status: 200, remaining: first.remaining - textTokens - 20 });

    // Parts of an unexpected shape are skipped, as before: the request goes to the pod, charged its text.
    const odd = await remaining(chat([TEXT, { type: 'image_url', image_url: 5 }, { type: 'input_audio', input_audio: { data: null } }, null]));
    expect(odd).toEqual({ status: 200, remaining: audio.remaining - textTokens });
    expect((await mock.stats()).requests).toBe(4);
  });
});

// vLLM's audio_url and video_url parts and the Responses API's input_file count too: one worker,
// no usage from the pod, so each answer's remaining budget shows what the router charged.
const FILE_LIMIT = 22_000;

describe('audio_url, video_url and input_file parts count against the input limit', () => {
  let mock: MockBackend;
  let router: Router;
  beforeAll(async () => {
    mock = await startMock('pod-f', ['--no-usage']);
    router = await startRouter(resourcesFor([{ name: 'pod-f', port: mock.port }], {
      rateLimit: `    inputTokensPerUnit: ${FILE_LIMIT}\n    unit: day`,
    }), { workers: 1 });
  });
  afterAll(async () => {
    await Promise.all([router?.kill(), mock?.kill()]);
  });

  it('each is charged its estimate besides its text; a video past the budget is refused', async () => {
    const remaining = async (path: string, body: unknown): Promise<{ status: number; remaining: number }> => {
      const r = await postFresh(`${router.url}${path}`, body);
      return { status: r.status, remaining: Number(r.headers['x-ratelimit-remaining-input-tokens']) };
    };
    const INPUT_TEXT = { type: 'input_text', text: 'What is in this file?' };
    const respond = (content: unknown[]): unknown => ({ model: 'sf-model', input: [{ role: 'user', content }] });

    const chatText = await remaining('/v1/chat/completions', chat([TEXT]));
    const chatTokens = FILE_LIMIT - chatText.remaining;
    const respText = await remaining('/v1/responses', respond([INPUT_TEXT]));
    const respTokens = chatText.remaining - respText.remaining;
    expect(respTokens).toBeGreaterThan(5);
    let left = respText.remaining;

    const expectCharge = async (path: string, body: unknown, tokens: number): Promise<void> => {
      const r = await remaining(path, body);
      expect(r).toEqual({ status: 200, remaining: left - tokens });
      left = r.remaining;
    };
    // Two seconds of WAV in a data URL: 20 tokens; a remote clip: 30 s, 300 tokens.
    await expectCharge('/v1/chat/completions', chat([TEXT, { type: 'audio_url', audio_url: { url: dataUrl('audio/wav', wav(2)) } }]), chatTokens + 20);
    await expectCharge('/v1/chat/completions', chat([TEXT, { type: 'audio_url', audio_url: { url: 'https://example.com/a.mp3' } }]), chatTokens + 300);
    // A video: 32 frames at 128 tokens.
    await expectCharge('/v1/chat/completions', chat([TEXT, { type: 'video_url', video_url: { url: 'https://example.com/v.mp4' } }]), chatTokens + 4096);
    // A PDF whose linearization dictionary says 2 pages: 2 x 1265; a file id: 10 pages.
    await expectCharge('/v1/responses', respond([INPUT_TEXT, { type: 'input_file', filename: 'a.pdf', file_data: dataUrl('application/pdf', pdf(40_000, 2)) }]), respTokens + 2 * 1265);
    await expectCharge('/v1/responses', respond([INPUT_TEXT, { type: 'input_file', file_id: 'file-abc' }]), respTokens + 12_650);
    // Responses images and audio as in chat: a 1024 x 1024 image and two seconds of WAV.
    await expectCharge('/v1/responses', respond([
      INPUT_TEXT,
      { type: 'input_image', image_url: dataUrl('image/png', png(1024, 1024)) },
      { type: 'input_audio', input_audio: { data: wav(2).toString('base64'), format: 'wav' } },
    ]), respTokens + 765 + 20);
    expect((await mock.stats()).requests).toBe(8);

    // What is left cannot hold another video: refused before the pod sees it.
    expect(left).toBeLessThan(4096);
    const refused = await remaining('/v1/chat/completions', chat([TEXT, { type: 'video_url', video_url: { url: 'https://example.com/v.mp4' } }]));
    expect(refused.status).toBe(429);
    expect((await mock.stats()).requests).toBe(8);
  });
});
