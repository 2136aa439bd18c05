import { createServer, type Server, type ServerResponse } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { accessLogRecords, listenLocal, resourcesFor, startLoggedRouter, waitFor, type LoggedRouter } from '../helpers/processes.js';
import { sample } from '../helpers/metrics-text.js';

/**
 * JSON answers larger than the 8 MiB the router keeps whole: their usage is read from their last
 * bytes, so their output tokens are logged and charged to the route's limit as a smaller answer's
 * are; one whose end holds no usage is counted in inference_router_usage_unread_total.
 */

/** Generated text of the answers: more than the router keeps whole. */
const TEXT = 'lorem ipsum dolor sit amet '.repeat(Math.ceil((9 * 1024 * 1024) / 27));
const COMPLETION_TOKENS = 5000;
const USAGE = `"usage":{"prompt_tokens":11,"total_tokens":${11 + COMPLETION_TOKENS},"completion_tokens":${COMPLETION_TOKENS},"prompt_tokens_details":null}`;
/** vLLM's member order: usage, then its own small members. */
const CHAT_ANSWER = `{"id":"chatcmpl-1","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"${TEXT}"},"finish_reason":"length"}],${USAGE},"prompt_logprobs":null,"kv_transfer_params":null}`;
/** The usage first: the answer's end does not hold it. */
const USAGE_FIRST = `{${USAGE},"id":"chatcmpl-2","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"${TEXT}"},"finish_reason":"length"}]}`;
/** The Responses API: usage with nested details, then user and metadata. */
const RESPONSES_ANSWER = `{"id":"resp_1","object":"response","status":"completed","output":[{"type":"message","role":"assistant","content":[{"type":"output_text","text":"${TEXT}","annotations":[]}]}],"usage":{"input_tokens":11,"input_tokens_details":{"cached_tokens":0},"output_tokens":${COMPLETION_TOKENS},"output_tokens_details":{"reasoning_tokens":0},"total_tokens":${11 + COMPLETION_TOKENS}},"user":null,"metadata":{}}`;

/** Small answers that are to be JSON and are not: cut short, and with bytes after the object. */
const SMALL = '{"id":"c","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3}}';
const CUT = SMALL.slice(0, -20);
const TRAILING = `${SMALL} and more`;

/** A large answer that is not JSON (speech): it has no usage to look for. */
const AUDIO = Buffer.alloc(9 * 1024 * 1024, 0xff);

/** Writes `body` in pieces of 64 KiB: with its content-length, or chunked (none). */
function answer(res: ServerResponse, body: string, withLength: boolean): void {
  const b = Buffer.from(body);
  res.writeHead(200, withLength ? { 'content-type': 'application/json', 'content-length': String(b.length) } : { 'content-type': 'application/json' });
  for (let i = 0; i < b.length; i += 65536) res.write(b.subarray(i, i + 65536));
  res.end();
}

const ROUTES = `---
apiVersion: networking.serving.volcano.sh/v1alpha1
kind: ModelRoute
metadata: { name: big-route, namespace: default }
spec:
  modelName: big-model
  rules: [{ name: r, targetModels: [{ modelServerName: sf-server }] }]
  rateLimit: { inputTokensPerUnit: 1000000, outputTokensPerUnit: ${COMPLETION_TOKENS + 1000}, unit: day }
`;

