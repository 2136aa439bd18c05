/**
 * Operating the built router in Kubernetes mode (2 workers) against a fake API server speaking the
 * list/watch protocol: the watch metrics move when the API server goes away and comes back (healthy
 * 1 -> 0 -> 1, failures grow), the log says why in full, naming the address; mistakes that load
 * without an error are warned about once; a pod marked for deletion gets no new requests.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { startFakeKubeApi, type FakeKubeApi, type KubeObject } from '../helpers/fake-kube-api.js';
import { sample } from '../helpers/metrics-text.js';
import { postJson, ROOT, startMock, startRouterWith, tempDir, waitFor, type MockBackend, type Proc } from '../helpers/processes.js';

const GROUP = 'networking.serving.volcano.sh';
const RESOURCES = ['modelroutes', 'modelservers', 'pods'] as const;

function pod(name: string, ip: string, opts: { deleting?: boolean } = {}): KubeObject {
  return {
    apiVersion: 'v1', kind: 'Pod',
    metadata: { name, namespace: 'ml', labels: { app: 'llm' }, ...(opts.deleting ? { deletionTimestamp: '2026-01-01T00:10:00Z' } : {}) },
    spec: { containers: [{ name: 'engine', image: 'vllm' }] },
    status: { phase: 'Running', podIP: ip, conditions: [{ type: 'Ready', status: 'True' }] },
  };
}

function route(ns: string, name: string, modelName: string): KubeObject {
  return {
    apiVersion: `${GROUP}/v1alpha1`, kind: 'ModelRoute',
    metadata: { name, namespace: ns, creationTimestamp: '2026-01-01T00:00:00Z' },
    spec: { modelName, rules: [{ name: 'all', targetModels: [{ modelServerName: 'llm' }] }] },
  };
}

function server(name: string, labels: Record<string, string>, port: number): KubeObject {
  return {
    apiVersion: `${GROUP}/v1alpha1`, kind: 'ModelServer',
    metadata: { name, namespace: 'ml', creationTimestamp: '2026-01-01T00:00:00Z' },
    spec: { model: 'llm-v1', workloadSelector: { matchLabels: labels }, workloadPort: { port } },
  };
}

/** How many times `text` occurs in `all`. */
function count(all: string, text: string): number {
  return all.split(text).length - 1;
}

