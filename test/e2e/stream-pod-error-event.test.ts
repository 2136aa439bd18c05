import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { total } from '../helpers/metrics-text.js';
import { accessLogRecords, postJson, resourcesFor, startLoggedRouter, startMock, waitFor, type LoggedRouter, type MockBackend } from '../helpers/processes.js';
import { readChatStream } from '../helpers/sdk-stream.js';

/**
 * A pod whose generation fails partway says so in the stream it answered 200 (its own error event,
 * or llama.cpp's `error` field, then [DONE]): the router passes the stream through unchanged,
 * records the request as the pod's failure with the status sent and the pod's message, counts it
 * as an error, and does not count it against the pod's health.
 */
const MESSAGE = 'mock backend pod-a failed the generation after 2 tokens';

/** The data of each event of an SSE body. */
const events = (text: string): string[] => text.split('\n\n').filter((e) => e !== '').map((e) => e.slice('data: '.length));

describe('a pod\'s own error event in its 200 stream', () => {
  let mock: MockBackend;
  let router: LoggedRouter;
  const scrape = async (): Promise<string> => (await fetch(`${router.url}/metrics`)).text();
  const recordOf = (id: string) => waitFor(`the record of ${id}`, () => accessLogRecords(router.logFile).find((r) => r.request_id === id));

  beforeAll(async () => {
    mock = await startMock('pod-a');
    router = await startLoggedRouter(resourcesFor([{ name: 'pod-a', port: mock.port }]), { env: { ACCESS_LOG_FLUSH_INTERVAL: '0' } });
  }, 90_000);
  afterAll(async () => {
    await router?.kill();
    await mock?.kill();
  });

  it.each([
    ['openai', '/v1/completions', `{"error":{"message":"${MESSAGE}","type":"server_error","param":null,"code":"generation_failed"}}`],
    ['vllm', '/v1/chat/completions', `{"error": {"object": "error", "message": "${MESSAGE}", "type": "InternalServerError", "param": null, "code": 500}}`],
    ['object', '/v1/completions', `{"object": "error", "message": "${MESSAGE}", "type": "InternalServerError", "param": null, "code": 500}`],
    // The error member after the chunk's id (not its first): the stream's last event before [DONE].
    ['chunk', '/v1/chat/completions', `{"id":"gen-pod-a-error","object":"chat.completion.chunk","created":1795000000,"model":"mock","error":{"code":"server_error","message":"${MESSAGE}"},"choices":[{"index":0,"delta":{"content":""},"finish_reason":"error"}]}`],
  ])('%s shape on %s: passed through unchanged, status 200; recorded upstream_error naming the pod and its message', async (shape, path, data) => {
    const id = `pod-error-${shape}`;
    const body = path === '/v1/completions' ? { model: 'sf-model', prompt: 'hi', stream: true } : { model: 'sf-model', messages: [{ role: 'user', content: 'hi' }], stream: true };
    const res = await postJson(`${router.url}${path}`, body, { 'x-request-id': id, 'x-mock-output-tokens': '4', 'x-mock-error-after': '2', 'x-mock-error-shape': shape });
    expect(res.status).toBe(200);
    const got = events(await res.text());
    // Two token chunks, the pod's error event byte for byte, then [DONE].
    expect(got).toHaveLength(4);
    expect(got[2]).toBe(data);
    expect(got[3]).toBe('[DONE]');
    const r = await recordOf(id);
    expect(r).toMatchObject({ status_code: 200, selected_pod: 'pod-a', error: { type: 'upstream_error', message: `upstream pod pod-a sent an error event in its stream: ${MESSAGE}` } });
    expect(r.output_tokens).toBeGreaterThan(0); // the text the stream carried, counted
  });

  it('llama.cpp\'s error field (not data) on /v1/chat/completions: passed through unchanged, recorded upstream_error with its message; the SDK ignores it', async () => {
    const headers = { 'x-mock-output-tokens': '4', 'x-mock-error-after': '2', 'x-mock-error-shape': 'llamacpp' };
    const res = await postJson(`${router.url}/v1/chat/completions`, { model: 'sf-model', messages: [{ role: 'user', content: 'hi' }], stream: true }, { ...headers, 'x-request-id': 'pod-error-llamacpp' });
    expect(res.status).toBe(200);
    const got = (await res.text()).split('\n\n');
    expect(got).toHaveLength(5);
    expect(got.slice(2)).toEqual([`error: {"code":500,"message":"${MESSAGE}","type":"server_error"}`, 'data: [DONE]', '']);
    const r = await recordOf('pod-error-llamacpp');
    expect(r).toMatchObject({ status_code: 200, selected_pod: 'pod-a', error: { type: 'upstream_error', message: `upstream pod pod-a sent an error event in its stream: ${MESSAGE}` } });
    expect(r.output_tokens).toBeGreaterThan(0);
    // The SDK skips a field it does not know: its client sees the text, then the stream's end.
    const client = new OpenAI({ baseURL: `${router.url}/v1`, apiKey: 'unused', maxRetries: 0, defaultHeaders: { ...headers, 'x-request-id': 'pod-error-llamacpp-sdk' } });
    const { text, err } = await readChatStream(await client.chat.completions.create({ model: 'sf-model', messages: [{ role: 'user', content: 'hi' }], stream: true }));
    expect({ text, err }).toEqual({ text: 'tok tok ', err: null });
    expect((await recordOf('pod-error-llamacpp-sdk')).error.message).toBe(`upstream pod pod-a sent an error event in its stream: ${MESSAGE}`);
  });

  it('counts in the error metrics with status 200, not against the pod; a stream without one is a plain success', async () => {
    const clean = await postJson(`${router.url}/v1/completions`, { model: 'sf-model', prompt: 'hi', stream: true }, { 'x-request-id': 'pod-error-none' });
    expect(clean.status).toBe(200);
    await clean.text();
    expect((await recordOf('pod-error-none')).error).toBeUndefined();
    const metrics = await scrape();
    // The six streams above.
    expect(total(metrics, 'inference_router_requests_total', 'status="200"', 'error_type="upstream_error"')).toBe(6);
    expect(total(metrics, 'inference_router_requests_total', 'status="200"', 'error_type=""')).toBe(1);
    expect(total(metrics, 'inference_router_upstream_resets_total', 'pod-a')).toBe(0);
    expect(total(metrics, 'inference_router_upstream_5xx_failures_total', 'pod-a')).toBe(0);
  });

  it('the openai SDK raises the pod\'s error from the stream it got through the router', async () => {
    const client = new OpenAI({ baseURL: `${router.url}/v1`, apiKey: 'unused', maxRetries: 0, defaultHeaders: { 'x-mock-error-after': '3', 'x-request-id': 'pod-error-sdk' } });
    const stream = await client.chat.completions.create({ model: 'sf-model', messages: [{ role: 'user', content: 'hi' }], stream: true });
    const { text, err } = await readChatStream(stream);
    expect(text).toBe('tok tok tok ');
    expect(err).toBeInstanceOf(OpenAI.APIError);
    expect((err as InstanceType<typeof OpenAI.APIError>).message).toBe('mock backend pod-a failed the generation after 3 tokens');
    expect((await recordOf('pod-error-sdk')).error.message).toBe('upstream pod pod-a sent an error event in its stream: mock backend pod-a failed the generation after 3 tokens');
  });
});
