import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { accessLogRecords, postJson, resourcesFor, startLoggedRouter, startMock, waitFor, type LoggedRouter, type MockBackend } from '../helpers/processes.js';

// A pod that puts the stream's usage on its last token chunk (the mock's llamacpp shape, as
// llama.cpp's server does) instead of a separate usage-only chunk. The router asks for usage on a
// client's behalf when the client did not: then the usage member must not reach the client, and
// the router must still read it (the access log's input_tokens is the pod's prompt_tokens).

/** The data of each event of an SSE body (the mock writes `\n\n` between events, one data line each). */
function eventData(text: string): string[] {
  return text.split('\n\n').filter((e) => e !== '').map((e) => {
    expect(e.startsWith('data: ')).toBe(true);
    return e.slice(6);
  });
}

describe('usage on the last content chunk of a stream', () => {
  let mock: MockBackend;
  let router: LoggedRouter;
  beforeAll(async () => {
    mock = await startMock('pod-l', ['--answer-shape', 'llamacpp', '--output-tokens', '5']);
    router = await startLoggedRouter(resourcesFor([{ name: 'pod-l', port: mock.port }]));
  });
  afterAll(async () => {
    await Promise.all([router?.kill(), mock?.kill()]);
  });

  // 'abcdefgh': the mock reports prompt_tokens = ceil(8 / 4) = 2; the router's own count is more.
  const body = { model: 'sf-model', messages: [{ role: 'user', content: 'abcdefgh' }], stream: true };

  it('a client that did not ask gets the chunk without its usage member, the rest as the pod sent it', async () => {
    const r = await postJson(`${router.url}/v1/chat/completions`, body, { 'x-request-id': 'not-asked' });
    const text = await r.text();
    expect(r.status).toBe(200);
    expect((await mock.stats()).lastBody.stream_options).toEqual({ include_usage: true }); // asked on the client's behalf
    expect(text).not.toContain('"usage"');
    const data = eventData(text);
    expect(data).toHaveLength(6);
    expect(data[5]).toBe('[DONE]');
    const last = data[4];
    // The pod's `...}],"usage":{...},"timings":{...}}` with the member and its comma cut out.
    expect(last).toMatch(/"finish_reason":"length"\}\],"timings":\{"prompt_n":2,"predicted_n":5\}\}$/);
    expect(Object.keys(JSON.parse(last))).toEqual(['id', 'object', 'created', 'model', 'pod', 'choices', 'timings']);
    const record = await waitFor('access record', () => accessLogRecords(router.logFile).find((x) => x.request_id === 'not-asked'));
    expect(record).toMatchObject({ status_code: 200, input_tokens: 2, output_tokens: 5 });
  });

  it('a client that asked for usage gets it untouched', async () => {
    const r = await postJson(`${router.url}/v1/chat/completions`, { ...body, stream_options: { include_usage: true } }, { 'x-request-id': 'asked' });
    const data = eventData(await r.text());
    expect(data).toHaveLength(6);
    expect(data[4]).toMatch(/"finish_reason":"length"\}\],"usage":\{"prompt_tokens":2,"completion_tokens":5,"total_tokens":7\},"timings":\{"prompt_n":2,"predicted_n":5\}\}$/);
    const record = await waitFor('access record', () => accessLogRecords(router.logFile).find((x) => x.request_id === 'asked'));
    expect(record).toMatchObject({ status_code: 200, input_tokens: 2, output_tokens: 5 });
  });
});
