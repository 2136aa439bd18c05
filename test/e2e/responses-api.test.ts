import { existsSync, readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postJson, resourcesFor, startLoggedRouter, startMock, waitFor, type LoggedRouter, type MockBackend } from '../helpers/processes.js';

/**
 * /v1/responses (OpenAI's Responses API) over the built router and the mock backend, which
 * answers it in its own shape: usage.input_tokens/output_tokens, output[] items, and a stream of
 * typed events ending with response.completed.
 */

function records(file: string): any[] {
  return existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter((l) => l.length > 0).map((l) => JSON.parse(l)) : [];
}

/** The `data:` of each event of an SSE body, parsed. */
function eventData(text: string): any[] {
  return text.split('\n\n').filter((e) => e !== '').map((e) => JSON.parse(e.split('\n').find((l) => l.startsWith('data: '))!.slice(6)));
}

describe('/v1/responses over the built router', () => {
  let mock: MockBackend;
  let router: LoggedRouter;
  beforeAll(async () => {
    mock = await startMock('pod-a');
    // One worker: each answer's output charge reaches the primary before the next request.
    router = await startLoggedRouter(resourcesFor([{ name: 'pod-a', port: mock.port }], {
      extraRoutes: `---
apiVersion: networking.serving.volcano.sh/v1alpha1
kind: ModelRoute
metadata: { name: limited-route, namespace: default }
spec:
  modelName: limited-model
  rules: [{ name: r, targetModels: [{ modelServerName: sf-server }] }]
  rateLimit: { outputTokensPerUnit: 40, unit: day }
`,
    }));
  });
  afterAll(async () => {
    await Promise.all([router?.kill(), mock?.kill()]);
  });

  const ask = async (id: string, body: Record<string, unknown>, outputTokens: number): Promise<{ status: number; text: string }> => {
    const r = await postJson(`${router.url}/v1/responses`, { model: 'sf-model', ...body }, { 'x-request-id': id, 'x-mock-output-tokens': String(outputTokens) });
    return { status: r.status, text: await r.text() };
  };
  const record = (id: string): Promise<any> => waitFor(`the record of ${id}`, () => records(router.logFile).find((r) => r.request_id === id), 5000);
  const MESSAGE_INPUT = [{ role: 'user', content: [{ type: 'input_text', text: 'Say hello' }] }];

  it('the access log has the backend\'s usage of a whole answer and of a stream', async () => {
    // The mock's input count: ceil(characters / 4) of instructions and input: ceil(18 / 4) = 5.
    const plain = await ask('plain', { instructions: 'Be brief.', input: 'Say hello' }, 16);
    expect(plain.status).toBe(200);
    expect(JSON.parse(plain.text).usage).toMatchObject({ input_tokens: 5, output_tokens: 16 });
    expect(await record('plain')).toMatchObject({ path: '/v1/responses', status_code: 200, input_tokens: 5, output_tokens: 16 });

    const streamed = await ask('streamed', { instructions: 'Be brief.', input: MESSAGE_INPUT, stream: true }, 12);
    expect(streamed.status).toBe(200);
    expect(await record('streamed')).toMatchObject({ path: '/v1/responses', status_code: 200, input_tokens: 5, output_tokens: 12 });
  });

  it('a stream goes to the backend as the client sent it (no include_usage) and comes back whole', async () => {
    const body = { model: 'sf-model', input: MESSAGE_INPUT, stream: true };
    const streamed = await ask('as-sent', body, 3);
    expect(streamed.status).toBe(200);
    expect((await mock.stats()).lastBody).toEqual(body);
    // Every event reached the client, the last one with the usage (nothing stripped).
    const events = eventData(streamed.text);
    expect(events.map((e) => e.type)).toEqual([
      'response.created', 'response.in_progress', 'response.output_item.added', 'response.content_part.added',
      'response.output_text.delta', 'response.output_text.delta', 'response.output_text.delta',
      'response.output_text.done', 'response.content_part.done', 'response.output_item.done', 'response.completed',
    ]);
    expect(events[10].response.usage).toMatchObject({ input_tokens: 3, output_tokens: 3 });
  });

  it('a route\'s output limit refuses (429) once /v1/responses answers, whole or streamed, have used it up', async () => {
    const limited = (id: string, stream: boolean, outputTokens: number): Promise<{ status: number; text: string }> =>
      ask(id, { model: 'limited-model', input: 'Say hello', stream }, outputTokens);
    expect((await limited('limit-1', false, 16)).status).toBe(200);
    expect((await limited('limit-2', true, 12)).status).toBe(200);
    // 28 of 40 used: one more is admitted (an answer's length is not known in advance) and takes
    // the route past its limit.
    expect((await limited('limit-3', true, 16)).status).toBe(200);
    const before = (await mock.stats()).requests;
    const refused = await postJson(`${router.url}/v1/responses`, { model: 'limited-model', input: 'Say hello' }, { 'x-request-id': 'refused' });
    expect(refused.status).toBe(429);
    expect(await refused.text()).toBe('output token rate limit exceeded');
    expect(refused.headers.get('x-ratelimit-remaining-output-tokens')).toBe('0');
    expect((await mock.stats()).requests).toBe(before);
    expect((await record('limit-3')).output_tokens).toBe(16);
  });
});
