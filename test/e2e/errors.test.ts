import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postJson, resourcesFor, startMock, startRouter, type MockBackend, type Router, unusedPort } from '../helpers/processes.js';

const CT = 'text/plain; charset=utf-8';

describe('every error row of the registry, over the built router', () => {
  let mock: MockBackend;
  let router: Router;
  let deadPort: number;

  beforeAll(async () => {
    mock = await startMock('pod-a');
    deadPort = await unusedPort();
    const extra = `---
apiVersion: networking.serving.volcano.sh/v1alpha1
kind: ModelServer
metadata: { name: dead-server, namespace: default }
spec:
  endpoints:
    - { name: dead-1, address: "127.0.0.1:${deadPort}" }
---
apiVersion: networking.serving.volcano.sh/v1alpha1
kind: ModelServer
metadata: { name: empty-server, namespace: default }
spec: {}
---
apiVersion: networking.serving.volcano.sh/v1alpha1
kind: ModelServer
metadata: { name: slow-server, namespace: default }
spec:
  trafficPolicy: { timeout: 500ms }
  endpoints:
    - { name: slow-1, address: "127.0.0.1:${mock.port}" }
---
apiVersion: networking.serving.volcano.sh/v1alpha1
kind: ModelServer
metadata: { name: half-dead, namespace: default }
spec:
  endpoints:
    - { name: dead-2, address: "127.0.0.1:${deadPort}" }
    - { name: dead-3, address: "127.0.0.1:${deadPort}" }
    - { name: live-1, address: "127.0.0.1:${mock.port}" }
---
apiVersion: networking.serving.volcano.sh/v1alpha1
kind: ModelRoute
metadata: { name: half-dead-route, namespace: default }
spec:
  modelName: half-dead-model
  rules: [{ name: r, targetModels: [{ modelServerName: half-dead }] }]
---
apiVersion: networking.serving.volcano.sh/v1alpha1
kind: ModelRoute
metadata: { name: dead-route, namespace: default }
spec:
  modelName: dead-model
  rules: [{ name: r, targetModels: [{ modelServerName: dead-server }] }]
---
apiVersion: networking.serving.volcano.sh/v1alpha1
kind: ModelRoute
metadata: { name: empty-route, namespace: default }
spec:
  modelName: empty-model
  rules: [{ name: r, targetModels: [{ modelServerName: empty-server }] }]
---
apiVersion: networking.serving.volcano.sh/v1alpha1
kind: ModelRoute
metadata: { name: slow-route, namespace: default }
spec:
  modelName: slow-model
  rules: [{ name: r, targetModels: [{ modelServerName: slow-server }] }]
---
apiVersion: networking.serving.volcano.sh/v1alpha1
kind: ModelRoute
metadata: { name: header-route, namespace: default }
spec:
  modelName: header-model
  rules:
    - name: only-team-a
      modelMatch: { headers: { x-team: { exact: team-a } } }
      targetModels: [{ modelServerName: sf-server }]
`;
    router = await startRouter(resourcesFor([{ name: 'pod-a', port: mock.port }], { extraRoutes: extra }), { env: { ROUTER_MAX_BODY_BYTES: '4096' } });
  });
  afterAll(async () => {
    await router?.kill();
    await mock?.kill();
  });

  async function expectError(r: Response, status: number, message: string | RegExp): Promise<void> {
    expect(r.status).toBe(status);
    expect(r.headers.get('content-type')).toBe(CT);
    expect(r.headers.get('x-request-id')).toBeTruthy();
    const text = await r.text();
    if (typeof message === 'string') expect(text).toBe(message);
    else expect(text).toMatch(message);
  }

  it('400 invalid_request: malformed JSON, missing model, blank model, no prompt, no messages', async () => {
    await expectError(await postJson(`${router.url}/v1/completions`, '{"model": "sf-model", '), 400, /^request body is not valid JSON/);
    await expectError(await postJson(`${router.url}/v1/completions`, { prompt: 'x' }), 400, /"model" must be a non-empty string/);
    await expectError(await postJson(`${router.url}/v1/completions`, { model: '  ', prompt: 'x' }), 400, /"model" must be a non-empty string/);
    await expectError(await postJson(`${router.url}/v1/completions`, { model: 'sf-model' }), 400, /"prompt" is required/);
    await expectError(await postJson(`${router.url}/v1/chat/completions`, { model: 'sf-model', messages: [] }), 400, /"messages" is required/);
    await expectError(await postJson(`${router.url}/v1/completions`, '[1,2]'), 400, 'request body must be a JSON object');
    expect((await mock.stats()).requests).toBe(0);
  });

  it('a UTF-8 byte order mark before the JSON is no error: the request is served, its body sent as it came', async () => {
    const r = await postJson(`${router.url}/v1/completions`, '\ufeff{"model":"sf-model","prompt":"after a byte order mark"}');
    expect(r.status).toBe(200);
    await r.text();
    expect((await mock.stats()).lastBody.prompt).toBe('after a byte order mark');
  });

  it('413 when the body is larger than ROUTER_MAX_BODY_BYTES', async () => {
    await expectError(await postJson(`${router.url}/v1/completions`, { model: 'sf-model', prompt: 'x'.repeat(5000) }), 413, 'request body is larger than 4096 bytes (ROUTER_MAX_BODY_BYTES)');
  });

  it('405 for a method other than POST on /v1/*', async () => {
    const r = await fetch(`${router.url}/v1/completions`, { method: 'PUT', body: '{}' });
    await expectError(r, 405, /use POST/);
  });

  it('404 model_not_found: no route, and no matching rule', async () => {
    await expectError(await postJson(`${router.url}/v1/completions`, { model: 'nope', prompt: 'x' }), 404,
      'model "nope" is not served by any route; served: "sf-model", "half-dead-model", "dead-model", "empty-model", "slow-model", "header-model"');
    await expectError(await postJson(`${router.url}/v1/completions`, { model: 'header-model', prompt: 'x' }), 404, 'no rule of route default/header-route matches the request');
    const ok = await postJson(`${router.url}/v1/completions`, { model: 'header-model', prompt: 'x' }, { 'x-team': 'team-a' });
    expect(ok.status).toBe(200);
  });

  it('502 upstream_error when the pod refuses connections; 503 when no endpoint is ready', async () => {
    await expectError(await postJson(`${router.url}/v1/completions`, { model: 'dead-model', prompt: 'x' }), 502, /cannot connect to any pod of ModelServer default\/dead-server/);
    await expectError(await postJson(`${router.url}/v1/completions`, { model: 'empty-model', prompt: 'x' }), 503, 'no ready endpoint for ModelServer default/empty-server');
  });

  it('connection failures are retried on another pod (at most two more): two dead pods of three never fail a request', async () => {
    const statuses = [];
    for (let i = 0; i < 12; i++) {
      const r = await postJson(`${router.url}/v1/completions`, { model: 'half-dead-model', prompt: 'x' });
      await r.text();
      statuses.push(r.status);
    }
    expect(statuses).toEqual(Array(12).fill(200));
  });

  it('upstream non-2xx answers pass through unchanged', async () => {
    const r = await postJson(`${router.url}/v1/completions`, { model: 'sf-model', prompt: 'x' }, { 'x-mock-status': '503' });
    expect(r.status).toBe(503);
    expect(r.headers.get('content-type')).toContain('application/json');
    const r4 = await postJson(`${router.url}/v1/completions`, { model: 'sf-model', prompt: 'x' }, { 'x-mock-status': '400' });
    expect(r4.status).toBe(400);
  });

  it('502 when the pod closes the connection without answering', async () => {
    const r = await postJson(`${router.url}/v1/completions`, { model: 'sf-model', prompt: 'x' }, { 'x-mock-close': '1' });
    await expectError(r, 502, /upstream failed on pod pod-a/);
  });

  it('504 timeout with the message naming the timeout', async () => {
    const r = await postJson(`${router.url}/v1/completions`, { model: 'slow-model', prompt: 'x' }, { 'x-mock-latency-ms': '3000' });
    await expectError(r, 504, 'inference timed out after 0.5s');
    const s = await postJson(`${router.url}/v1/completions`, { model: 'slow-model', prompt: 'x', stream: true }, { 'x-mock-latency-ms': '3000' });
    await expectError(s, 504, 'inference timed out after 0.5s');
  });

  it('404 for paths outside the API, naming what the router serves', async () => {
    const r = await fetch(`${router.url}/nope%3Cb%3E`);
    expect(r.status).toBe(404);
    // The path is echoed as text: a browser must not read it as HTML.
    expect(r.headers.get('x-content-type-options')).toBe('nosniff');
    expect(await r.text()).toMatch(/^no such path: \/nope%3Cb%3E\n/);
    const s = await fetch(`${router.url}/nope`);
    expect(await s.text()).toBe('no such path: /nope\n'
      + 'inference: POST /v1/completions, /v1/chat/completions, /v1/embeddings, /v1/responses; also GET /v1/models, /v1/models/{id}, /healthz, /readyz, /metrics\n');
    const root = await fetch(`${router.url}/`);
    expect(root.status).toBe(404);
    expect(await root.text()).toMatch(/^no such path: \/\ninference: POST \/v1\/completions/);
  });

  it('404 for an API path without /v1 (a client base URL without it) names the path meant; JSON to clients that accept it', async () => {
    const r = await postJson(`${router.url}/chat/completions`, { model: 'sf-model', messages: [] }, { accept: 'application/json' });
    expect(r.status).toBe(404);
    expect(r.headers.get('content-type')).toBe('application/json');
    expect((await r.json() as { error: { message: string; type: string; param: string | null; code: string } }).error).toEqual({
      message: 'no such path: /chat/completions; did you mean /v1/chat/completions? An OpenAI client\'s base URL ends in /v1 (http://<router>:<port>/v1)',
      type: 'invalid_request', param: null, code: 'unknown_endpoint',
    });
    const models = await fetch(`${router.url}/models`);
    expect(models.status).toBe(404);
    expect(await models.text()).toBe('no such path: /models\n'
      + 'did you mean /v1/models? An OpenAI client\'s base URL ends in /v1 (http://<router>:<port>/v1)\n'
      + 'inference: POST /v1/completions, /v1/chat/completions, /v1/embeddings, /v1/responses; also GET /v1/models, /v1/models/{id}, /healthz, /readyz, /metrics\n');
    const other = await fetch(`${router.url}/nope`, { headers: { accept: 'application/json' } });
    expect((await other.json() as { error: { message: string; type: string; param: string | null; code: string } }).error.message).toBe('no such path: /nope; inference: POST /v1/completions, /v1/chat/completions, '
      + '/v1/embeddings, /v1/responses; also GET /v1/models, /v1/models/{id}, /healthz, /readyz, /metrics');
  });
});
