import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { accessLogRecords, resourcesFor, startLoggedRouter, startMock, waitFor, type LoggedRouter, type MockBackend } from '../helpers/processes.js';

type LogRecord = { request_id: string; status_code: number; input_tokens: number; output_tokens: number };

describe('embeddings through the router with the official openai SDK', () => {
  let mock: MockBackend;
  let router: LoggedRouter;

  beforeAll(async () => {
    mock = await startMock('pod-a');
    router = await startLoggedRouter(resourcesFor([{ name: 'pod-a', port: mock.port }], {
      rateLimit: '    inputTokensPerUnit: 100000\n    outputTokensPerUnit: 100000\n    unit: day',
    }));
  });
  afterAll(async () => {
    await router?.kill();
    await mock?.kill();
  });

  it('the vectors reach the SDK decoded; the record has the pod\'s prompt_tokens and no output; no output is charged', async () => {
    const client = new OpenAI({ baseURL: `${router.url}/v1`, apiKey: 'sk-any', maxRetries: 0 });
    const { data, response } = await client.embeddings.create({ model: 'sf-model', input: ['Zürich 🌦️', 'second input'] }, { headers: { 'x-request-id': 'emb-sdk' } }).withResponse();
    expect(data.data.map((d) => [d.index, d.embedding.length])).toEqual([[0, 8], [1, 8]]);
    expect(data.usage).toEqual({ prompt_tokens: 6, total_tokens: 6 }); // the mock's ceil(22/4)
    expect(response.headers.get('x-ratelimit-remaining-output-tokens')).toBe('100000');
    const [record] = await waitFor('its record', () => { const r = (accessLogRecords(router.logFile) as LogRecord[]).filter((l) => l.request_id === 'emb-sdk'); return r.length > 0 ? r : null; }, 5000);
    expect([record.status_code, record.input_tokens, record.output_tokens]).toEqual([200, 6, 0]);
    // Settled: the next answer's headers show the input corrected to the pod's count and no output.
    const next = await client.embeddings.create({ model: 'sf-model', input: 'x' }).withResponse();
    expect(next.response.headers.get('x-ratelimit-remaining-output-tokens')).toBe('100000');
  });
});
