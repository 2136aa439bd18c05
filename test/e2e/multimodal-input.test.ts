import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postFresh, resourcesFor, startMock, startRouter, type MockBackend, type Router } from '../helpers/processes.js';
import { dataUrl, png, wav } from '../helpers/media-fixtures.js';

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
