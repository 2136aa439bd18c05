import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { accessLogRecords, postFresh, postJson, resourcesFor, startLoggedRouter, startMock, tempDir, waitFor, writeFile, type LoggedRouter, type MockBackend } from '../helpers/processes.js';
import { sha256Hex } from '../unit/auth/jwks-server.js';

const KEY = 'sk-sdk-e2e-0123456789';
const KEY_SF_ONLY = 'sk-sdk-e2e-sf-only-987';
const TEXT = 'text/plain; charset=utf-8';
const LIMITED_PROMPT = 'San Francisco is a'; // more input tokens than the whole limit of tight-in

function route(model: string, rateLimit = ''): string {
  return `---
apiVersion: networking.serving.volcano.sh/v1alpha1
kind: ModelRoute
metadata: { name: ${model}-route, namespace: default }
spec:
  modelName: ${model}
  rules: [{ name: r, targetModels: [{ modelServerName: sf-server }] }]
${rateLimit}`;
}

/** Calls fn, which must throw; returns the error. */
async function failure(fn: () => Promise<unknown>): Promise<unknown> {
  try {
    await fn();
  } catch (err) {
    return err;
  }
  throw new Error('expected the call to fail');
}

type LogRecord = { request_id: string; status_code: number; error?: { type: string; message: string } };

