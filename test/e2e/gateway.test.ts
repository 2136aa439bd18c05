/**
 * One router per Gateway (ROUTER_GATEWAY) from one resources file: the route API's example of one
 * model name served by a route per Gateway (GATEWAY_ROUTES), and a route without parentRefs, which
 * is bound to the Gateways of its own namespace. Each built router serves its Gateway's routes.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postJson, startMock, startRouter, tempDir, waitFor, type MockBackend, type Router } from '../helpers/processes.js';
import { GATEWAY_ROUTES } from '../helpers/route-api-manifests.js';

// vLLM pods: the router scrapes the /metrics of those it uses for their load.
const server = (name: string, model: string, port: number): string => `apiVersion: networking.serving.volcano.sh/v1alpha1
kind: ModelServer
metadata: { name: ${name}, namespace: default }
spec:
  model: "${model}"
  inferenceEngine: vLLM
  endpoints: [{ name: ${name}-pod, address: "127.0.0.1:${port}" }]
`;

// No parentRefs, in namespace default: bound to default/kthena-gateway-8081, not to kthena-system/default.
// Its first rule's regex is warned of when loaded, by the router that serves the route only.
const NO_REFS = `apiVersion: networking.serving.volcano.sh/v1alpha1
kind: ModelRoute
metadata: { name: everywhere-in-default, namespace: default }
spec:
  modelName: "qwen"
  rules:
  - modelMatch: { headers: { x-tier: { regex: "^(\\\\w+,?)+$" } } }
    targetModels: [{ modelServerName: deepseek-r1-7b }]
  - targetModels: [{ modelServerName: deepseek-r1-7b }]
`;

describe('one router per Gateway, from one resources file', () => {
  let small: MockBackend;
  let large: MockBackend;
  /** The pod of a ModelServer no route targets. */
  let idle: MockBackend;
  let onDefault: Router;
  let on8081: Router;

  beforeAll(async () => {
    [small, large, idle] = await Promise.all(['small', 'large', 'idle'].map((name) => startMock(name, ['--metrics-engine', 'vllm'])));
    const resources = [
      server('deepseek-r1-1-5b', 'deepseek-ai/DeepSeek-R1-Distill-Qwen-1.5B', small.port),
      server('deepseek-r1-7b', 'deepseek-ai/DeepSeek-R1-Distill-Qwen-7B', large.port),
      server('idle', 'idle', idle.port),
      GATEWAY_ROUTES, NO_REFS,
    ].join('---\n');
    const dir = tempDir(); // both routers read this one file
    const env = { ROUTER_POD_METRICS_INTERVAL: '100ms' };
    [onDefault, on8081] = await Promise.all([
      startRouter(resources, { dir, workers: 1, env: { ...env, ROUTER_GATEWAY: 'kthena-system/default' } }),
      startRouter(resources, { dir, workers: 1, env: { ...env, ROUTER_GATEWAY: 'default/kthena-gateway-8081' } }),
    ]);
    expect(onDefault.resourcesFile).toBe(on8081.resourcesFile);
  });
  afterAll(async () => {
    await Promise.all([onDefault?.kill(), on8081?.kill(), small?.kill(), large?.kill(), idle?.kill()]);
  });

  /** Which pod served one request for `model` through `router` ('none' when it was refused), and the status. */
  async function servedBy(router: Router, model: string): Promise<[number, string]> {
    const before = [(await small.stats()).requests, (await large.stats()).requests];
    const r = await postJson(`${router.url}/v1/completions`, { model, prompt: 'What is Kubernetes?', max_tokens: 5 });
    await r.text();
    const after = [(await small.stats()).requests, (await large.stats()).requests];
    return [r.status, after[0] > before[0] ? 'small' : after[1] > before[1] ? 'large' : 'none'];
  }

  it('the same model name goes to each Gateway\'s own route', async () => {
    expect(await servedBy(onDefault, 'deepseek-r1')).toEqual([200, 'small']);
    expect(await servedBy(on8081, 'deepseek-r1')).toEqual([200, 'large']);
    expect((await large.stats()).lastBody.model).toBe('deepseek-ai/DeepSeek-R1-Distill-Qwen-7B');
  });

  it('a route without parentRefs is served by the router of a Gateway of its namespace only', async () => {
    expect(await servedBy(on8081, 'qwen')).toEqual([200, 'large']);
    expect(await servedBy(onDefault, 'qwen')).toEqual([404, 'none']);
  });

  it('each router names the routes it leaves out once, as information, and warns only of the routes it serves', () => {
    const log = onDefault.stderr();
    expect(log).toMatch(/ info \[primary \d+\] resources: .*\(ModelRoute default\/deepseek-route-8081\): spec\.parentRefs: default\/kthena-gateway-8081: not bound to Gateway kthena-system\/default, so this router does not serve it \(ROUTER_GATEWAY=kthena-system\/default\)\n/);
    expect(log).toMatch(/ info \[primary \d+\] resources: .*\(ModelRoute default\/everywhere-in-default\): spec\.parentRefs: none: a route without parentRefs is bound to the Gateways of its own namespace \(default\), not to Gateway kthena-system\/default/);
    expect(log).toMatch(/resources loaded from file \S+, ModelRoutes of Gateway kthena-system\/default \(snapshot 1\): 1 routes \[default\/deepseek-default-route\]/);
    expect(on8081.stderr()).toMatch(/\(ModelRoute default\/deepseek-default-route\): spec\.parentRefs: kthena-system\/default: not bound to Gateway default\/kthena-gateway-8081/);
    for (const router of [onDefault, on8081]) expect(router.stderr()).not.toContain('also served by');
    // Warnings about the resources (a pod's /metrics not answering in time on a busy machine is another matter).
    const resourceWarnings = (text: string): string[] => text.split('\n').filter((l) => l.includes(' warn ') && !l.includes('] pod-metrics: '));
    expect(resourceWarnings(log)).toEqual([]);
    expect(resourceWarnings(on8081.stderr())).toEqual([
      expect.stringMatching(/ warn \[primary \d+\] resources: .*\(ModelRoute default\/everywhere-in-default\): spec\.rules\[0\]\.modelMatch\.headers\.x-tier\.regex: .* repeats a part that repeats itself/),
    ]);
  });

  /** The backend pods named in `router`'s /metrics by `series` (backend_pod label). */
  async function podsIn(router: Router, series: string): Promise<string[]> {
    const text = await (await fetch(`${router.url}/metrics`)).text();
    return [...text.matchAll(new RegExp(`^${series}\\{[^}]*backend_pod="([^"]+)"`, 'gm'))].map((m) => m[1]).sort();
  }

  it('each router scrapes and pools the pods of the ModelServers its routes target only; one no route targets is not scraped at all', async () => {
    // Connection pools, one per pod used, are there from the first snapshot on.
    expect(await podsIn(onDefault, 'inference_router_upstream_connections')).toEqual(['deepseek-r1-1-5b-pod']);
    expect(await podsIn(on8081, 'inference_router_upstream_connections')).toEqual(['deepseek-r1-7b-pod']);
    // Each round of scrapes asks every pod scraped at once: once each router holds fresh values of
    // its pod, and three rounds more were asked of each pod, a pod it also scraped would be fresh too.
    await waitFor('fresh values of the pod of each router', async () => (await podsIn(onDefault, 'inference_router_pod_metrics_fresh')).length > 0
      && (await podsIn(on8081, 'inference_router_pod_metrics_fresh')).length > 0);
    const asked = [(await small.stats()).metricsRequests, (await large.stats()).metricsRequests];
    await waitFor('three rounds more', async () => (await small.stats()).metricsRequests >= asked[0] + 3 && (await large.stats()).metricsRequests >= asked[1] + 3);
    expect(await podsIn(onDefault, 'inference_router_pod_metrics_fresh')).toEqual(['deepseek-r1-1-5b-pod']);
    expect(await podsIn(on8081, 'inference_router_pod_metrics_fresh')).toEqual(['deepseek-r1-7b-pod']);
    expect((await idle.stats()).metricsRequests).toBe(0);
    expect(onDefault.stderr()).toMatch(/resources loaded from file \S+, ModelRoutes of Gateway kthena-system\/default \(snapshot 1\): 1 routes \[default\/deepseek-default-route\], 1 servers \[default\/deepseek-r1-1-5b\]; 2 ModelServers no route served targets, not used \(their pods neither scraped nor connected to\) \[default\/deepseek-r1-7b, default\/idle\]\n/);
  });
});
