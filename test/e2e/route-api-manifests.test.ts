/**
 * Manifests written for the route API's reference router (volcano-sh/kthena, its documentation's
 * examples, unchanged but for the ModelServers' fixed `endpoints` the file source needs) load in
 * the built router and route as that router routes them.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postJson, startMock, startRouter, type MockBackend, type Router } from '../helpers/processes.js';
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

  it('a route of a model name another route bound to another Gateway serves: the warning says parentRefs is not read; protocol https is named', () => {
    const log = router.stderr();
    expect(log).toContain('(ModelRoute default/deepseek-route-8081): spec.modelName: model name "deepseek-r1" is already served by ModelRoute default/deepseek-default-route');
    expect(log).toContain('they are bound to different Gateways (spec.parentRefs: kthena-system/default; default/kthena-gateway-8081), which is not read: ');
    expect(log).toContain('(ModelServer default/deepseek-r1-7b): spec.workloadPort.protocol: "https" is not read: the router speaks plain HTTP to the pods');
  });
});
