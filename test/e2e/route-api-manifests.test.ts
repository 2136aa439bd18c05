/**
 * Manifests written for the route API's reference router (volcano-sh/kthena, its documentation's
 * examples, unchanged but for the ModelServers' fixed `endpoints` the file source needs) load in
 * the built router and route as that router routes them.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { accessLogRecords, postJson, startLoggedRouter, startMock, startRouter, waitFor, type LoggedRouter, type MockBackend, type Router } from '../helpers/processes.js';
import { GATEWAY_ROUTES } from '../helpers/route-api-manifests.js';

const server = (name: string, model: string, port: number): string => `apiVersion: networking.serving.volcano.sh/v1alpha1
kind: ModelServer
metadata:
  name: ${name}
  namespace: default
spec:
  workloadSelector:
    matchLabels:
      app: ${name}
  workloadPort:
    port: 8000
  model: "${model}"
  inferenceEngine: "vLLM"
  trafficPolicy:
    timeout: 10s
  endpoints:
  - { name: ${name}-pod, address: "127.0.0.1:${port}" }
`;

// docs/kthena/docs/assets/examples/kthena-router/ModelRouteLora.yaml
const LORA_ROUTE = `apiVersion: networking.serving.volcano.sh/v1alpha1
kind: ModelRoute
metadata:
  name: deepseek-lora
  namespace: default
spec:
  loraAdapters:
  - "lora-A"
  - "lora-B"
  rules:
  - name: "lora-route"
    targetModels:
    - modelServerName: "deepseek-r1-1-5b"
`;

// docs/kthena/docs/assets/examples/kthena-router/ModelRouteSimple.yaml
const SIMPLE_ROUTE = `apiVersion: networking.serving.volcano.sh/v1alpha1
kind: ModelRoute
metadata:
  name: deepseek-simple
  namespace: default
spec:
  modelName: "deepseek-simple"
  rules:
  - name: "default"
    targetModels:
    - modelServerName: "deepseek-r1-1-5b"
`;

describe('route API manifests: LoRA adapters', () => {
  let pod: MockBackend;
  let router: Router;

  beforeAll(async () => {
    pod = await startMock('deepseek-r1-1-5b-pod');
    router = await startRouter([server('deepseek-r1-1-5b', 'deepseek-ai/DeepSeek-R1-Distill-Qwen-1.5B', pod.port), LORA_ROUTE, SIMPLE_ROUTE].join('---\n'), { workers: 1 });
  });
  afterAll(async () => {
    await router?.kill();
    await pod?.kill();
  });

  it('a route with loraAdapters and no modelName serves each adapter, which goes upstream unchanged', async () => {
    for (const adapter of ['lora-A', 'lora-B']) {
      const r = await postJson(`${router.url}/v1/completions`, { model: adapter, prompt: `for ${adapter}` });
      expect(r.status, await r.clone().text()).toBe(200);
      const stats = await pod.stats();
      expect(stats.lastBody.prompt).toBe(`for ${adapter}`);
      expect(stats.lastBody.model).toBe(adapter);
    }
  });

  it('the base model name is still rewritten to the ModelServer model; an unknown adapter is 404', async () => {
    const r = await postJson(`${router.url}/v1/completions`, { model: 'deepseek-simple', prompt: 'base' });
    expect(r.status).toBe(200);
    expect((await pod.stats()).lastBody.model).toBe('deepseek-ai/DeepSeek-R1-Distill-Qwen-1.5B');
    expect((await postJson(`${router.url}/v1/completions`, { model: 'lora-C', prompt: 'x' })).status).toBe(404);
  });

  it('lists the adapters among the served models', async () => {
    const body = await (await fetch(`${router.url}/v1/models`)).json() as { data: { id: string }[] };
    expect(body.data.map((m: { id: string }) => m.id).sort()).toEqual(['deepseek-simple', 'lora-A', 'lora-B']);
  });
});

describe('route API manifests: rules that match on the body model', () => {
  let base: MockBackend;
  let math: MockBackend;
  let router: Router;

  // A base model with adapters, each adapter on its own ModelServer by modelMatch.body.model.
  const ROUTE = `apiVersion: networking.serving.volcano.sh/v1alpha1
kind: ModelRoute
metadata:
  name: llama-route
  namespace: default
spec:
  modelName: "llama2-7b"
  loraAdapters: ["math-lora", "code-lora"]
  rules:
  - name: "math"
    modelMatch:
      body:
        model: "math-lora"
    targetModels:
    - modelServerName: "math-server"
  - name: "default"
    targetModels:
    - modelServerName: "base-server"
`;

  beforeAll(async () => {
    [base, math] = await Promise.all([startMock('base-pod'), startMock('math-pod')]);
    router = await startRouter([server('base-server', 'meta/llama2-7b', base.port), server('math-server', 'meta/llama2-7b', math.port), ROUTE].join('---\n'), { workers: 1 });
  });
  afterAll(async () => {
    await router?.kill();
    await Promise.all([base?.kill(), math?.kill()]);
  });

  it('a rule with body.model matches only requests for that model; the others go on to the next rule', async () => {
    const sent = async (model: string): Promise<{ base: number; math: number }> => {
      await Promise.all([fetch(`${base.url}/stats/reset`, { method: 'POST' }), fetch(`${math.url}/stats/reset`, { method: 'POST' })]);
      const r = await postJson(`${router.url}/v1/completions`, { model, prompt: 'x' });
      expect(r.status, await r.clone().text()).toBe(200);
      return { base: (await base.stats()).requests, math: (await math.stats()).requests };
    };
    expect(await sent('math-lora')).toEqual({ base: 0, math: 1 });
    expect(await sent('llama2-7b')).toEqual({ base: 1, math: 0 });
    expect(await sent('code-lora')).toEqual({ base: 1, math: 0 });
  });
});

describe('route API manifests: a header regex is found anywhere in the value, as the route API reads it', () => {
  let premium: MockBackend;
  let basic: MockBackend;
  let router: Router;

  // volcano-sh/kthena examples/kthena-router/ModelRouteMultiModels.yaml, its `exact: premium`
  // written as the regexes a route API user writes (the reference router finds them anywhere).
  const ROUTE = `apiVersion: networking.serving.volcano.sh/v1alpha1
kind: ModelRoute
metadata:
  name: deepseek-multi-models
  namespace: default
spec:
  modelName: "deepseek-multi-models"
  rules:
  - name: "premium"
    modelMatch:
      headers:
        user-type:
          regex: (?i)premium
    targetModels:
    - modelServerName: "deepseek-r1-7b"
  - name: "chat-only"
    modelMatch:
      uri:
        regex: chat
      headers:
        user-type:
          regex: ^\\Qbasic+\\E$
    targetModels:
    - modelServerName: "deepseek-r1-7b"
  - name: "default"
    targetModels:
    - modelServerName: "deepseek-r1-1-5b"
`;

  beforeAll(async () => {
    [premium, basic] = await Promise.all([startMock('deepseek-r1-7b-pod'), startMock('deepseek-r1-1-5b-pod')]);
    router = await startRouter([
      server('deepseek-r1-7b', 'deepseek-ai/DeepSeek-R1-Distill-Qwen-7B', premium.port),
      server('deepseek-r1-1-5b', 'deepseek-ai/DeepSeek-R1-Distill-Qwen-1.5B', basic.port),
      ROUTE,
    ].join('---\n'), { workers: 1 });
  });
  afterAll(async () => {
    await router?.kill();
    await Promise.all([premium?.kill(), basic?.kill()]);
  });

  it('routes by regexes in RE2 syntax, unanchored unless ^…$ says so', async () => {
    const servedBy = async (path: string, userType: string | null): Promise<string> => {
      await Promise.all([fetch(`${premium.url}/stats/reset`, { method: 'POST' }), fetch(`${basic.url}/stats/reset`, { method: 'POST' })]);
      const body = path === '/v1/completions' ? { model: 'deepseek-multi-models', prompt: 'x' } : { model: 'deepseek-multi-models', messages: [{ role: 'user', content: 'x' }] };
      const r = await fetch(`${router.url}${path}`, {
        method: 'POST', body: JSON.stringify(body), headers: { 'content-type': 'application/json', ...(userType === null ? {} : { 'user-type': userType }) },
      });
      expect(r.status, await r.clone().text()).toBe(200);
      return (await premium.stats()).requests === 1 ? '7b' : (await basic.stats()).requests === 1 ? '1.5b' : 'none';
    };
    expect(await servedBy('/v1/completions', 'premium')).toBe('7b');
    expect(await servedBy('/v1/completions', 'Premium-Plus')).toBe('7b');
    expect(await servedBy('/v1/completions', 'basic')).toBe('1.5b');
    expect(await servedBy('/v1/completions', null)).toBe('1.5b');
    expect(await servedBy('/v1/chat/completions', 'basic+')).toBe('7b');
    expect(await servedBy('/v1/chat/completions', 'basic++')).toBe('1.5b');
    expect(await servedBy('/v1/completions', 'basic+')).toBe('1.5b');
  });
});

describe('route API manifests: fields that are not read are named at start', () => {
  let pod: MockBackend;
  let router: Router;


  beforeAll(async () => {
    pod = await startMock('pod');
    const tls = server('deepseek-r1-7b', 'deepseek-ai/DeepSeek-R1-Distill-Qwen-7B', pod.port).replace('    port: 8000\n', '    port: 8000\n    protocol: https\n');
    router = await startRouter([server('deepseek-r1-1-5b', 'deepseek-ai/DeepSeek-R1-Distill-Qwen-1.5B', pod.port), tls, GATEWAY_ROUTES].join('---\n'), { workers: 1 });
  });
  afterAll(async () => {
    await router?.kill();
    await pod?.kill();
  });

  it('a route of a model name another route bound to another Gateway serves: the warning says parentRefs is not read without ROUTER_GATEWAY; protocol https is named', () => {
    const log = router.stderr();
    expect(log).toContain('(ModelRoute default/deepseek-route-8081): spec.modelName: model name "deepseek-r1" is also served by ModelRoute default/deepseek-default-route, which is tried first');
    expect(log).toContain('they are bound to different Gateways (spec.parentRefs: kthena-system/default; default/kthena-gateway-8081), which is not read while ROUTER_GATEWAY is unset: ');
    expect(log).toContain('(ModelServer default/deepseek-r1-7b): spec.workloadPort.protocol: "https" is not read: the router speaks plain HTTP to the pods');
  });
});

describe('route API manifests: several routes for one model name, tried oldest first as the route API tries them', () => {
  let canary: MockBackend;
  let main: MockBackend;
  let router: LoggedRouter;
  const route = (name: string, created: string, spec: string): string => `apiVersion: networking.serving.volcano.sh/v1alpha1
kind: ModelRoute
metadata:
  name: ${name}
  namespace: default
  creationTimestamp: "${created}"
spec:
  modelName: "shared"
${spec}`;
  // The canary route, first in the file: only requests with x-canary: 1.
  const CANARY = route('canary', '2025-01-01T00:00:00Z', `  rules:
  - name: canary
    modelMatch:
      headers:
        x-canary: {exact: "1"}
    targetModels:
    - modelServerName: canary-server
`);
  // The main route: gold requests are switched off (weight 0), chat requests go to the main pods,
  // under the route's own limit.
  const MAIN = route('main', '2025-02-01T00:00:00Z', `  rateLimit:
    inputTokensPerUnit: 100000
    unit: minute
  rules:
  - name: gold-off
    modelMatch:
      headers:
        x-tier: {exact: gold}
    targetModels:
    - {modelServerName: main-server, weight: 0}
  - name: chat
    modelMatch:
      uri: {prefix: /v1/chat}
    targetModels:
    - modelServerName: main-server
`);

  beforeAll(async () => {
    [canary, main] = await Promise.all([startMock('canary-pod'), startMock('main-pod')]);
    router = await startLoggedRouter([
      server('canary-server', 'm', canary.port), server('main-server', 'm', main.port), CANARY, MAIN,
    ].join('---\n'));
  });
  afterAll(async () => {
    await router?.kill();
    await Promise.all([canary?.kill(), main?.kill()]);
  });

  it('a request goes to the first route whose rules take it; that route\'s limit applies and the access log names it; none: 404 naming both routes; a weight-0 rule with no later route: 503', async () => {
    const chat = { model: 'shared', messages: [{ role: 'user', content: 'hi' }] };
    const ask = async (id: string, path: string, headers: Record<string, string> = {}): Promise<Response> =>
      postJson(`${router.url}${path}`, path.includes('chat') ? chat : { model: 'shared', prompt: 'hi' }, { 'x-request-id': id, ...headers });

    const toCanary = await ask('to-canary', '/v1/chat/completions', { 'x-canary': '1' });
    expect(toCanary.status, await toCanary.clone().text()).toBe(200);
    expect(toCanary.headers.get('x-ratelimit-limit-input-tokens')).toBeNull();
    const toMain = await ask('to-main', '/v1/chat/completions');
    expect(toMain.status, await toMain.clone().text()).toBe(200);
    expect(toMain.headers.get('x-ratelimit-limit-input-tokens')).toBe('100000');
    expect([(await canary.stats()).requests, (await main.stats()).requests]).toEqual([1, 1]);

    const none = await ask('none', '/v1/completions');
    expect(none.status).toBe(404);
    expect(await none.text()).toBe('no rule of routes default/canary, default/main matches the request');
    const off = await ask('off', '/v1/completions', { 'x-tier': 'gold' });
    expect(off.status).toBe(503);
    expect(await off.text()).toBe('the matching rule of route default/main has no target with a weight above 0');
    // A gold chat request: the main route's gold rule sends nothing and no later route serves it.
    const goldCanary = await ask('gold-canary', '/v1/chat/completions', { 'x-tier': 'gold', 'x-canary': '1' });
    expect(goldCanary.status).toBe(200);

    await waitFor('records', () => accessLogRecords(router.logFile).length === 5, 5000);
    const routeOf = Object.fromEntries(accessLogRecords(router.logFile).map((r) => [r.request_id, [r.status_code, r.model_route, r.model_server]]));
    expect(routeOf).toEqual({
      'to-canary': [200, 'default/canary', 'default/canary-server'],
      'to-main': [200, 'default/main', 'default/main-server'],
      none: [404, 'default/canary', ''],
      off: [503, 'default/main', ''],
      'gold-canary': [200, 'default/canary', 'default/canary-server'],
    });
    expect(router.stderr()).not.toContain('is also served by');
  });
});
