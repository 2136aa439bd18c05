import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import OpenAI from 'openai';
import type { Response as ResponsesAnswer } from 'openai/resources/responses/responses';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { MockStats } from '../../mock-backend/mock-server.js';
import { freePort } from '../../helpers/processes.js';
import { raw } from '../../helpers/raw-http.js';
import { readChatStream } from '../../helpers/sdk-stream.js';

const root = fileURLToPath(new URL('../../../', import.meta.url));
const entry = `${root}dist/test/mock-backend/mock-backend.js`;

/** Builds the mock backend (bench/tsconfig.json) when its build is missing or older than a source. */
function ensureBuilt(): void {
  const built = existsSync(entry) ? statSync(entry).mtimeMs : 0;
  const stale = readdirSync(`${root}test/mock-backend`).some((f) => f.endsWith('.ts') && statSync(`${root}test/mock-backend/${f}`).mtimeMs > built);
  if (!stale) return;
  const tsc = spawnSync(process.execPath, [`${root}node_modules/typescript/bin/tsc`, '-p', `${root}bench/tsconfig.json`], { encoding: 'utf8' });
  if (tsc.status !== 0) throw new Error(`building bench failed:\n${tsc.stdout}${tsc.stderr}`);
}

interface Mock { proc: ChildProcess; url: string; firstLine: string }

