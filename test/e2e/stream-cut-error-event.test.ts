import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { raw } from '../helpers/raw-http.js';
import { accessLogRecords, resourcesFor, startLoggedRouter, startMock, waitFor, type LoggedRouter, type MockBackend } from '../helpers/processes.js';
import { readChatStream } from '../helpers/sdk-stream.js';

/**
 * A stream the router has to cut partway (the pod closes its connection, or goes silent past the
 * ModelServer's timeout between chunks, or the router's drain reaches ROUTER_DRAIN_TIMEOUT) ends
 * with one more event, the error in the OpenAI shape, which the SDKs raise, before the connection
 * is closed without the stream's last chunk. Only where it leaves the events the client got whole.
 */

interface Cut {
  status: number;
  /** The SSE text of the chunked body, its chunks joined. */
  sse: string;
  /** The body ended with its last chunk. */
  ended: boolean;
  closed: boolean;
}

/** Sends one streamed completion request on a raw connection; reads the answer until the router closes it. */
async function cutStream(port: number, headers: Record<string, string>, body: object = {}): Promise<Cut> {
  const json = JSON.stringify({ model: 'sf-model', prompt: 'hi', stream: true, ...body });
  const head = Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`).join('');
  const r = await raw(port, [`POST /v1/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n${head}content-length: ${json.length}\r\n\r\n${json}`], { waitMs: 30_000 });
  const split = r.text.indexOf('\r\n\r\n');
  let at = split + 4;
  let sse = '';
  let ended = false;
  for (;;) {
    const line = r.text.indexOf('\r\n', at);
    if (line === -1) break;
    const size = parseInt(r.text.slice(at, line), 16);
    if (size === 0) {
      ended = true;
      break;
    }
    sse += r.text.slice(line + 2, line + 2 + size);
    at = line + 2 + size + 2;
  }
  return { status: Number(r.text.slice(9, 12)), sse: Buffer.from(sse, 'latin1').toString('utf8'), ended, closed: r.closed };
}

/** The data of the stream's complete events, and what follows the last one. */
function eventsOf(sse: string): { data: string[]; rest: string } {
  const parts = sse.split('\n\n');
  const rest = parts.pop()!;
  return { data: parts.map((e) => e.slice('data: '.length)), rest };
}

describe('a stream cut partway ends with the router\'s error event', () => {
  let mock: MockBackend;
  let router: LoggedRouter;
  const recordOf = (id: string) => waitFor(`the record of ${id}`, () => accessLogRecords(router.logFile).find((r) => r.request_id === id));

  beforeAll(async () => {
    mock = await startMock('pod-a');
    router = await startLoggedRouter(resourcesFor([{ name: 'pod-a', port: mock.port }], { timeout: '1s' }), { env: { ACCESS_LOG_FLUSH_INTERVAL: '0' } });
  }, 90_000);
  afterAll(async () => {
    await router?.kill();
    await mock?.kill();
  });

  it('the pod closes its connection after two events: they, then upstream_failed, then the close without the last chunk', async () => {
    const cut = await cutStream(router.port, { 'x-request-id': 'cut-closed', 'x-mock-output-tokens': '8', 'x-mock-cut-after': '2' });
    expect([cut.status, cut.ended, cut.closed]).toEqual([200, false, true]);
    const { data, rest } = eventsOf(cut.sse);
    expect(rest).toBe('');
    expect(data).toHaveLength(3);
    expect(data.slice(0, 2).map((d) => JSON.parse(d).choices[0].text)).toEqual(['tok ', 'tok ']);
    const error = JSON.parse(data[2]).error;
    expect(error).toMatchObject({ type: 'upstream_error', param: null, code: 'upstream_failed' });
    expect(error.message).toMatch(/^upstream failed on pod pod-a: /);
    const r = await recordOf('cut-closed');
    expect(r).toMatchObject({ status_code: 200, error: { type: 'upstream_error', message: `${error.message} (after the response started)` } });
  });

  it('the pod goes silent past the 1 s timeout between chunks: timeout / upstream_timeout', async () => {
    const cut = await cutStream(router.port, { 'x-request-id': 'cut-stalled', 'x-mock-output-tokens': '8', 'x-mock-stall-after': '2' });
    expect([cut.status, cut.ended, cut.closed]).toEqual([200, false, true]);
    const { data, rest } = eventsOf(cut.sse);
    expect(rest).toBe('');
    expect(data).toHaveLength(3);
    expect(JSON.parse(data[2])).toEqual({ error: { message: 'inference timed out after 1s', type: 'timeout', param: null, code: 'upstream_timeout' } });
    expect(await recordOf('cut-stalled')).toMatchObject({ status_code: 200, error: { type: 'timeout', message: 'inference timed out after 1s (after the response started)' } });
  });

  it('cut within an event, the client having asked for the usage itself (events forwarded as they come): no event, the partial one is left as it came', async () => {
    const cut = await cutStream(router.port, { 'x-request-id': 'cut-mid-event', 'x-mock-output-tokens': '8', 'x-mock-cut-after': '2', 'x-mock-cut-mid-event': '1' },
      { stream_options: { include_usage: true } });
    expect([cut.status, cut.ended, cut.closed]).toEqual([200, false, true]);
    const { data, rest } = eventsOf(cut.sse);
    expect(data).toHaveLength(2);
    expect(rest.startsWith('data: {"id"')).toBe(true);
    expect(rest).not.toContain('"error"');
    expect(await recordOf('cut-mid-event')).toMatchObject({ status_code: 200, error: { type: 'upstream_error' } });
  });

  it('cut within an event the router holds back (it removes the usage it asked for): the event, after the whole ones', async () => {
    const cut = await cutStream(router.port, { 'x-request-id': 'cut-mid-held', 'x-mock-output-tokens': '8', 'x-mock-cut-after': '2', 'x-mock-cut-mid-event': '1' });
    const { data, rest } = eventsOf(cut.sse);
    expect(rest).toBe('');
    expect(data).toHaveLength(3);
    expect(JSON.parse(data[2]).error.code).toBe('upstream_failed');
  });

  it('the openai SDK raises it as an APIError with the router\'s message, type and code, after the text it got', async () => {
    const client = new OpenAI({ baseURL: `${router.url}/v1`, apiKey: 'unused', maxRetries: 0, defaultHeaders: { 'x-mock-output-tokens': '8', 'x-mock-cut-after': '3' } });
    const stream = await client.chat.completions.create({ model: 'sf-model', messages: [{ role: 'user', content: 'hi' }], stream: true });
    const { text, err } = await readChatStream(stream);
    expect(text).toBe('tok tok tok ');
    expect(err).toBeInstanceOf(OpenAI.APIError);
    const e = err as InstanceType<typeof OpenAI.APIError>;
    expect(e.message).toMatch(/^upstream failed on pod pod-a: /);
    expect([e.type, e.code]).toEqual(['upstream_error', 'upstream_failed']);
  });
});

describe('a stream the drain cuts at ROUTER_DRAIN_TIMEOUT', () => {
  it('ends with router_stopping, the router named as the cause, not the pod', async () => {
    // 200 tokens at 20 a second: 10 s, beyond the 1 s drain timeout.
    const slow = await startMock('pod-slow', ['--tokens-per-second', '20', '--output-tokens', '200']);
    const router = await startLoggedRouter(resourcesFor([{ name: 'pod-slow', port: slow.port }]), { env: { ROUTER_DRAIN_TIMEOUT: '1s' } });
    try {
      const answer = cutStream(router.port, { 'x-request-id': 'drain-cut' });
      await waitFor('the stream under way', async () => (await slow.stats()).requests === 1);
      // Its events go on for the drain timeout (1 s) after this: some reach the client before the cut.
      router.child.kill('SIGTERM');
      const cut = await answer;
      expect(await router.exited).toBe(0);
      expect([cut.status, cut.ended, cut.closed]).toEqual([200, false, true]);
      const { data, rest } = eventsOf(cut.sse);
      expect(rest).toBe('');
      const message = 'the router is stopping: ROUTER_DRAIN_TIMEOUT (1000 ms) passed; the router cut its exchange with pod pod-slow';
      expect(JSON.parse(data.at(-1)!)).toEqual({ error: { message, type: 'upstream_error', param: null, code: 'router_stopping' } });
      expect(data.length).toBeGreaterThan(1);
      const r = accessLogRecords(router.logFile).find((x) => x.request_id === 'drain-cut');
      expect(r).toMatchObject({ status_code: 200, error: { type: 'upstream_error', message: `${message} (after the response started)` } });
    } finally {
      await router.kill('SIGKILL');
      await slow.kill();
    }
  }, 60_000);
});