describe('operating the built router with --kubernetes', () => {
  let api: FakeKubeApi;
  let a: MockBackend;
  let b: MockBackend;
  let router: Proc & { url: string };
  let url: string;

  beforeAll(async () => {
    a = await startMock('llm-a');
    b = await startMock('llm-b', ['--host', '127.0.0.2', '--port', String(a.port)]);
    api = await startFakeKubeApi(GROUP);
    api.upsert('modelservers', server('llm', { app: 'llm' }, a.port));
    // Mistakes that load without an error: a selector no pod carries, a target of another namespace.
    api.upsert('modelservers', server('typo', { app: 'lmm' }, a.port));
    api.upsert('modelroutes', route('ml', 'llm-route', 'llm'));
    api.upsert('modelroutes', route('apps', 'lost', 'lost'));
    api.upsert('pods', pod('llm-a-0', '127.0.0.1'));
    api.upsert('pods', pod('llm-b-0', '127.0.0.2'));
    const kubeconfig = api.writeKubeconfig(join(tempDir(), 'kubeconfig'));
    router = await startRouterWith(['--kubernetes'], { workers: 2, env: { KUBECONFIG: kubeconfig } }, 30_000);
    url = router.url;
  });
  afterAll(async () => {
    await router?.kill();
    await api?.close();
    await Promise.all([a?.kill(), b?.kill()]);
  });

  const metrics = async (): Promise<string> => (await fetch(`${url}/metrics`)).text();
  const healthy = (text: string, r: string): number | undefined => sample(text, `inference_router_kubernetes_watch_healthy{resource="${r}"}`);
  const failures = (text: string, r: string): number | undefined => sample(text, `inference_router_kubernetes_watch_failures_total{resource="${r}"}`);

  /** The pods that answered `n` requests (distinct prompts: no affinity keeps them on one pod). */
  async function podsServing(n: number, model = 'llm'): Promise<string[]> {
    const seen: string[] = [];
    for (let i = 0; i < n; i++) {
      const r = await postJson(`${url}/v1/completions`, { model, prompt: `prompt ${i} ${Math.random()}` });
      expect(r.status).toBe(200);
      seen.push((await r.json() as { pod: string }).pod);
    }
    return seen;
  }

  it('exports each kind\'s watch as healthy with no failures once synced, and the alerts\' and dashboard\'s Kubernetes metrics exist', async () => {
    const text = await waitFor('every watch healthy', async () => {
      const t = await metrics();
      return RESOURCES.every((r) => healthy(t, r) === 1) ? t : null;
    }, 10_000);
    for (const r of RESOURCES) expect(failures(text, r)).toBe(0);
    expect(text).toContain('# TYPE inference_router_kubernetes_watch_healthy gauge');
    expect(text).toContain('# TYPE inference_router_kubernetes_watch_failures_total counter');
    const alerts = readFileSync(join(ROOT, 'deploy/observability/alerts.yaml'), 'utf8');
    const dashboard = readFileSync(join(ROOT, 'deploy/observability/grafana-dashboard.json'), 'utf8');
    const named = new Set([...`${alerts}\n${dashboard}`.matchAll(/\b(inference_router_kubernetes_[a-z_]+)/g)].map((m) => m[1]));
    expect([...named].sort()).toEqual(['inference_router_kubernetes_watch_failures_total', 'inference_router_kubernetes_watch_healthy']);
    expect(parse(alerts).groups[0].rules.map((r: { alert: string }) => r.alert)).toContain('InferenceRouterKubernetesWatchFailing');
  });

  it('warns once about a selector that matches no pod and a target naming a ModelServer of another namespace, not on every event', async () => {
    const noPod = 'ModelServer ml/typo: spec.workloadSelector.matchLabels: selector app=lmm matches no pod in namespace ml; it has no endpoints until one exists there';
    const elsewhere = 'ModelRoute apps/lost: spec.rules[0].targetModels[0].modelServerName: ModelServer apps/llm does not exist; a ModelServer llm exists in namespace ml, but a target names a ModelServer of its route\'s own namespace (apps)';
    await waitFor('both warnings', () => router.stderr().includes(noPod) && router.stderr().includes(elsewhere), 10_000);
    // The line's event says kubernetes once: `warn kubernetes: ModelServer ml/typo: …`.
    expect(router.stderr()).toContain(`kubernetes: ${noPod}`);
    expect(router.stderr()).not.toContain('kubernetes: kubernetes');
    // Pod events that change the snapshot: each applied (the reload line), neither warning again.
    for (const ip of ['127.0.0.3', '127.0.0.4']) {
      const reloads = count(router.stderr(), 'resources reloaded from kubernetes');
      api.upsert('pods', pod(`llm-x-${ip.slice(-1)}`, ip));
      await waitFor('the pod applied', () => count(router.stderr(), 'resources reloaded from kubernetes') > reloads, 10_000);
      api.remove('pods', 'ml', `llm-x-${ip.slice(-1)}`);
      await waitFor('the pod removal applied', () => count(router.stderr(), 'resources reloaded from kubernetes') > reloads + 1, 10_000);
    }
    expect(count(router.stderr(), noPod)).toBe(1);
    expect(count(router.stderr(), elsewhere)).toBe(1);
    expect((await postJson(`${url}/v1/completions`, { model: 'lost', prompt: 'x' })).status).toBe(404);
  });

  it('a pod marked for deletion, still Running and Ready, gets no new requests', async () => {
    await waitFor('both pods to get traffic', async () => new Set(await podsServing(8)).size === 2, 20_000);
    api.upsert('pods', pod('llm-b-0', '127.0.0.2', { deleting: true }));
    await waitFor('llm-b-0 to get no more traffic', async () => (await podsServing(10)).every((p) => p === 'llm-a'), 10_000);
    expect(new Set(await podsServing(30))).toEqual(new Set(['llm-a']));
    api.upsert('pods', pod('llm-b-0', '127.0.0.2'));
    await waitFor('llm-b-0 back', async () => (await podsServing(8)).includes('llm-b'), 20_000);
  });

  it('warns when ModelRoutes are watched but none of them serves', async () => {
    const none = '1 ModelRoute watched, none of which serves: every inference request is answered 404 model_not_found until one does';
    expect(router.stderr()).not.toContain('none of which serves');
    api.remove('modelroutes', 'ml', 'llm-route');
    await waitFor('the warning', () => router.stderr().includes(none), 10_000);
    // The primary warns as it publishes the change; the workers apply it a moment later.
    await waitFor('the route gone from the workers', async () => (await postJson(`${url}/v1/completions`, { model: 'llm', prompt: 'x' })).status === 404, 10_000);
    api.upsert('modelroutes', route('ml', 'llm-route', 'llm'));
    await waitFor('the route back', async () => (await postJson(`${url}/v1/completions`, { model: 'llm', prompt: 'x' })).status === 200, 10_000);
    expect(count(router.stderr(), none)).toBe(1);
  });

  it('an API server gone: healthy 0 and failures growing, the log naming the address in full; serving on meanwhile; healthy 1 once it is back', async () => {
    const port = new URL(api.url).port;
    await api.goDown();
    const down = await waitFor('every watch unhealthy, failures counted', async () => {
      const t = await metrics();
      return RESOURCES.every((r) => healthy(t, r) === 0 && failures(t, r)! >= 1) ? t : null;
    }, 20_000);
    const refused = `pods list/watch failed (connection to the API server at http://127.0.0.1:${port} failed: connect ECONNREFUSED 127.0.0.1:${port}); retrying in `;
    await waitFor('the refusal logged in full', () => router.stderr().includes(refused), 20_000);
    // Retries go on (1 s, 2 s, ...), each counted.
    const before = failures(down, 'pods')!;
    await waitFor('more failures', async () => failures(await metrics(), 'pods')! > before, 20_000);
    // The last snapshot keeps serving.
    for (const p of await podsServing(4)) expect(['llm-a', 'llm-b']).toContain(p);
    const failed = await metrics();
    await api.comeBack();
    const back = await waitFor('every watch healthy again', async () => {
      const t = await metrics();
      return RESOURCES.every((r) => healthy(t, r) === 1) ? t : null;
    }, 60_000);
    // A counter: what was counted stays.
    for (const r of RESOURCES) expect(failures(back, r)).toBeGreaterThanOrEqual(failures(failed, r)!);
    // Changes apply again.
    api.upsert('modelroutes', route('ml', 'llm-route-2', 'llm-2'));
    await waitFor('the new route', async () => (await postJson(`${url}/v1/completions`, { model: 'llm-2', prompt: 'x' })).status === 200, 20_000);
  });
});