describe('router-made errors as the official openai SDK sees them (JSON), and as curl sees them (text)', () => {
  let mock: MockBackend;
  let router: LoggedRouter;
  let client: OpenAI;

  beforeAll(async () => {
    mock = await startMock('pod-a');
    const dir = tempDir();
    const authFile = join(dir, 'auth.yaml');
    writeFile(authFile, `apiKeys:
  - name: all
    sha256: "${sha256Hex(KEY)}"
  - name: sf-only
    sha256: "${sha256Hex(KEY_SF_ONLY)}"
    models: ["sf-model"]
`);
    const extra = route('tight-in', '  rateLimit:\n    inputTokensPerUnit: 3\n    unit: day\n')
      + route('tight-out', '  rateLimit:\n    outputTokensPerUnit: 20\n    unit: day\n');
    // One worker: the output charge of an answer reaches the limiter before the next request.
    router = await startLoggedRouter(resourcesFor([{ name: 'pod-a', port: mock.port }], { extraRoutes: extra }), { dir, env: { ROUTER_AUTH_CONFIG: authFile } });
    client = new OpenAI({ baseURL: `${router.url}/v1`, apiKey: KEY, maxRetries: 0 });
  });
  afterAll(async () => {
    await router?.kill();
    await mock?.kill();
  });

  it('RateLimitError for the input limit carries type, code, message and the limit headers', async () => {
    const err = await failure(() => client.completions.create({ model: 'tight-in', prompt: LIMITED_PROMPT }));
    expect(err).toBeInstanceOf(OpenAI.RateLimitError);
    const e = err as InstanceType<typeof OpenAI.RateLimitError>;
    expect(e.status).toBe(429);
    expect(e.type).toBe('rate_limit');
    expect(e.code).toBe('input_tokens_exceeded');
    expect(e.param).toBeNull();
    expect(e.error).toEqual({ message: 'input token rate limit exceeded', type: 'rate_limit', param: null, code: 'input_tokens_exceeded' });
    expect(e.headers.get('content-type')).toBe('application/json');
    expect(Number(e.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(e.headers.get('x-should-retry')).toBe('false'); // the prompt can never fit
    expect(e.headers.get('x-ratelimit-limit-input-tokens')).toBe('3');
  });

  it('RateLimitError for the output limit says output_tokens_exceeded', async () => {
    for (let i = 0; i < 2; i++) {
      const ok = await client.completions.create({ model: 'tight-out', prompt: 'x' });
      expect(ok.usage?.completion_tokens).toBe(16);
    }
    const err = await failure(() => client.completions.create({ model: 'tight-out', prompt: 'x' }));
    expect(err).toBeInstanceOf(OpenAI.RateLimitError);
    const e = err as InstanceType<typeof OpenAI.RateLimitError>;
    expect([e.type, e.code, e.error]).toEqual(['rate_limit', 'output_tokens_exceeded',
      { message: 'output token rate limit exceeded', type: 'rate_limit', param: null, code: 'output_tokens_exceeded' }]);
  });

  it('NotFoundError for a model no route serves', async () => {
    const err = await failure(() => client.chat.completions.create({ model: 'nope', messages: [{ role: 'user', content: 'hi' }] }));
    expect(err).toBeInstanceOf(OpenAI.NotFoundError);
    const e = err as InstanceType<typeof OpenAI.NotFoundError>;
    expect([e.status, e.type, e.code, e.message]).toEqual([404, 'model_not_found', 'model_not_found', '404 model "nope" is not served by any route; served: "sf-model", "tight-in", "tight-out"']);
  });

  it('NotFoundError naming the served model meant, for a model name in another case or misspelt', async () => {
    for (const [asked, meant] of [['SF-Model', 'sf-model'], ['tight-inn', 'tight-in']]) {
      const err = await failure(() => client.chat.completions.create({ model: asked, messages: [{ role: 'user', content: 'hi' }] }));
      expect(err).toBeInstanceOf(OpenAI.NotFoundError);
      const e = err as InstanceType<typeof OpenAI.NotFoundError>;
      expect([e.status, e.code, (e.error as { message?: string } | undefined)?.message]).toEqual([404, 'model_not_found',
        `model "${asked}" is not served by any route (did you mean "${meant}"?); served: "sf-model", "tight-in", "tight-out"`]);
    }
  });

  it('NotFoundError naming /v1 for a client whose base URL lacks it', async () => {
    const noV1 = new OpenAI({ baseURL: router.url, apiKey: KEY, maxRetries: 0 });
    const err = await failure(() => noV1.chat.completions.create({ model: 'sf-model', messages: [{ role: 'user', content: 'hi' }] }));
    expect(err).toBeInstanceOf(OpenAI.NotFoundError);
    const e = err as InstanceType<typeof OpenAI.NotFoundError>;
    expect([e.status, e.type, e.code]).toEqual([404, 'invalid_request', 'unknown_endpoint']);
    expect(e.message).toBe('404 no such path: /chat/completions; did you mean /v1/chat/completions? '
      + 'An OpenAI client\'s base URL ends in /v1 (http://<router>:<port>/v1)');
  });

  it('NotFoundError naming the path meant for a client that adds /v1 to a base URL ending in /v1; not forwarded, recorded', async () => {
    const before = (await mock.stats()).requests;
    const twice = new OpenAI({ baseURL: `${router.url}/v1/v1`, apiKey: KEY, maxRetries: 0, defaultHeaders: { 'x-request-id': 'v1-twice-json' } });
    const err = await failure(() => twice.chat.completions.create({ model: 'sf-model', messages: [{ role: 'user', content: 'hi' }] }));
    expect(err).toBeInstanceOf(OpenAI.NotFoundError);
    const e = err as InstanceType<typeof OpenAI.NotFoundError>;
    expect([e.status, e.type, e.code]).toEqual([404, 'invalid_request', 'unknown_endpoint']);
    expect(e.message).toBe('404 no such path: /v1/v1/chat/completions; the path has /v1 twice: did you mean /v1/chat/completions? '
      + 'An OpenAI client\'s base URL ends in /v1 once (http://<router>:<port>/v1)');
    const text = await postFresh(`${router.url}/v1/v1/completions?x=1`, { model: 'sf-model', prompt: 'x' }, { authorization: `Bearer ${KEY}`, 'x-request-id': 'v1-twice-text' });
    expect([text.status, text.headers['content-type'], text.headers['x-request-id'], text.text]).toEqual([404, TEXT, 'v1-twice-text',
      'no such path: /v1/v1/completions; the path has /v1 twice: did you mean /v1/completions? An OpenAI client\'s base URL ends in /v1 once (http://<router>:<port>/v1)']);
    const get = await fetch(`${router.url}/v1/v1/models`);
    expect([get.status, await get.text()]).toEqual([404, 'no such path: /v1/v1/models; the path has /v1 twice: did you mean /v1/models? '
      + 'An OpenAI client\'s base URL ends in /v1 once (http://<router>:<port>/v1)']);
    expect((await mock.stats()).requests).toBe(before);
    const records = (): LogRecord[] => readFileSync(router.logFile, 'utf8').split('\n').filter((l) => l.length > 0).map((l) => JSON.parse(l) as LogRecord);
    const [j, t] = await waitFor('both records', () => {
      const all = records();
      const pair = [all.find((r) => r.request_id === 'v1-twice-json'), all.find((r) => r.request_id === 'v1-twice-text')];
      return pair[0] && pair[1] ? pair as LogRecord[] : null;
    }, 5000);
    expect([j.status_code, j.error?.type]).toEqual([404, 'invalid_request']);
    expect([t.status_code, t.error?.message]).toEqual([404, 'no such path: /v1/v1/completions; the path has /v1 twice: did you mean /v1/completions? '
      + 'An OpenAI client\'s base URL ends in /v1 once (http://<router>:<port>/v1)']);
  });

  it('a misspelt endpoint (/v1/chat/completion) is answered 404 naming the one meant, not forwarded to a pod', async () => {
    const before = (await mock.stats()).requests;
    const text = await postFresh(`${router.url}/v1/chat/completion`, { model: 'sf-model', messages: [{ role: 'user', content: 'hi' }] },
      { authorization: `Bearer ${KEY}`, 'x-request-id': 'misspelt-text' });
    expect([text.status, text.headers['content-type'], text.text]).toEqual([404, TEXT, 'no such path: /v1/chat/completion; did you mean /v1/chat/completions?']);
    const json = await fetch(`${router.url}/v1/completion?x=1`, {
      method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json', authorization: `Bearer ${KEY}` }, body: '{"model":"sf-model","prompt":"x"}',
    });
    expect(json.status).toBe(404);
    expect(await json.json()).toMatchObject({ error: { message: 'no such path: /v1/completion; did you mean /v1/completions?', type: 'invalid_request', code: 'unknown_endpoint' } });
    expect((await mock.stats()).requests).toBe(before);
    const record = await waitFor('its record', () => (accessLogRecords(router.logFile) as LogRecord[]).find((r) => r.request_id === 'misspelt-text') ?? null, 5000);
    expect([record.status_code, record.error?.message]).toEqual([404, 'no such path: /v1/chat/completion; did you mean /v1/chat/completions?']);
  });

  it('AuthenticationError for an unknown key, with www-authenticate', async () => {
    const wrong = new OpenAI({ baseURL: `${router.url}/v1`, apiKey: 'sk-not-a-key', maxRetries: 0 });
    const err = await failure(() => wrong.completions.create({ model: 'sf-model', prompt: 'x' }));
    expect(err).toBeInstanceOf(OpenAI.AuthenticationError);
    const e = err as InstanceType<typeof OpenAI.AuthenticationError>;
    expect([e.status, e.type, e.code]).toEqual([401, 'authentication_failed', 'invalid_credentials']);
    expect(e.error).toMatchObject({ message: 'invalid credentials: unknown API key' });
    expect(e.headers.get('www-authenticate')).toBe('Bearer error="invalid_token"');
  });

  it('PermissionDeniedError for a model the key may not use', async () => {
    const limited = new OpenAI({ baseURL: `${router.url}/v1`, apiKey: KEY_SF_ONLY, maxRetries: 0 });
    const err = await failure(() => limited.completions.create({ model: 'tight-out', prompt: 'x' }));
    expect(err).toBeInstanceOf(OpenAI.PermissionDeniedError);
    const e = err as InstanceType<typeof OpenAI.PermissionDeniedError>;
    expect([e.status, e.type, e.code]).toEqual([403, 'authorization_failed', 'model_not_allowed']);
    expect(e.error).toMatchObject({ message: 'API key "sf-only" may not use model "tight-out"' });
  });

  it('BadRequestError for a request the router rejects', async () => {
    const err = await failure(() => client.chat.completions.create({ model: 'sf-model', messages: [] }));
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    const e = err as InstanceType<typeof OpenAI.BadRequestError>;
    expect([e.status, e.type, e.code]).toEqual([400, 'invalid_request', 'missing_messages']);
    const noModel = await failure(() => client.completions.create({ model: '', prompt: 'x' }));
    expect(noModel).toBeInstanceOf(OpenAI.BadRequestError);
    expect((noModel as InstanceType<typeof OpenAI.BadRequestError>).code).toBe('missing_model');
  });

  it('models.retrieve() answers the model object /v1/models lists; NotFoundError otherwise', async () => {
    const list = await client.models.list();
    const listed = list.data.find((m) => m.id === 'tight-in');
    expect(listed).toBeDefined();
    const m = await client.models.retrieve('tight-in');
    expect(m).toEqual(listed);
    expect(m).toEqual({ id: 'tight-in', object: 'model', created: expect.any(Number), owned_by: 'inference-router' });
    const err = await failure(() => client.models.retrieve('nope'));
    expect(err).toBeInstanceOf(OpenAI.NotFoundError);
    const e = err as InstanceType<typeof OpenAI.NotFoundError>;
    expect([e.type, e.code, e.error]).toEqual(['model_not_found', 'model_not_found',
      { message: 'model "nope" is not served by any route', type: 'model_not_found', param: null, code: 'model_not_found' }]);
  });

  it('without Accept (as curl), with */* or text/plain: the exact text body, same status and headers as the JSON answer', async () => {
    const body = { model: 'tight-in', prompt: LIMITED_PROMPT };
    const auth = { authorization: `Bearer ${KEY}` };
    const json = await postFresh(`${router.url}/v1/completions`, body, { ...auth, accept: 'application/json' });
    expect(json.headers['content-type']).toBe('application/json');
    expect(JSON.parse(json.text).error.code).toBe('input_tokens_exceeded');
    const same = (h: Record<string, unknown>) => Object.fromEntries(Object.entries(h).filter(([k]) => !['content-type', 'content-length', 'date', 'x-request-id'].includes(k)));
    for (const accept of [null, '*/*', 'text/plain']) {
      const r = await postFresh(`${router.url}/v1/completions`, body, accept === null ? auth : { ...auth, accept });
      expect(r.status).toBe(429);
      expect(r.headers['content-type']).toBe(TEXT);
      expect(r.text).toBe('input token rate limit exceeded');
      // Seconds to the window's end may tick between the two answers: equal within one second.
      const ticking = ['retry-after', 'x-ratelimit-reset-input-tokens'];
      for (const k of ticking) expect(Math.abs(Number(r.headers[k]) - Number(json.headers[k])), k).toBeLessThanOrEqual(1);
      const steady = (h: Record<string, unknown>) => Object.fromEntries(Object.entries(same(h)).filter(([k]) => !ticking.includes(k)));
      expect(steady(r.headers)).toEqual(steady(json.headers));
      expect(Object.keys(same(r.headers)).sort()).toEqual(Object.keys(same(json.headers)).sort());
    }
    const noAuth = await postFresh(`${router.url}/v1/completions`, { model: 'sf-model', prompt: 'x' });
    expect([noAuth.status, noAuth.text, noAuth.headers['www-authenticate']]).toEqual([401, 'missing credentials: send "Authorization: Bearer <api key or token>"', 'Bearer']);
    const noAuthJson = await postFresh(`${router.url}/v1/completions`, { model: 'sf-model', prompt: 'x' }, { accept: 'application/json' });
    expect([noAuthJson.status, JSON.parse(noAuthJson.text).error.code, noAuthJson.headers['www-authenticate']]).toEqual([401, 'missing_credentials', 'Bearer']);
  });

  it('the access log records the same for the JSON and the text answer', async () => {
    const body = { model: 'nope', prompt: 'x' };
    const auth = { authorization: `Bearer ${KEY}` };
    await (await postJson(`${router.url}/v1/completions`, body, { ...auth, accept: 'application/json', 'x-request-id': 'neg-json' })).text();
    await (await postJson(`${router.url}/v1/completions`, body, { ...auth, 'x-request-id': 'neg-text' })).text();
    const records = (): LogRecord[] => readFileSync(router.logFile, 'utf8').split('\n').filter((l) => l.length > 0).map((l) => JSON.parse(l) as LogRecord);
    const [j, t] = await waitFor('both records', () => {
      const all = records();
      const pair = [all.find((r) => r.request_id === 'neg-json'), all.find((r) => r.request_id === 'neg-text')];
      return pair[0] && pair[1] ? pair as LogRecord[] : null;
    }, 5000);
    expect(j.status_code).toBe(404);
    expect(j.error).toEqual({ type: 'model_not_found', message: 'model "nope" is not served by any route; served: "sf-model", "tight-in", "tight-out"' });
    expect([t.status_code, t.error]).toEqual([j.status_code, j.error]);
  });

  it('405 with an accurate allow on served endpoints only; unknown /v1 paths are 404', async () => {
    const get = await fetch(`${router.url}/v1/chat/completions`);
    expect([get.status, get.headers.get('allow'), await get.text()]).toEqual([405, 'POST', 'method GET is not allowed on /v1/chat/completions; use POST']);
    const getJson = await fetch(`${router.url}/v1/completions`, { headers: { accept: 'application/json' } });
    expect([getJson.status, getJson.headers.get('allow')]).toEqual([405, 'POST']);
    expect((await getJson.json() as { error: { message: string; type: string; param: string | null; code: string } }).error).toEqual({ message: 'method GET is not allowed on /v1/completions; use POST', type: 'invalid_request', param: null, code: 'method_not_allowed' });
    const postModels = await fetch(`${router.url}/v1/models/sf-model`, { method: 'POST', headers: { accept: 'application/json' }, body: '{}' });
    expect([postModels.status, postModels.headers.get('allow'), (await postModels.json() as { error: { message: string; type: string; param: string | null; code: string } }).error.code]).toEqual([405, 'GET, HEAD', 'method_not_allowed']);
    const unknown = await fetch(`${router.url}/v1/nothing-here`);
    expect([unknown.status, unknown.headers.get('allow'), await unknown.text()]).toEqual([404, null, 'no such path: /v1/nothing-here']);
    const unknownJson = await fetch(`${router.url}/v1/nothing-here`, { method: 'DELETE', headers: { accept: 'application/json' } });
    expect([unknownJson.status, (await unknownJson.json() as { error: { message: string; type: string; param: string | null; code: string } }).error.code]).toEqual([404, 'unknown_endpoint']);
  });
});
