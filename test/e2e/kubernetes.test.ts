import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SERVICE_ACCOUNT_TOKEN } from '../../src/config/kubernetes-config-check.js';
import { startFakeKubeApi, type FakeKubeApi, type KubeObject } from '../helpers/fake-kube-api.js';
import { CLI, postJson, startMock, startProcess, startRouterWith, tempDir, waitFor, type MockBackend, type Proc } from '../helpers/processes.js';
import { serverPort } from '../helpers/ports.js';

const GROUP = 'networking.serving.volcano.sh';

function pod(name: string, ip: string, ready: boolean): KubeObject {
  return {
    apiVersion: 'v1', kind: 'Pod',
    metadata: { name, namespace: 'ml', labels: { app: 'llm' } },
    spec: { containers: [{ name: 'engine', image: 'vllm' }] },
    status: { phase: 'Running', podIP: ip, conditions: [{ type: 'Ready', status: ready ? 'True' : 'False' }] },
  };
}

describe('the built router with --kubernetes against a Kubernetes list/watch API', () => {
  let api: FakeKubeApi;
  let a: MockBackend;
  let b: MockBackend;
  let router: Proc & { url: string };
  let url: string;

  beforeAll(async () => {
    a = await startMock('llm-a');
    b = await startMock('llm-b', ['--host', '127.0.0.2', '--port', String(a.port)]);
    api = await startFakeKubeApi(GROUP);
    api.upsert('modelservers', {
      apiVersion: `${GROUP}/v1alpha1`, kind: 'ModelServer',
      metadata: { name: 'llm', namespace: 'ml', creationTimestamp: '2026-01-01T00:00:00Z' },
      spec: { model: 'llm-v1', workloadSelector: { matchLabels: { app: 'llm' } }, workloadPort: { port: a.port } },
    });
    api.upsert('modelroutes', {
      apiVersion: `${GROUP}/v1alpha1`, kind: 'ModelRoute',
      metadata: { name: 'llm-route', namespace: 'ml', creationTimestamp: '2026-01-01T00:00:00Z' },
      spec: { modelName: 'llm', rules: [{ name: 'all', targetModels: [{ modelServerName: 'llm' }] }] },
    });
    api.upsert('pods', pod('llm-a-0', '127.0.0.1', true));
    api.upsert('pods', pod('llm-b-0', '127.0.0.2', false));
    const dir = tempDir();
    const kubeconfig = api.writeKubeconfig(join(dir, 'kubeconfig'));
    // Ready after the first sync.
    router = await startRouterWith(['--kubernetes'], { workers: 2, env: { KUBECONFIG: kubeconfig } }, 30_000);
    url = router.url;
  });
  afterAll(async () => {
    await router?.kill();
    await api?.close();
    await Promise.all([a?.kill(), b?.kill()]);
  });

  async function podsServing(n: number): Promise<Set<string>> {
    const seen = new Set<string>();
    for (let i = 0; i < n; i++) {
      const r = await postJson(`${url}/v1/completions`, { model: 'llm', prompt: 'x' });
      expect(r.status).toBe(200);
      seen.add((await r.json() as { pod: string }).pod); // the mock names the pod that answered
    }
    return seen;
  }

  it('routes to the Running and Ready pods of the ModelServer, rewriting the model', async () => {
    expect([...(await podsServing(10))]).toEqual(['llm-a']);
    expect((await a.stats()).lastBody.model).toBe('llm-v1');
    const models = await (await fetch(`${url}/v1/models`)).json() as { data: { id: string }[] };
    expect(models.data.map((m: { id: string }) => m.id)).toEqual(['llm']);
  });

  it('follows pod readiness within a second', async () => {
    api.upsert('pods', pod('llm-b-0', '127.0.0.2', true));
    await waitFor('pod b to get traffic', async () => (await podsServing(6)).has('llm-b'), 3000);
    api.upsert('pods', pod('llm-a-0', '127.0.0.1', false));
    await waitFor('pod a to stop getting traffic', async () => {
      const s = await podsServing(6);
      return s.size === 1 && s.has('llm-b');
    }, 3000);
    // A pod's change changes no route: the workers are sent the servers alone and keep the routes as compiled.
    expect(router!.stderr()).toMatch(/resources reloaded from [^\n]*only ModelServers changed: the routes stay as compiled/);
  });

  it('the series of a pod that left the ModelServer (deleted) go, its counters included', async () => {
    const lines = async (name: string): Promise<string[]> =>
      (await (await fetch(`${url}/metrics`)).text()).split('\n').filter((l) => !l.startsWith('#') && l.includes(`backend_pod="${name}"`));
    // Ready, but nothing listens on its address: attempts on it fail to connect (and go to llm-b-0).
    api.upsert('pods', pod('llm-c-0', '127.0.0.3', true));
    await waitFor('connect failures counted for llm-c-0', async () => {
      await podsServing(4);
      return (await lines('llm-c-0')).some((l) => l.startsWith('inference_router_upstream_connect_failures_total{'));
    }, 10_000, 50);
    api.remove('pods', 'ml', 'llm-c-0');
    await waitFor('every series of llm-c-0 gone', async () => (await lines('llm-c-0')).length === 0, 5000);
    await podsServing(4);
    expect(await lines('llm-c-0')).toEqual([]);
    expect((await lines('llm-b-0')).length).toBeGreaterThan(0);
  });

  it('applies route changes and deletions live', async () => {
    api.upsert('modelroutes', {
      apiVersion: `${GROUP}/v1alpha1`, kind: 'ModelRoute',
      metadata: { name: 'llm-route', namespace: 'ml', creationTimestamp: '2026-01-01T00:00:00Z' },
      spec: { modelName: 'llm-renamed', rules: [{ name: 'all', targetModels: [{ modelServerName: 'llm' }] }] },
    });
    await waitFor('renamed model', async () => (await postJson(`${url}/v1/completions`, { model: 'llm-renamed', prompt: 'x' })).status === 200, 3000);
    expect((await postJson(`${url}/v1/completions`, { model: 'llm', prompt: 'x' })).status).toBe(404);
    api.remove('modelroutes', 'ml', 'llm-route');
    await waitFor('route gone', async () => (await postJson(`${url}/v1/completions`, { model: 'llm-renamed', prompt: 'x' })).status === 404, 3000);
    // No route targets the ModelServer any more: its pods leave the router's pools (and their series go).
    const pools = async (): Promise<string[]> => (await (await fetch(`${url}/metrics`)).text()).split('\n').filter((l) => l.startsWith('inference_router_upstream_connections{'));
    await waitFor('the pools of the ModelServer gone', async () => (await pools()).length === 0, 5000);
    expect(router.stderr()).toMatch(/resources reloaded from kubernetes all namespaces \(snapshot \d+\): 0 routes \[\], 0 servers \[\]; 1 ModelServers no route served targets, not used \(their pods neither scraped nor connected to\) \[ml\/llm\]\n/);
    // A pod of that unused ModelServer comes: nothing the workers use changed, so no new snapshot.
    const last = Math.max(...[...router.stderr().matchAll(/\(snapshot (\d+)\)/g)].map((m) => Number(m[1])));
    api.upsert('pods', pod('llm-d-0', '127.0.0.4', true));
    await waitFor('the pod change read', () => router.stderr().includes(`resources changed: nothing the routes use changed (a change only in ModelServers no route targets, or none); snapshot ${last} kept`), 5000);
    expect(router.stderr()).not.toContain(`(snapshot ${last + 1})`);
  });

  it('an API that answers 410 Gone to every watch right after each relist gets relists backed off, not a loop of full lists', async () => {
    const podLists = (): number => api.requests.filter((q) => q.plural === 'pods' && !q.watch).length;
    const before = podLists();
    api.sendBookmarks(); // the watches have made progress: the first 410 relists at once
    api.expireNextWatches(1_000_000, 'pods');
    api.dropWatches();
    await new Promise((r) => setTimeout(r, 2500));
    api.expireNextWatches(0);
    // At once, then after 1 s (and 2 s later): a handful, where a loop made hundreds.
    expect(podLists() - before).toBeGreaterThanOrEqual(2);
    expect(podLists() - before).toBeLessThanOrEqual(4);
    expect(router.stderr()).toContain('kubernetes: pods watch answered 410 Gone (resourceVersion too old) 2 times in a row, right after relisting; relisting in 1000 ms');
  });
});

describe('--kubernetes with no cluster configuration', () => {
  it.skipIf(existsSync(SERVICE_ACCOUNT_TOKEN))('stops at start (exit 2) naming where it looked, instead of retrying against localhost forever', async () => {
    const home = tempDir();
    const router = startProcess([CLI, '--kubernetes', '--port', String(await serverPort()), '--workers', '1'], { KUBECONFIG: '', HOME: home });
    expect(await router.exited).toBe(2);
    expect(router.stderr()).toContain('no cluster configuration found');
    expect(router.stderr()).toContain(`${home}/.kube/config does not exist`);
    expect(router.stderr()).not.toContain('list/watch failed');
  });
});
