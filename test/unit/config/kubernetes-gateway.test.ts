/**
 * KubernetesSource with ROUTER_GATEWAY against the local list/watch API server
 * (test/helpers/fake-kube-api.ts), through the real @kubernetes/client-node code: the snapshot
 * holds the ModelRoutes bound to the Gateway only, follows changes of a route's parentRefs, and
 * each route left out is told once per change, as information rather than a warning.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, test } from 'vitest';
import type { KubeConfig } from '@kubernetes/client-node';
import { KubernetesSource } from '../../../src/config/kubernetes-source.js';
import { FakeKubeApi, startFakeKubeApi, type KubeObject } from '../../helpers/fake-kube-api.js';

const GROUP = 'networking.serving.volcano.sh';
const API_VERSION = `${GROUP}/v1alpha1`;

const clientLoadError = await import('@kubernetes/client-node').then(() => null, (err: unknown) => String(err));

function route(ns: string, name: string, created: string, parentRefs?: unknown[]): KubeObject {
  return {
    apiVersion: API_VERSION, kind: 'ModelRoute',
    metadata: { name, namespace: ns, creationTimestamp: created },
    spec: { modelName: 'llama-3', ...(parentRefs === undefined ? {} : { parentRefs }), rules: [{ targetModels: [{ modelServerName: 'llama' }] }] },
  };
}

function server(ns: string): KubeObject {
  return { apiVersion: API_VERSION, kind: 'ModelServer', metadata: { name: 'llama', namespace: ns }, spec: { workloadSelector: { matchLabels: { app: 'llama' } }, workloadPort: { port: 8000 } } };
}

async function until(what: string, probe: () => boolean, state: () => unknown): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!probe()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; state: ${JSON.stringify(state())}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe.skipIf(clientLoadError !== null)('KubernetesSource with ROUTER_GATEWAY', () => {
  let api: FakeKubeApi;
  let dir: string;
  let kubeConfig: KubeConfig;
  let infos: string[];
  let warns: string[];
  let source: KubernetesSource | null;

  beforeEach(async () => {
    api = await startFakeKubeApi(GROUP);
    dir = mkdtempSync(join(tmpdir(), 'kube-gateway-'));
    const { KubeConfig: KC } = await import('@kubernetes/client-node');
    kubeConfig = new KC();
    kubeConfig.loadFromFile(api.writeKubeconfig(join(dir, 'kubeconfig')));
    infos = [];
    warns = [];
    source = null;
  });

  afterEach(async () => {
    await source?.stop();
    await api.close();
    rmSync(dir, { recursive: true, force: true });
  });

  async function started(gateway: string | null): Promise<KubernetesSource> {
    source = new KubernetesSource({
      apiGroup: GROUP, redisCluster: false, namespace: null, gateway, kubeConfig, debounceMs: 5,
      log: (m, level) => (level === 'warn' ? warns : infos).push(m),
    });
    await source.start();
    return source;
  }
  const routes = (s: KubernetesSource): string[] => s.snapshot!.routes.map((r) => r.key);
  const notServed = (): string[] => infos.filter((l) => l.includes('so this router does not serve it'));

  function cluster(): void {
    api.upsert('modelservers', server('default'));
    api.upsert('modelservers', server('team-b'));
    api.upsert('modelroutes', route('default', 'on-a', '2025-01-01T00:00:00Z', [{ name: 'gw-a', namespace: 'kthena-system', kind: 'Gateway' }]));
    api.upsert('modelroutes', route('default', 'on-b', '2025-02-01T00:00:00Z', [{ name: 'gw-b', group: 'gateway.networking.k8s.io', kind: 'Gateway' }]));
    api.upsert('modelroutes', route('kthena-system', 'no-refs', '2025-03-01T00:00:00Z'));
    api.upsert('modelroutes', route('team-b', 'service', '2025-04-01T00:00:00Z', [{ name: 'gw-a', namespace: 'kthena-system', group: '', kind: 'Service' }]));
  }

  test('only the routes bound to the Gateway are in the snapshot; each other one is one information line naming its parentRefs', async () => {
    cluster();
    api.upsert('modelservers', server('kthena-system'));
    const s = await started('kthena-system/gw-a');
    expect(routes(s)).toEqual(['default/on-a', 'kthena-system/no-refs']);
    expect(notServed()).toEqual([
      'ModelRoute default/on-b: spec.parentRefs: default/gw-b: not bound to Gateway kthena-system/gw-a, so this router does not serve it (ROUTER_GATEWAY=kthena-system/gw-a)',
      'ModelRoute team-b/service: spec.parentRefs: kthena-system/gw-a (kind "Service", group "": not a Gateway): not bound to Gateway kthena-system/gw-a, '
        + 'so this router does not serve it (ROUTER_GATEWAY=kthena-system/gw-a)',
    ]);
    expect(warns.filter((w) => w.includes('on-b') || w.includes('team-b/service'))).toEqual([]);
    // The hidden route is named, with no remark on Gateways: both are this router's.
    expect(warns.filter((w) => w.includes('ModelRoute'))).toEqual([expect.stringMatching(/^ModelRoute kthena-system\/no-refs: spec\.modelName: model name "llama-3" is also served by ModelRoute default\/on-a, which is tried first .*match none$/)]);
  });

  test('a route rebound to the Gateway enters the snapshot, one bound away leaves it; each line is told once per change', async () => {
    cluster();
    const s = await started('default/gw-b');
    expect(routes(s)).toEqual(['default/on-b']);
    expect(notServed()).toHaveLength(3);

    api.upsert('modelroutes', route('default', 'on-a', '2025-01-01T00:00:00Z', [{ name: 'gw-b' }]));
    await until('on-a served', () => routes(s).join() === 'default/on-a,default/on-b', () => routes(s));
    api.upsert('modelroutes', route('default', 'on-b', '2025-02-01T00:00:00Z', [{ name: 'gw-c' }]));
    await until('on-b gone', () => routes(s).join() === 'default/on-a', () => routes(s));
    // A change of something else (a pod becomes ready): a new snapshot, and no line told again.
    api.upsert('pods', {
      metadata: { name: 'llama-0', namespace: 'default', labels: { app: 'llama' } },
      status: { phase: 'Running', podIP: '10.0.0.10', conditions: [{ type: 'Ready', status: 'True' }] },
    });
    const endpoints = (): number => s.snapshot!.servers.find((x) => x.key === 'default/llama')!.endpoints.length;
    await until('the pod ready', () => endpoints() === 1, () => s.snapshot);
    expect(notServed()).toEqual([
      expect.stringContaining('ModelRoute default/on-a: spec.parentRefs: kthena-system/gw-a: not bound'),
      expect.stringContaining('ModelRoute kthena-system/no-refs: spec.parentRefs: none: a route without parentRefs is bound to the Gateways of its own namespace (kthena-system), not to Gateway default/gw-b'),
      expect.stringContaining('ModelRoute team-b/service: '),
      'ModelRoute default/on-b: spec.parentRefs: default/gw-c: not bound to Gateway default/gw-b, so this router does not serve it (ROUTER_GATEWAY=default/gw-b)',
    ]);
  });

  test('no route bound to the Gateway: every request is 404, said once as a warning naming ROUTER_GATEWAY', async () => {
    cluster();
    const s = await started('other/gw');
    expect(routes(s)).toEqual([]);
    expect(notServed()).toHaveLength(4);
    expect(warns).toContain('4 ModelRoutes watched, none of which serves (ROUTER_GATEWAY=other/gw): every inference request is answered 404 model_not_found until one does (each route\'s line says why)');
  });

  test('a route whose parentRefs the Gateway API refuses is invalid: skipped when new, kept at its last valid version when edited, naming the entry and its field', async () => {
    cluster();
    api.upsert('modelroutes', route('default', 'no-name', '2025-05-01T00:00:00Z', [{ namespace: 'kthena-system', kind: 'Gateway' }]));
    const s = await started('kthena-system/gw-a');
    expect(routes(s)).toEqual(['default/on-a']);
    expect(warns).toContain('ModelRoute default/no-name: spec.parentRefs[0].name: is required: expected the name of the Gateway (or other parent) the route is bound to; skipped');

    // An edit that breaks a served route's parentRefs keeps the route as it was.
    api.upsert('modelroutes', route('default', 'on-a', '2025-01-01T00:00:00Z', [{ name: 'gw-a', namespace: 'kthena-system', port: 0 }]));
    await until('the bad edit told', () => warns.some((w) => w.includes('ModelRoute default/on-a: spec.parentRefs[0].port')), () => warns);
    expect(warns.filter((w) => w.startsWith('ModelRoute default/on-a: '))).toEqual([
      expect.stringMatching(/^ModelRoute default\/on-a: spec\.parentRefs\[0\]\.port: must be an integer from 1 to 65535, got 0; keeps its last valid version \(resourceVersion \S+\)$/),
    ]);
    expect(routes(s)).toEqual(['default/on-a']);
  });

  test('the problems logged are about the routes served and the ModelServers they target; an invalid route is named by every router', async () => {
    const GW_B = [{ name: 'gw-b' }];
    let month = 1; // each route of team-b created a month after the one before
    const b = (name: string, spec: Record<string, unknown>): KubeObject => ({
      apiVersion: API_VERSION, kind: 'ModelRoute', metadata: { name, namespace: 'team-b', creationTimestamp: `2025-0${month++}-01T00:00:00Z` },
      spec: { modelName: 'b-model', parentRefs: GW_B, ...spec },
    });
    api.upsert('modelservers', server('default'));
    api.upsert('modelroutes', route('default', 'on-a', '2025-01-01T00:00:00Z', [{ name: 'gw-a', namespace: 'kthena-system' }]));
    // Gateway team-b/gw-b's: a ModelServer with notes and no pod, an invalid one (a pdGroup without its role labels), and routes with every kind of problem.
    api.upsert('modelservers', { apiVersion: API_VERSION, kind: 'ModelServer', metadata: { name: 'b-only', namespace: 'team-b' },
      spec: { modle: 'typo', workloadSelector: { matchLabels: { app: 'b' } }, workloadPort: { port: 8000, protocol: 'https' } } });
    api.upsert('modelservers', { apiVersion: API_VERSION, kind: 'ModelServer', metadata: { name: 'b-pd', namespace: 'team-b' },
      spec: { workloadSelector: { matchLabels: { app: 'b' }, pdGroup: { groupKey: 'g' } }, workloadPort: { port: 8000 } } });
    api.upsert('modelroutes', b('on-b', {
      extra: 1,
      rules: [
        { modelMatch: { headers: { 'x-tier': { regex: '^(\\w+,?)+$' } } }, targetModels: [{ modelServerName: 'b-only', weight: 0 }] },
        { targetModels: [{ modelServerName: 'b-only' }] },
      ],
    }));
    api.upsert('modelroutes', b('on-b-hidden', { rules: [{ targetModels: [{ modelServerName: 'b-only' }] }] }));
    api.upsert('modelroutes', b('on-b-pd', { modelName: 'pd', rules: [{ targetModels: [{ modelServerName: 'b-pd' }] }] }));
    api.upsert('modelroutes', b('on-b-missing', { modelName: 'gone', rules: [{ targetModels: [{ modelServerName: 'gone' }] }] }));
    // Invalid (a rule without targets): its Gateway is not known, so every router names it.
    api.upsert('modelroutes', b('broken', { rules: [{ targetModels: [] }] }));
    // No route targets it.
    api.upsert('modelservers', { ...server('default'), metadata: { name: 'idle', namespace: 'default' } });

    const ofGatewayB = [
      'ModelServer team-b/b-only: spec.modle: unknown field',
      'ModelServer team-b/b-only: spec.workloadPort.protocol: "https" is not read',
      'ModelServer team-b/b-pd: spec.workloadSelector.pdGroup.prefillLabels: is required',
      'ModelRoute team-b/on-b: spec.extra: unknown field',
      'ModelRoute team-b/on-b: spec.rules[0].modelMatch.headers.x-tier.regex: "^(\\\\w+,?)+$" repeats a part that repeats itself',
      'ModelRoute team-b/on-b-pd: spec.rules[0].targetModels[0].modelServerName: ModelServer team-b/b-pd is invalid',
      'ModelRoute team-b/on-b-missing: spec.rules[0].targetModels[0].modelServerName: ModelServer team-b/gone does not exist',
      'ModelRoute team-b/on-b-hidden: spec.modelName: model name "b-model" is also served by ModelRoute team-b/on-b',
      'ModelRoute team-b/on-b: spec.rules[0].targetModels: every target has weight 0',
      'ModelServer team-b/b-only: spec.workloadSelector.matchLabels: selector app=b matches no pod',
    ];
    const ofGatewayA = ['ModelServer default/llama: spec.workloadSelector.matchLabels: selector app=llama matches no pod'];
    const invalid = 'ModelRoute team-b/broken: spec.rules[0].targetModels: must not be empty; skipped';
    const idle = 'ModelServer default/idle: spec.workloadSelector.matchLabels: selector app=llama matches no pod';
    const told = (parts: readonly string[]): string[][] => parts.map((part) => warns.filter((w) => w.startsWith(part)));

    await started('kthena-system/gw-a');
    expect(told([...ofGatewayA, invalid])).toEqual([...ofGatewayA, invalid].map((part) => [expect.stringContaining(part)]));
    expect(warns).toHaveLength(2);
    await source!.stop();

    warns = [];
    await started('team-b/gw-b');
    expect(told([...ofGatewayB, invalid])).toEqual([...ofGatewayB, invalid].map((part) => [expect.stringContaining(part)]));
    expect(warns).toHaveLength(ofGatewayB.length + 1);
    await source!.stop();

    // Without a Gateway, every resource concerns the router: the ModelServer no route targets too.
    warns = [];
    await started(null);
    expect(told([...ofGatewayB, ...ofGatewayA, invalid, idle])).toEqual([...ofGatewayB, ...ofGatewayA, invalid, idle].map((part) => [expect.stringContaining(part)]));
  });

  test('without ROUTER_GATEWAY every valid route is served, as before', async () => {
    cluster();
    const s = await started(null);
    expect(routes(s)).toEqual(['default/on-a', 'default/on-b', 'team-b/service']);
    expect(notServed()).toEqual([]);
    expect(warns.some((w) => w.startsWith('ModelRoute kthena-system/no-refs: ') && w.includes('ModelServer kthena-system/llama does not exist'))).toBe(true);
  });
});