async function startMock(args: string[], port = '0'): Promise<Mock> {
  const proc = spawn(process.execPath, [entry, '--port', port, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  const lines = createInterface({ input: proc.stdout! });
  const [firstLine] = (await once(lines, 'line')) as [string];
  const match = /^mock-backend listening on (http:\/\/127\.0\.0\.1:(\d+))$/.exec(firstLine);
  if (!match) throw new Error(`unexpected first line ${JSON.stringify(firstLine)}`);
  return { proc, url: match[1], firstLine };
}

async function stopMock(mock: Mock): Promise<number | null> {
  if (mock.proc.exitCode !== null) return mock.proc.exitCode;
  const exited = once(mock.proc, 'exit');
  mock.proc.kill('SIGTERM');
  const [code] = (await exited) as [number | null];
  return code;
}

function post(url: string, body: unknown, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
}

/** The JSON body of an answer, in the shape the mock claims to answer in (the assertions check it is). */
async function json<T>(res: Response): Promise<T> {
  return await res.json() as T;
}

/** The mock's error body. */
interface ErrorAnswer { error: { code: number; message: string; type: string } }

/** GET /stats: the mock's counters and the pod it answers as. */
type StatsAnswer = MockStats & { pod: string };

/** The `data:` payloads of an SSE body, in order. */
function sseData(text: string): string[] {
  return text.split('\n\n').filter((e) => e !== '').map((e) => {
    expect(e.startsWith('data: ')).toBe(true);
    return e.slice(6);
  });
}

const TOK16 = 'tok '.repeat(16);

describe('mock backend process (defaults)', () => {
  let mock: Mock;
  beforeAll(async () => {
    ensureBuilt();
    mock = await startMock(['--name', 'pod-a']);
  });
  afterAll(async () => {
    if (mock) expect(await stopMock(mock)).toBe(0);
  });

  it('a second mock on its port exits 2 naming it (the port is its own, no SO_REUSEPORT sharing)', async () => {
    // A port asked by number: one the kernel handed out for port 0 cannot be joined anyway.
    const port = await freePort();
    const first = await startMock([], String(port));
    try {
      const second = spawnSync(process.execPath, [entry, '--port', String(port)], { encoding: 'utf8', timeout: 20_000 });
      expect(second.status).toBe(2);
      expect(second.stderr).toContain(`mock-backend: mock backend could not listen on 127.0.0.1:${port} (in use by another process?)`);
    } finally {
      expect(await stopMock(first)).toBe(0);
    }
  });

  it('answers completions with OpenAI JSON, the request model and usage', async () => {
    const res = await post(`${mock.url}/v1/completions`, { model: 'llama-x', prompt: 'abcdefghi', temperature: 0 });
    expect(res.status).toBe(200);
    expect(res.headers.get('x-mock-pod')).toBe('pod-a');
    expect(res.headers.get('content-type')).toBe('application/json');
    const body = await json<OpenAI.Completion>(res);
    expect(body).toMatchObject({ object: 'text_completion', model: 'llama-x', pod: 'pod-a' });
    expect(typeof body.id).toBe('string');
    expect(typeof body.created).toBe('number');
    expect(body.choices).toEqual([{ index: 0, text: TOK16, logprobs: null, finish_reason: 'length' }]);
    expect(body.usage).toEqual({ prompt_tokens: 3, completion_tokens: 16, total_tokens: 19 }); // ceil(9/4)
  });

  it('answers chat completions, counting the messages content', async () => {
    const messages = [{ role: 'system', content: 'be brief' }, { role: 'user', content: [{ type: 'text', text: 'hello' }] }];
    const res = await post(`${mock.url}/v1/chat/completions`, { model: 'chat-m', messages }, { 'x-mock-output-tokens': '2' });
    const body = await json<OpenAI.ChatCompletion>(res);
    expect(body.object).toBe('chat.completion');
    expect(body.choices[0].message).toEqual({ role: 'assistant', content: 'tok tok ' });
    expect(body.usage).toEqual({ prompt_tokens: 4, completion_tokens: 2, total_tokens: 6 }); // ceil(13/4)
  });

  it('stops at the length the request allows, as a model server does: max_tokens (chat: max_completion_tokens first; responses: max_output_tokens)', async () => {
    const completion = await json<OpenAI.Completion>(await post(`${mock.url}/v1/completions`, { model: 'm', prompt: 'hi', max_tokens: 3 }));
    expect(completion.usage?.completion_tokens).toBe(3);
    expect(completion.choices[0].text).toBe('tok tok tok ');
    // Above the mock's own length, or not a positive integer: the mock's length.
    for (const max of [100, 0, -1, 2.5, '3']) {
      const b = await json<OpenAI.Completion>(await post(`${mock.url}/v1/completions`, { model: 'm', prompt: 'hi', max_tokens: max }));
      expect(b.usage?.completion_tokens, String(max)).toBe(16);
    }
    const messages = [{ role: 'user', content: 'hi' }];
    const chat = await json<OpenAI.ChatCompletion>(await post(`${mock.url}/v1/chat/completions`, { model: 'm', messages, max_tokens: 5, max_completion_tokens: 2 }));
    expect(chat.usage?.completion_tokens).toBe(2);
    const stream = sseData(await (await post(`${mock.url}/v1/chat/completions`, { model: 'm', messages, stream: true, max_tokens: 2 })).text());
    expect(stream).toHaveLength(3); // two token chunks, then [DONE]
    const responses = await json<{ usage: { output_tokens: number } }>(await post(`${mock.url}/v1/responses`, { model: 'm', input: 'hi', max_output_tokens: 4 }));
    expect(responses.usage.output_tokens).toBe(4);
    // A header's length is capped the same way.
    const capped = await json<OpenAI.Completion>(await post(`${mock.url}/v1/completions`, { model: 'm', prompt: 'hi', max_tokens: 2 }, { 'x-mock-output-tokens': '9' }));
    expect(capped.usage?.completion_tokens).toBe(2);
  });

  it('streams completions: one chunk per token, no usage unless asked, then [DONE]', async () => {
    const res = await post(`${mock.url}/v1/completions`, { model: 'm', prompt: 'hi', stream: true }, { 'x-mock-output-tokens': '4' });
    expect(res.headers.get('content-type')).toBe('text/event-stream');
    const data = sseData(await res.text());
    expect(data).toHaveLength(5);
    expect(data[4]).toBe('[DONE]');
    const chunks = data.slice(0, 4).map((d) => JSON.parse(d));
    for (const chunk of chunks) {
      expect(chunk.object).toBe('text_completion');
      expect(chunk.model).toBe('m');
      expect(chunk.choices[0].text).toBe('tok ');
      expect('usage' in chunk).toBe(false);
    }
    expect(chunks.map((c) => c.choices[0].finish_reason)).toEqual([null, null, null, 'length']);
  });

  it('streams chat with include_usage: usage:null on chunks, then a usage chunk with empty choices', async () => {
    const res = await post(`${mock.url}/v1/chat/completions`, {
      model: 'm', messages: [{ role: 'user', content: '12345678' }], stream: true, stream_options: { include_usage: true },
    }, { 'x-mock-output-tokens': '3' });
    const data = sseData(await res.text());
    expect(data).toHaveLength(5);
    expect(data[4]).toBe('[DONE]');
    const chunks = data.slice(0, 3).map((d) => JSON.parse(d));
    expect(chunks.map((c) => c.choices[0].delta.content).join('')).toBe('tok tok tok ');
    expect(chunks[0].choices[0].delta.role).toBe('assistant');
    for (const chunk of chunks) {
      expect(chunk.object).toBe('chat.completion.chunk');
      expect(chunk.usage).toBeNull();
    }
    const usage = JSON.parse(data[3]);
    expect(usage.choices).toEqual([]);
    expect(usage.usage).toEqual({ prompt_tokens: 2, completion_tokens: 3, total_tokens: 5 });
  });

  it('answers the Responses API in its shape: output items, usage.input_tokens/output_tokens', async () => {
    const res = await post(`${mock.url}/v1/responses`, {
      model: 'resp-m', instructions: 'be brief', input: [{ role: 'user', content: [{ type: 'input_text', text: 'hello' }] }],
    }, { 'x-mock-output-tokens': '2' });
    const body = await json<ResponsesAnswer>(res);
    expect(body).toMatchObject({ object: 'response', status: 'completed', model: 'resp-m', pod: 'pod-a' });
    expect(body.output).toEqual([{ id: `msg_${body.id}`, type: 'message', status: 'completed', role: 'assistant', content: [{ type: 'output_text', text: 'tok tok ', annotations: [], logprobs: [] }] }]);
    expect(body.usage).toEqual({ input_tokens: 4, input_tokens_details: { cached_tokens: 0 }, output_tokens: 2, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: 6 }); // ceil(13/4)
    expect(Object.keys(body).slice(-3)).toEqual(['usage', 'user', 'metadata']);
  });

  it('streams the Responses API as OpenAI documents it: typed events, deltas, usage in response.completed', async () => {
    const res = await post(`${mock.url}/v1/responses`, { model: 'm', input: '12345678', stream: true }, { 'x-mock-output-tokens': '3' });
    expect(res.headers.get('content-type')).toBe('text/event-stream');
    const events = (await res.text()).split('\n\n').filter((e) => e !== '').map((e) => {
      const [name, data] = e.split('\n');
      expect(name.startsWith('event: ') && data.startsWith('data: ')).toBe(true);
      const parsed = JSON.parse(data.slice(6));
      expect(parsed.type).toBe(name.slice(7));
      return parsed;
    });
    expect(events.map((e) => e.type)).toEqual([
      'response.created', 'response.in_progress', 'response.output_item.added', 'response.content_part.added',
      'response.output_text.delta', 'response.output_text.delta', 'response.output_text.delta',
      'response.output_text.done', 'response.content_part.done', 'response.output_item.done', 'response.completed',
    ]);
    expect(events.map((e) => e.sequence_number)).toEqual(events.map((_, i) => i));
    expect(events[0].response.usage).toBeNull();
    expect(events.filter((e) => e.type === 'response.output_text.delta').map((e) => e.delta).join('')).toBe('tok tok tok ');
    expect(events[7].text).toBe('tok tok tok ');
    expect(events[10].response.usage).toMatchObject({ input_tokens: 2, output_tokens: 3, total_tokens: 5 });
  });

  it('answers the status asked by x-mock-status with a JSON error body', async () => {
    for (const status of [429, 503]) {
      const res = await post(`${mock.url}/v1/completions`, { model: 'm', prompt: 'x' }, { 'x-mock-status': String(status) });
      expect(res.status).toBe(status);
      expect(res.headers.get('x-mock-pod')).toBe('pod-a');
      const body = await json<ErrorAnswer>(res);
      expect(body.error.code).toBe(status);
      expect(typeof body.error.message).toBe('string');
    }
    const bad = await post(`${mock.url}/v1/completions`, { model: 'm' }, { 'x-mock-status': 'soon' });
    expect(bad.status).toBe(400);
    expect((await json<ErrorAnswer>(bad)).error.message).toContain('x-mock-status');
  });

  it('answers after x-mock-latency-ms and rejects a non-JSON body with 400', async () => {
    const delayed = await post(`${mock.url}/v1/completions`, { model: 'late', prompt: '' }, { 'x-mock-latency-ms': '20' });
    expect((await json<OpenAI.Completion>(delayed)).model).toBe('late');
    const res = await fetch(`${mock.url}/v1/completions`, { method: 'POST', body: '{not json' });
    expect(res.status).toBe(400);
    // As vLLM (Python's json on bytes): a UTF-8 byte order mark before the JSON is skipped.
    const bom = await fetch(`${mock.url}/v1/completions`, { method: 'POST', body: '\ufeff{"model":"bom","prompt":""}' });
    expect(bom.status).toBe(200);
    expect((await json<OpenAI.Completion>(bom)).model).toBe('bom');
  });

  it('x-mock-close drops the connection; x-mock-hang never answers', async () => {
    await expect(post(`${mock.url}/v1/completions`, { model: 'm' }, { 'x-mock-close': '1' })).rejects.toThrow();

    await fetch(`${mock.url}/stats/reset`, { method: 'POST' });
    const controller = new AbortController();
    const hung = fetch(`${mock.url}/v1/completions`, {
      method: 'POST', body: '{"model":"hang"}', headers: { 'x-mock-hang': 'true' }, signal: controller.signal,
    });
    // Wait until the mock has the request, then give up on it: only the abort can end the fetch.
    for (;;) {
      const stats = await json<StatsAnswer>(await fetch(`${mock.url}/stats`));
      if (stats.requests === 1 && (stats.lastBody as { model?: string } | null)?.model === 'hang') break;
    }
    controller.abort();
    await expect(hung).rejects.toThrow(/abort/i);
  });

  it('x-mock-error-after: a stream with the server\'s own error event after N tokens, then [DONE], in each shape; the SDK raises the error shape', async () => {
    const headers = { 'x-mock-output-tokens': '4', 'x-mock-error-after': '2' };
    const res = await post(`${mock.url}/v1/completions`, { model: 'm', prompt: 'hi', stream: true }, headers);
    expect(res.status).toBe(200);
    const data = sseData(await res.text());
    expect(data).toHaveLength(4);
    expect(data.slice(0, 2).map((d) => JSON.parse(d).choices[0].text)).toEqual(['tok ', 'tok ']);
    expect(JSON.parse(data[2])).toEqual({ error: { message: 'mock backend pod-a failed the generation after 2 tokens', type: 'server_error', param: null, code: 'generation_failed' } });
    expect(data[3]).toBe('[DONE]');
    const vllm = sseData(await (await post(`${mock.url}/v1/chat/completions`, { model: 'm', messages: [{ role: 'user', content: 'x' }], stream: true }, { ...headers, 'x-mock-error-shape': 'vllm' })).text());
    expect(vllm[2]).toBe('{"error": {"object": "error", "message": "mock backend pod-a failed the generation after 2 tokens", "type": "InternalServerError", "param": null, "code": 500}}');
    const bare = sseData(await (await post(`${mock.url}/v1/completions`, { model: 'm', prompt: 'hi', stream: true }, { ...headers, 'x-mock-error-shape': 'object' })).text());
    expect(JSON.parse(bare[2])).toMatchObject({ object: 'error', message: 'mock backend pod-a failed the generation after 2 tokens' });
    const chunk = sseData(await (await post(`${mock.url}/v1/chat/completions`, { model: 'm', messages: [{ role: 'user', content: 'x' }], stream: true }, { ...headers, 'x-mock-error-shape': 'chunk' })).text());
    expect(Object.keys(JSON.parse(chunk[2]))).toEqual(['id', 'object', 'created', 'model', 'error', 'choices']);
    expect(JSON.parse(chunk[2])).toMatchObject({ error: { message: 'mock backend pod-a failed the generation after 2 tokens' }, choices: [{ finish_reason: 'error' }] });
    // llama.cpp's: an SSE field named error, not data.
    const llamacpp = (await (await post(`${mock.url}/v1/chat/completions`, { model: 'm', messages: [{ role: 'user', content: 'x' }], stream: true }, { ...headers, 'x-mock-error-shape': 'llamacpp' })).text()).split('\n\n');
    expect(llamacpp.slice(2)).toEqual(['error: {"code":500,"message":"mock backend pod-a failed the generation after 2 tokens","type":"server_error"}', 'data: [DONE]', '']);
    const client = new OpenAI({ baseURL: `${mock.url}/v1`, apiKey: 'unused', maxRetries: 0, defaultHeaders: headers });
    const stream = await client.chat.completions.create({ model: 'sdk-m', messages: [{ role: 'user', content: 'x' }], stream: true });
    const { text, err } = await readChatStream(stream);
    expect(text).toBe('tok tok ');
    expect(err).toBeInstanceOf(OpenAI.APIError);
    expect((err as InstanceType<typeof OpenAI.APIError>).message).toBe('mock backend pod-a failed the generation after 2 tokens');
  });

  it('x-mock-cut-after closes the connection after N events, without the stream\'s end (x-mock-cut-mid-event: within the next one); x-mock-stall-after sends nothing more', async () => {
    const request = (extra: string): string => {
      const body = JSON.stringify({ model: 'm', prompt: 'hi', stream: true });
      return `POST /v1/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\nx-mock-output-tokens: 4\r\n${extra}content-length: ${body.length}\r\n\r\n${body}`;
    };
    /** The SSE text of a chunked body so far (chunk sizes removed). */
    const sse = (text: string): string => text.slice(text.indexOf('\r\n\r\n') + 4).replace(/(^|\r\n)[0-9a-f]+\r\n/g, '$1').replace(/\r\n/g, '');
    const mockPort = Number(new URL(mock.url).port);
    const cut = await raw(mockPort, [request('x-mock-cut-after: 2\r\n')]);
    expect(cut.closed).toBe(true);
    expect(cut.text).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
    expect(cut.text).not.toMatch(/\r\n0\r\n\r\n$/);
    expect(sseData(sse(cut.text)).map((d) => JSON.parse(d).choices[0].text)).toEqual(['tok ', 'tok ']);
    const mid = await raw(mockPort, [request('x-mock-cut-after: 1\r\nx-mock-cut-mid-event: 1\r\n')]);
    expect(mid.closed).toBe(true);
    const [first, partial] = sse(mid.text).split('\n\n');
    expect(JSON.parse(first.slice('data: '.length)).choices[0].text).toBe('tok ');
    expect(partial.startsWith('data: {"id"')).toBe(true);
    expect(() => JSON.parse(partial.slice('data: '.length))).toThrow();
    const stalled = await raw(mockPort, [request('x-mock-stall-after: 1\r\n')], { waitMs: 500 });
    expect(stalled.closed).toBe(false);
    expect(sseData(sse(stalled.text))).toHaveLength(1);
  });

  it('rejects bad stream-failure headers with 400 naming them', async () => {
    const stream = { model: 'm', prompt: 'hi', stream: true };
    for (const [path, headers, named] of [
      ['/v1/completions', { 'x-mock-error-after': '2', 'x-mock-error-shape': 'xml' }, 'x-mock-error-shape'],
      ['/v1/completions', { 'x-mock-error-after': 'two' }, 'x-mock-error-after'],
      ['/v1/completions', { 'x-mock-error-after': '1', 'x-mock-cut-after': '1' }, 'exclude each other'],
      ['/v1/responses', { 'x-mock-error-after': '1' }, 'chat and completions'],
    ] as const) {
      const res = await post(`${mock.url}${path}`, path === '/v1/responses' ? { model: 'm', input: 'hi', stream: true } : stream, headers);
      expect(res.status).toBe(400);
      expect((await json<ErrorAnswer>(res)).error.message).toContain(named);
    }
  });

  it('reports and resets stats', async () => {
    await fetch(`${mock.url}/stats/reset`, { method: 'POST' });
    await post(`${mock.url}/v1/completions`, { model: 'a', prompt: 'p' });
    await post(`${mock.url}/v1/embeddings?a=1&b=two`, { model: 'b', input: 'q' }, { 'x-request-id': 'rid-1' });
    const stats = await json<StatsAnswer>(await fetch(`${mock.url}/stats`));
    expect(stats.requests).toBe(2);
    expect(stats.lastBody).toEqual({ model: 'b', input: 'q' });
    expect(stats.lastHeaders?.['x-request-id']).toBe('rid-1');
    expect(stats.lastHeaders?.['content-type']).toBe('application/json');
    expect(stats.lastPath).toBe('/v1/embeddings?a=1&b=two');
    expect(stats.metricsRequests).toBe(0);
    await (await fetch(`${mock.url}/metrics`)).text(); // counted, answered or not (404 here: no --metrics-engine)
    expect((await json<StatsAnswer>(await fetch(`${mock.url}/stats`))).metricsRequests).toBe(1);
    await fetch(`${mock.url}/stats/reset`, { method: 'POST' });
    expect(await (await fetch(`${mock.url}/stats`)).json()).toEqual({ pod: 'pod-a', requests: 0, lastBody: null, lastHeaders: null, lastPath: null, metricsRequests: 0 });
    const health = await fetch(`${mock.url}/healthz`);
    expect(health.status).toBe(200);
    expect((await fetch(`${mock.url}/nowhere`)).status).toBe(404);
  });

  it('works with the official openai client, streaming included', async () => {
    const client = new OpenAI({ baseURL: `${mock.url}/v1`, apiKey: 'unused', maxRetries: 0 });
    const completion = await client.completions.create({ model: 'sdk-m', prompt: 'say things' });
    expect(completion.choices[0].text).toBe(TOK16);
    expect(completion.usage?.completion_tokens).toBe(16);
    const stream = await client.chat.completions.create({
      model: 'sdk-m', messages: [{ role: 'user', content: 'x' }], stream: true, stream_options: { include_usage: true },
    });
    let text = '';
    let completionTokens = 0;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? '';
      if (chunk.usage) completionTokens = chunk.usage.completion_tokens;
    }
    expect(text).toBe(TOK16);
    expect(completionTokens).toBe(16);
    const answer = await client.responses.create({ model: 'sdk-m', input: 'say things' });
    expect(answer.output_text).toBe(TOK16);
    expect(answer.usage?.output_tokens).toBe(16);
    const events = await client.responses.create({ model: 'sdk-m', input: 'say things', stream: true });
    let deltas = '';
    let outputTokens = 0;
    for await (const event of events) {
      if (event.type === 'response.output_text.delta') deltas += event.delta;
      if (event.type === 'response.completed') outputTokens = event.response.usage?.output_tokens ?? 0;
    }
    expect(deltas).toBe(TOK16);
    expect(outputTokens).toBe(16);
  });

  it('answers embeddings in OpenAI\'s shape, one vector per input, base64 when asked (as the SDK asks); no output tokens', async () => {
    const client = new OpenAI({ baseURL: `${mock.url}/v1`, apiKey: 'unused', maxRetries: 0 });
    const sdk = await client.embeddings.create({ model: 'emb-m', input: ['one', 'three'] }); // encoding_format base64, decoded by the SDK
    expect(sdk.data.map((d) => [d.object, d.index, d.embedding.length])).toEqual([['embedding', 0, 8], ['embedding', 1, 8]]);
    expect(sdk.data[1].embedding[0]).toBe(1);
    expect(sdk.usage).toEqual({ prompt_tokens: 2, total_tokens: 2 }); // ceil(8/4)
    const floats = await json<OpenAI.CreateEmbeddingResponse>(await post(`${mock.url}/v1/embeddings`, { model: 'emb-m', input: 'abcde', encoding_format: 'float' }));
    expect(floats.object).toBe('list');
    expect(floats.data).toHaveLength(1);
    expect(floats.data[0].embedding).toHaveLength(8);
    expect(floats.usage).toEqual({ prompt_tokens: 2, total_tokens: 2 });
    const ids = await json<OpenAI.CreateEmbeddingResponse>(await post(`${mock.url}/v1/embeddings`, { model: 'emb-m', input: [[1, 2, 3], [4]] }));
    expect([ids.data.length, ids.usage]).toEqual([2, { prompt_tokens: 4, total_tokens: 4 }]);
  });
});

describe('mock backend process (flags)', () => {
  beforeAll(ensureBuilt);

  it('--no-usage omits usage from answers and streams; --output-tokens sets the length; pacing keeps content', async () => {
    const mock = await startMock(['--no-usage', '--output-tokens', '5', '--tokens-per-second', '2000', '--latency-ms', '1']);
    try {
      const answer = await json<OpenAI.Completion>(await post(`${mock.url}/v1/completions`, { model: 'm', prompt: 'x' }));
      expect(answer.choices[0].text).toBe('tok '.repeat(5));
      expect('usage' in answer).toBe(false);
      const res = await post(`${mock.url}/v1/chat/completions`, {
        model: 'm', messages: [], stream: true, stream_options: { include_usage: true },
      });
      const data = sseData(await res.text());
      expect(data).toHaveLength(6);
      expect(data.slice(0, 5).every((d) => JSON.parse(d).choices.length === 1)).toBe(true);
      expect(data[5]).toBe('[DONE]');
    } finally {
      expect(await stopMock(mock)).toBe(0);
    }
  });

  it('--answer-shape vllm and sglang answer in that server\'s member order, with members after usage', async () => {
    const vllm = await startMock(['--answer-shape', 'vllm', '--output-tokens', '3']);
    const sglang = await startMock(['--answer-shape=sglang', '--output-tokens', '3']);
    try {
      const chat = await (await post(`${vllm.url}/v1/chat/completions`, { model: 'm', messages: [{ role: 'user', content: 'abcd' }] })).text();
      expect(Object.keys(JSON.parse(chat))).toEqual([
        'id', 'object', 'created', 'model', 'pod', 'choices', 'service_tier', 'system_fingerprint', 'usage', 'prompt_logprobs', 'prompt_token_ids', 'kv_transfer_params',
      ]);
      expect(chat.endsWith('"usage":{"prompt_tokens":1,"total_tokens":4,"completion_tokens":3,"prompt_tokens_details":null},'
        + '"prompt_logprobs":null,"prompt_token_ids":null,"kv_transfer_params":null}')).toBe(true);
      expect(JSON.parse(chat).choices[0].message.content).toBe('tok tok tok ');
      const completion = await json<OpenAI.Completion>(await post(`${vllm.url}/v1/completions`, { model: 'm', prompt: 'x' }));
      expect(Object.keys(completion).slice(-2)).toEqual(['usage', 'kv_transfer_params']);
      expect(completion.choices[0].text).toBe('tok tok tok ');
      const sg = await (await post(`${sglang.url}/v1/chat/completions`, { model: 'm', messages: [] })).text();
      expect(sg.endsWith('"usage":{"prompt_tokens":0,"total_tokens":3,"completion_tokens":3,"prompt_tokens_details":null,"reasoning_tokens":0},'
        + '"metadata":{"weight_version":"default"}}')).toBe(true);
    } finally {
      expect(await stopMock(vllm)).toBe(0);
      expect(await stopMock(sglang)).toBe(0);
    }
    const bad = spawnSync(process.execPath, [entry, '--answer-shape', 'tgi'], { encoding: 'utf8' });
    expect(bad.status).not.toBe(0);
    expect(bad.stderr).toContain('--answer-shape must be openai, vllm, sglang or llamacpp');
  });

  it('--answer-shape llamacpp streams the usage, and timings, on the last token chunk when asked, and no usage chunk', async () => {
    const mock = await startMock(['--answer-shape', 'llamacpp', '--output-tokens', '3']);
    try {
      const body = { model: 'm', messages: [{ role: 'user', content: 'abcd' }], stream: true };
      const asked = sseData(await (await post(`${mock.url}/v1/chat/completions`, { ...body, stream_options: { include_usage: true } })).text());
      expect(asked).toHaveLength(4);
      expect(asked.slice(0, 2).every((d) => !('usage' in JSON.parse(d)))).toBe(true);
      const last = JSON.parse(asked[2]);
      expect(last.choices[0].finish_reason).toBe('length');
      expect(Object.keys(last).slice(-2)).toEqual(['usage', 'timings']);
      expect(last.usage).toEqual({ prompt_tokens: 1, completion_tokens: 3, total_tokens: 4 });
      expect(asked[3]).toBe('[DONE]');
      const notAsked = sseData(await (await post(`${mock.url}/v1/chat/completions`, body)).text());
      expect(notAsked).toHaveLength(4);
      expect(notAsked.slice(0, 3).every((d) => !('usage' in JSON.parse(d)))).toBe(true);
      const whole = await (await post(`${mock.url}/v1/chat/completions`, { model: 'm', messages: [] })).json() as Record<string, unknown>;
      expect(Object.keys(whole).at(-1)).toBe('usage');
    } finally {
      expect(await stopMock(mock)).toBe(0);
    }
  });

  it('--fail-rate 1 answers 500 to every inference request', async () => {
    const mock = await startMock(['--fail-rate', '1']);
    try {
      for (let i = 0; i < 3; i++) {
        const res = await post(`${mock.url}/v1/completions`, { model: 'm', prompt: 'x' });
        expect(res.status).toBe(500);
        expect((await json<ErrorAnswer>(res)).error.type).toBe('server_error');
      }
      expect((await fetch(`${mock.url}/healthz`)).status).toBe(200);
    } finally {
      expect(await stopMock(mock)).toBe(0);
    }
  });

  it('POST /fail-rate changes the fail rate while it runs; x-mock-retry-after adds retry-after to an error', async () => {
    const mock = await startMock(['--fail-rate', '1']);
    try {
      expect((await post(`${mock.url}/v1/completions`, { model: 'm', prompt: 'x' })).status).toBe(500);
      const bad = await fetch(`${mock.url}/fail-rate?rate=2`, { method: 'POST' });
      expect(bad.status).toBe(400);
      expect((await json<ErrorAnswer>(bad)).error.message).toContain('rate');
      const set = await fetch(`${mock.url}/fail-rate?rate=0`, { method: 'POST' });
      expect(await set.json()).toEqual({ failRate: 0 });
      expect((await post(`${mock.url}/v1/completions`, { model: 'm', prompt: 'x' })).status).toBe(200);
      const busy = await post(`${mock.url}/v1/completions`, { model: 'm', prompt: 'x' }, { 'x-mock-status': '503', 'x-mock-retry-after': '2' });
      expect(busy.status).toBe(503);
      expect(busy.headers.get('retry-after')).toBe('2');
      const plain = await post(`${mock.url}/v1/completions`, { model: 'm', prompt: 'x' }, { 'x-mock-status': '503' });
      expect(plain.headers.get('retry-after')).toBeNull();
    } finally {
      expect(await stopMock(mock)).toBe(0);
    }
  });

  it('rejects unknown or bad flags with exit code 2 and a message naming the flag', () => {
    for (const [args, text] of [[['--bogus'], '--bogus'], [['--fail-rate', '2'], '--fail-rate'], [['--port'], '--port']] as const) {
      const run = spawnSync(process.execPath, [entry, ...args], { encoding: 'utf8' });
      expect(run.status).toBe(2);
      expect(run.stderr).toContain(text);
      expect(run.stdout).toBe('');
    }
  });
});
