import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeKubeApi, type FakeKubeApi, type KubeObject } from '../helpers/fake-kube-api.js';
import { postJson, startMock, startRouterWith, tempDir, waitFor, type MockBackend, type Proc } from '../helpers/processes.js';

const GROUP = 'networking.serving.volcano.sh';
const GROUP_KEY = 'modelserving.volcano.sh/group-name';
const ROLE = 'modelserving.volcano.sh/role';

function pod(name: string, ip: string, group: string, role: string): KubeObject {
  return {
    apiVersion: 'v1', kind: 'Pod',
    metadata: { name, namespace: 'ml', labels: { app: 'pd', [GROUP_KEY]: group, [ROLE]: role } },
    spec: { containers: [{ name: 'engine', image: 'vllm' }] },
    status: { phase: 'Running', podIP: ip, conditions: [{ type: 'Ready', status: 'True' }] },
  };
}

describe('prefill/decode disaggregation with --kubernetes: the route API\'s ModelServer as written, pods paired by their labels', () => {
  let api: FakeKubeApi;
  let prefill: MockBackend;
  let decode: MockBackend;
  let router: Proc & { url: string };

  beforeAll(async () => {
    prefill = await startMock('pd-prefill-0', ['--pd-role', 'prefill']);
    decode = await startMock('pd-decode-0', ['--pd-role', 'decode', '--host', '127.0.0.2', '--port', String(prefill.port)]);
    api = await startFakeKubeApi(GROUP);
    // kthena's docs/.../ModelServer-prefill-decode-disaggregation.yaml, at the mocks' port.
    api.upsert('modelservers', {
      apiVersion: `${GROUP}/v1alpha1`, kind: 'ModelServer',
      metadata: { name: 'deepseek-v2', namespace: 'ml', creationTimestamp: '2026-01-01T00:00:00Z' },
      spec: {
        kvConnector: { type: 'nixl' },
        workloadSelector: {
          matchLabels: { app: 'pd' },
          pdGroup: { groupKey: GROUP_KEY, prefillLabels: { [ROLE]: 'prefill' }, decodeLabels: { [ROLE]: 'decode' } },
        },
        workloadPort: { port: prefill.port },
        model: 'deepseek-ai/DeepSeekV2',
        inferenceEngine: 'vLLM',
        trafficPolicy: { timeout: '10s' },
      },
    });
    api.upsert('modelroutes', {
      apiVersion: `${GROUP}/v1alpha1`, kind: 'ModelRoute',
      metadata: { name: 'deepseek-v2', namespace: 'ml', creationTimestamp: '2026-01-01T00:00:00Z' },
      spec: { modelName: 'deepseek-v2', rules: [{ name: 'all', targetModels: [{ modelServerName: 'deepseek-v2' }] }] },
    });
    api.upsert('pods', pod('pd-prefill-0', '127.0.0.1', 'g1', 'prefill'));
    api.upsert('pods', pod('pd-decode-0', '127.0.0.2', 'g1', 'decode'));
    const kubeconfig = api.writeKubeconfig(join(tempDir(), 'kubeconfig'));
    router = await startRouterWith(['--kubernetes'], { workers: 2, env: { KUBECONFIG: kubeconfig } }, 30_000);
  });
  afterAll(async () => {
    await router?.kill();
    await api?.close();
    await Promise.all([prefill?.kill(), decode?.kill()]);
  });

  const ask = () => postJson(`${router.url}/v1/chat/completions`, { model: 'deepseek-v2', messages: [{ role: 'user', content: 'hi' }], stream: true }, { accept: 'application/json' });

  it('sends the prefill to the prefill pod and the stream\'s decode, with its KV transfer parameters, to the decode pod of its group', async () => {
    const r = await ask();
    expect(r.status).toBe(200);
    expect(r.headers.get('x-mock-pod')).toBe('pd-decode-0');
    expect(r.headers.get('x-mock-kv-from')).toBe('pd-prefill-0');
    expect(await r.text()).toContain('data: [DONE]');
    expect((await prefill.stats()).lastBody).toMatchObject({ model: 'deepseek-ai/DeepSeekV2', max_tokens: 1, kv_transfer_params: { do_remote_decode: true } });
  });

  it('a decode pod relabelled into another group leaves no pair (503 no_ready_pd_pair) until a prefill pod joins that group', async () => {
    api.upsert('pods', pod('pd-decode-0', '127.0.0.2', 'g2', 'decode'));
    await waitFor('no pair left', async () => (await ask().then(async (r) => { await r.text(); return r.status; })) === 503);
    const r = await ask();
    expect((await r.json() as { error: { code: string } }).error.code).toBe('no_ready_pd_pair');
    api.upsert('pods', pod('pd-prefill-0', '127.0.0.1', 'g2', 'prefill'));
    await waitFor('the pair again', async () => (await ask().then(async (res) => { await res.text(); return res.status; })) === 200);
  });
});