describe('JSON answers larger than the router keeps whole', () => {
  let backend: Server;
  let router: LoggedRouter;

  beforeAll(async () => {
    backend = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        const scenario = String(req.headers['x-scenario']);
        if (scenario === 'usage-first') answer(res, USAGE_FIRST, true);
        else if (scenario === 'cut') answer(res, CUT, true);
        else if (scenario === 'trailing') answer(res, TRAILING, false);
        else if (scenario === 'audio') {
          res.writeHead(200, { 'content-type': 'audio/mpeg', 'content-length': String(AUDIO.length) });
          res.end(AUDIO);
        }
        else if (req.url === '/v1/responses') answer(res, RESPONSES_ANSWER, false);
        else answer(res, CHAT_ANSWER, scenario === 'length');
      });
    });
    const port = await listenLocal(backend);
    router = await startLoggedRouter(resourcesFor([{ name: 'pod-a', port }], { extraRoutes: ROUTES }));
  }, 90_000);
  afterAll(async () => {
    await router?.kill('SIGKILL');
    await new Promise<void>((r) => backend.close(() => r()));
  });

  async function post(path: string, model: string, id: string, scenario: string): Promise<{ status: number; body: string }> {
    const res = await fetch(`${router.url}${path}`, {
      method: 'POST', headers: { 'content-type': 'application/json', 'x-request-id': id, 'x-scenario': scenario },
      body: JSON.stringify(path === '/v1/responses' ? { model, input: 'hi' } : { model, messages: [{ role: 'user', content: 'hi' }] }),
    });
    return { status: res.status, body: await res.text() };
  }

  const record = (id: string): Promise<any> => waitFor(`access record ${id}`, () => accessLogRecords(router.logFile).find((r) => r.request_id === id));

  it('reads the usage at the end of an answer with a content-length and of a chunked one, forwarded whole', async () => {
    for (const scenario of ['length', 'chunked']) {
      const a = await post('/v1/chat/completions', 'sf-model', `big-${scenario}`, scenario);
      expect(a.status).toBe(200);
      expect(a.body).toBe(CHAT_ANSWER);
      const r = await record(`big-${scenario}`);
      expect(r.output_tokens).toBe(COMPLETION_TOKENS);
      expect(r.input_tokens).toBe(11);
    }
    const b = await post('/v1/responses', 'sf-model', 'big-responses', 'chunked');
    expect(b.status).toBe(200);
    expect(b.body.length).toBe(RESPONSES_ANSWER.length);
    const r = await record('big-responses');
    expect(r.output_tokens).toBe(COMPLETION_TOKENS);
    expect(r.input_tokens).toBe(11);
  }, 60_000);

  it('charges the output read there to the route\'s limit: the next request is refused once it is spent', async () => {
    expect((await post('/v1/chat/completions', 'big-model', 'limit-1', 'length')).status).toBe(200);
    expect((await record('limit-1')).output_tokens).toBe(COMPLETION_TOKENS);
    // 5,000 of 6,000 spent: admitted, and spends 5,000 more.
    expect((await post('/v1/chat/completions', 'big-model', 'limit-2', 'chunked')).status).toBe(200);
    await record('limit-2');
    const refused = await post('/v1/chat/completions', 'big-model', 'limit-3', 'length');
    expect(refused.status).toBe(429);
    expect(refused.body).toContain('output token rate limit exceeded');
  }, 60_000);

  it('a JSON answer whose end holds no usage, or that is not JSON, is forwarded whole and counted as unread; a large answer of another type is not', async () => {
    const metric = async (): Promise<number> =>
      sample(await (await fetch(`${router.url}/metrics`)).text(), 'inference_router_usage_unread_total{route="default/sf-route"}') ?? -1;
    expect(await metric()).toBe(0);
    // Not JSON: nothing to read, nothing unread.
    const speech = await post('/v1/audio/speech', 'sf-model', 'speech', 'audio');
    expect(speech.status).toBe(200);
    expect((await record('speech')).status_code).toBe(200);
    expect(await metric()).toBe(0);
    const a = await post('/v1/chat/completions', 'sf-model', 'usage-first', 'usage-first');
    expect(a.status).toBe(200);
    expect(a.body).toBe(USAGE_FIRST);
    const r = await record('usage-first');
    expect(r.output_tokens).toBe(0);
    expect(r.status_code).toBe(200);
    await waitFor('the unread answer counted', async () => (await metric()) === 1);
    // A small answer that is to be JSON and is not (cut short, bytes after it): forwarded as it
    // came, its output not known, counted as unread too.
    for (const [scenario, body] of [['cut', CUT], ['trailing', TRAILING]]) {
      const s = await post('/v1/chat/completions', 'sf-model', scenario, scenario);
      expect([s.status, s.body]).toEqual([200, body]);
      expect((await record(scenario)).output_tokens).toBe(0);
    }
    await waitFor('the two counted', async () => (await metric()) === 3);
  }, 60_000);
});
