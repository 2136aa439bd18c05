import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import OpenAI from 'openai';
import { postJson, resourcesFor, startMock, startRouter, type MockBackend, type Router } from '../helpers/processes.js';

describe('router core: plain and streaming requests over real HTTP, 2 workers', () => {
  let a: MockBackend;
  let b: MockBackend;
  let router: Router;

  beforeAll(async () => {
    [a, b] = await Promise.all([startMock('pod-a'), startMock('pod-b')]);
    router = await startRouter(resourcesFor([{ name: 'pod-a', port: a.port }, { name: 'pod-b', port: b.port }], { serverModel: 'real-model-v1' }));
  });
  afterAll(async () => {
    await router?.kill();
    await Promise.all([a?.kill(), b?.kill()]);
  });

  it('forwards a completion, rewrites the model, keeps path and query, returns x-request-id', async () => {
    const r = await postJson(`${router.url}/v1/completions?trace=1&x=y`, { model: 'sf-model', prompt: 'San Francisco is a', temperature: 0 });
    expect(r.status).toBe(200);
    expect(r.headers.get('x-request-id')).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    const body = await r.json() as OpenAI.Completion;
    expect(body.choices[0].text).toContain('tok');
    expect(body.usage?.completion_tokens).toBe(16);
    const stats = [await a.stats(), await b.stats()].find((s) => s.lastBody?.prompt === 'San Francisco is a');
    expect(stats?.lastBody.model).toBe('real-model-v1');
    expect(stats?.lastHeaders['x-request-id']).toBe(r.headers.get('x-request-id'));
  });

  it('auth off: an openai SDK request reaches the pod as the application sent it, its Authorization too; only model is renamed', async () => {
    const client = new OpenAI({ baseURL: `${router.url}/v1`, apiKey: 'sk-pod-own-key', maxRetries: 0 });
    const request = {
      model: 'sf-model', messages: [{ role: 'user' as const, content: 'Weather in Zürich? 🌦️' }], n: 2, user: 'user-42', max_completion_tokens: 3,
      tools: [{ type: 'function' as const, function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } } }],
      response_format: { type: 'json_schema' as const, json_schema: { name: 'w', schema: { type: 'object' } } },
    };
    const answer = await client.chat.completions.create(request, { headers: { 'x-request-id': 'sdk-body-as-sent' } });
    expect(answer.usage?.completion_tokens).toBe(3);
    const stats = [await a.stats(), await b.stats()].find((s) => s.lastHeaders?.['x-request-id'] === 'sdk-body-as-sent');
    expect(stats?.lastHeaders.authorization).toBe('Bearer sk-pod-own-key');
    expect(stats?.lastBody).toEqual({ ...request, model: 'real-model-v1' });
  });

  it('keeps a client x-request-id end to end', async () => {
    const r = await postJson(`${router.url}/v1/chat/completions`, { model: 'sf-model', messages: [{ role: 'user', content: 'hi' }] }, { 'x-request-id': 'my-trace-123' });
    expect(r.status).toBe(200);
    expect(r.headers.get('x-request-id')).toBe('my-trace-123');
    const body = await r.json() as OpenAI.ChatCompletion;
    expect(body.object).toBe('chat.completion');
  });

  it('spreads requests over both pods', async () => {
    await Promise.all([fetch(`${a.url}/stats/reset`, { method: 'POST' }), fetch(`${b.url}/stats/reset`, { method: 'POST' })]);
    await Promise.all(Array.from({ length: 40 }, () => postJson(`${router.url}/v1/completions`, { model: 'sf-model', prompt: 'x' }).then((r) => r.text())));
    const [sa, sb] = [await a.stats(), await b.stats()];
    expect(sa.requests + sb.requests).toBe(40);
    expect(sa.requests).toBeGreaterThan(0);
    expect(sb.requests).toBeGreaterThan(0);
  });

  it('streams SSE chunks and removes the usage chunk it asked for', async () => {
    const r = await postJson(`${router.url}/v1/completions`, { model: 'sf-model', prompt: 'hello', stream: true });
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toContain('text/event-stream');
    const text = await r.text();
    const events = text.split('\n\n').filter((e) => e.startsWith('data:'));
    expect(events.at(-1)).toBe('data: [DONE]');
    expect(events.length).toBe(16 + 1);
    expect(text).not.toContain('"usage":{');
    const [sa, sb] = [await a.stats(), await b.stats()];
    const seen = [sa, sb].find((s) => s.lastBody?.prompt === 'hello');
    expect(seen?.lastBody.stream_options).toEqual({ include_usage: true });
  });

  it('passes the usage chunk through untouched when the client asked for it', async () => {
    const r = await postJson(`${router.url}/v1/chat/completions`, { model: 'sf-model', messages: [{ role: 'user', content: 'hello' }], stream: true, stream_options: { include_usage: true } });
    const text = await r.text();
    expect(text).toContain('"usage":{');
  });

  it('works with the official openai client, plain and streaming', async () => {
    const client = new OpenAI({ baseURL: `${router.url}/v1`, apiKey: 'unused' });
    const c = await client.chat.completions.create({ model: 'sf-model', messages: [{ role: 'user', content: 'Say hi' }] });
    expect(c.choices[0].message.content).toContain('tok');
    const stream = await client.chat.completions.create({ model: 'sf-model', messages: [{ role: 'user', content: 'Say hi' }], stream: true });
    let chunks = 0;
    let text = '';
    for await (const chunk of stream) {
      chunks++;
      text += chunk.choices[0]?.delta?.content ?? '';
    }
    expect(chunks).toBe(16);
    expect(text.trim().split(/\s+/).length).toBe(16);
  });

  it('lists the models routes serve', async () => {
    const r = await fetch(`${router.url}/v1/models`);
    const body = await r.json() as { object: string; data: { id: string }[] };
    expect(body.object).toBe('list');
    expect(body.data.map((m: { id: string }) => m.id)).toEqual(['sf-model']);
  });

  it('answers healthz and readyz', async () => {
    expect((await fetch(`${router.url}/healthz`)).status).toBe(200);
    expect((await fetch(`${router.url}/readyz`)).status).toBe(200);
  });
});
