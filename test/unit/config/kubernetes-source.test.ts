/**
 * KubernetesSource against a local API server that speaks the list/watch protocol
 * (test/helpers/fake-kube-api.ts), through the real @kubernetes/client-node code.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, test } from 'vitest';
import type { KubeConfig } from '@kubernetes/client-node';
import { KubernetesSource, type KubernetesSnapshot, type SourceClock } from '../../../src/config/kubernetes-source.js';
import { FakeKubeApi, startFakeKubeApi, type KubeObject } from '../../helpers/fake-kube-api.js';
import { GLOBAL_WITHOUT_REDIS } from '../../../src/config/resources.js';

const GROUP = 'networking.serving.volcano.sh';
const API_VERSION = `${GROUP}/v1alpha1`;

// @kubernetes/client-node must load on this Node for anything below to run; say why if not.
const clientLoadError = await import('@kubernetes/client-node').then(() => null, (err: unknown) => String(err));

test('@kubernetes/client-node loads on this Node version', () => {
  expect(clientLoadError).toBeNull();
});

function route(ns: string, name: string, modelName: string, servers: string[], extra: Record<string, unknown> = {}): KubeObject {
  return {
    apiVersion: API_VERSION,
    kind: 'ModelRoute',
    metadata: { name, namespace: ns, ...(extra.metadata as object) },
    spec: {
      modelName,
      rules: [{ name: 'default', targetModels: servers.map((s) => ({ modelServerName: s })) }],
      ...(extra.spec as object),
    },
  };
}

function server(ns: string, name: string, labels: Record<string, string>, port = 8000, spec: Record<string, unknown> = {}): KubeObject {
  return {
    apiVersion: API_VERSION,
    kind: 'ModelServer',
    metadata: { name, namespace: ns },
    spec: { workloadSelector: { matchLabels: labels }, workloadPort: { port }, ...spec },
  };
}

function pod(ns: string, name: string, labels: Record<string, string>, ip: string, opts: { ready?: boolean; phase?: string; deleting?: boolean } = {}): KubeObject {
  return {
    metadata: { name, namespace: ns, labels, ...(opts.deleting ? { deletionTimestamp: '2025-06-01T00:00:00Z' } : {}) },
    spec: { containers: [{ name: 'engine', image: 'vllm' }] },
    status: {
      phase: opts.phase ?? 'Running',
      podIP: ip,
      conditions: [
        { type: 'PodScheduled', status: 'True' },
        { type: 'Ready', status: opts.ready === false ? 'False' : 'True' },
      ],
    },
  };
}

/** A compact view of a snapshot: route keys with their model, and server endpoints. */
function view(s: KubernetesSnapshot | null): { routes: string[]; endpoints: Record<string, string[]> } {
  if (s === null) return { routes: [], endpoints: {} };
  const endpoints: Record<string, string[]> = {};
  for (const srv of s.servers) endpoints[srv.key] = srv.endpoints.map((e) => `${e.name}@${e.host}:${e.port}`);
  return { routes: s.routes.map((r) => `${r.key}=${r.modelName}`), endpoints };
}

/**
 * Real timers (capped at 5 ms so backoff does not slow the test) that record every requested delay;
 * `now()` is real time plus `ahead`, which a test raises to let time pass.
 */
function recordingClock(): SourceClock & { delays: number[]; ahead: number } {
  const delays: number[] = [];
  const c = {
    delays,
    ahead: 0,
    now: () => Date.now() + c.ahead,
    setTimeout: (fn: () => void, ms: number) => {
      delays.push(ms);
      return setTimeout(fn, Math.min(ms, 5));
    },
    clearTimeout: (h: unknown) => clearTimeout(h as ReturnType<typeof setTimeout>),
  };
  return c;
}

async function until<T>(what: string, probe: () => T | false | null | undefined, describeState: () => unknown): Promise<T> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const v = probe();
    if (v !== false && v !== null && v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; state: ${JSON.stringify(describeState())}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe.skipIf(clientLoadError !== null)('KubernetesSource', () => {
  let api: FakeKubeApi;
  let dir: string;
  let kubeConfig: KubeConfig;
  let logs: string[];
  /** The lines logged at level warn. */
  let warns: string[];
  let snapshots: KubernetesSnapshot[];
  let clock: ReturnType<typeof recordingClock>;
  let sources: KubernetesSource[];

  beforeEach(async () => {
    api = await startFakeKubeApi(GROUP);
    dir = mkdtempSync(join(tmpdir(), 'kube-source-'));
    const { KubeConfig: KC } = await import('@kubernetes/client-node');
    kubeConfig = new KC();
    kubeConfig.loadFromFile(api.writeKubeconfig(join(dir, 'kubeconfig')));
    logs = [];
    warns = [];
    snapshots = [];
    clock = recordingClock();
    sources = [];
  });

  afterEach(async () => {
    await Promise.all(sources.map((s) => s.stop()));
    await api.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** `watchIdleMs`, `listTimeoutMs`: the watchdog's and the list's limits (the source's defaults when left out). */
  function newSource(namespace: string | null = null, watchIdleMs?: number, listTimeoutMs?: number): KubernetesSource {
    const source = new KubernetesSource({ apiGroup: GROUP, redisCluster: false, namespace, kubeConfig, log: (m, level) => { logs.push(m); if (level === 'warn') warns.push(m); }, clock, watchIdleMs, listTimeoutMs });
    source.onSnapshot((s) => snapshots.push(s));
    sources.push(source);
    return source;
  }

  async function started(namespace: string | null = null, watchIdleMs?: number): Promise<KubernetesSource> {
    const source = newSource(namespace, watchIdleMs);
    await source.start();
    return source;
  }

  /** Waits until the latest snapshot satisfies `check`. */
  function settle(source: KubernetesSource, what: string, check: (v: ReturnType<typeof view>) => boolean): Promise<ReturnType<typeof view>> {
    return until(what, () => {
      const v = view(source.snapshot);
      return check(v) ? v : false;
    }, () => ({ snapshot: view(source.snapshot), logs }));
  }

  const LABELS = { app: 'llama' };

  test('initial sync: start() resolves with a snapshot of valid routes and the ready pods of each server', async () => {
    api.upsert('modelservers', server('default', 'llama', LABELS, 8000));
    api.upsert('modelroutes', route('default', 'llama-route', 'llama-3', ['llama']));
    api.upsert('pods', pod('default', 'llama-0', LABELS, '10.0.0.10'));
    api.upsert('pods', pod('default', 'llama-1', LABELS, '10.0.0.11', { ready: false }));
    api.upsert('pods', pod('default', 'other-0', { app: 'other' }, '10.0.0.12'));
    api.upsert('pods', pod('elsewhere', 'llama-x', LABELS, '10.0.9.1'));
    api.upsert('pods', pod('default', 'llama-v6', LABELS, 'fd00::7'));

    const source = newSource();
    expect(source.synced).toBe(false);
    await source.start();
    expect(source.synced).toBe(true);
    expect(snapshots).toHaveLength(1);
    expect(view(snapshots[0])).toEqual({
      routes: ['default/llama-route=llama-3'],
      endpoints: { 'default/llama': ['llama-0@10.0.0.10:8000', 'llama-v6@[fd00::7]:8000'] },
    });
    const r = snapshots[0].routes[0];
    expect(r).toMatchObject({ kind: 'ModelRoute', namespace: 'default', name: 'llama-route', rateLimit: null });
    expect(r.creationTimestamp).toMatch(/^2025-01-01T/);
    // One list per kind, then one watch per kind from the list's resourceVersion.
    const lists = api.requests.filter((q) => !q.watch).map((q) => q.path).sort();
    expect(lists).toEqual(['/api/v1/pods', `/apis/${GROUP}/v1alpha1/modelroutes`, `/apis/${GROUP}/v1alpha1/modelservers`]);
    await until('three watches', () => api.watchCount() === 3, () => api.requests);
  });

  test('spec.endpoints is used as is (standalone style), without pods', async () => {
    api.upsert('modelservers', { ...server('default', 'fixed', {}), spec: { endpoints: [{ name: 'gpu-a', address: '10.1.0.5:9000' }] } });
    api.upsert('modelroutes', route('default', 'r', 'm', ['fixed']));
    const source = await started();
    expect(view(source.snapshot).endpoints).toEqual({ 'default/fixed': ['gpu-a@10.1.0.5:9000'] });
  });

  test('routes: add, modify and delete apply to the snapshot', async () => {
    api.upsert('modelservers', server('default', 'llama', LABELS));
    const source = await started();
    expect(view(source.snapshot).routes).toEqual([]);

    api.upsert('modelroutes', route('default', 'r1', 'llama-3', ['llama']));
    await settle(source, 'route added', (v) => v.routes.includes('default/r1=llama-3'));

    api.upsert('modelroutes', route('default', 'r1', 'llama-3.1', ['llama'], {
      spec: { rateLimit: { inputTokensPerUnit: 10, outputTokensPerUnit: 5000, unit: 'minute' } },
    }));
    await settle(source, 'route modified', (v) => v.routes.includes('default/r1=llama-3.1'));
    expect(source.snapshot?.routes[0].rateLimit).toEqual({ inputTokensPerUnit: 10, outputTokensPerUnit: 5000, unit: 'minute', global: null, mode: 'enforce' });

    api.remove('modelroutes', 'default', 'r1');
    await settle(source, 'route deleted', (v) => v.routes.length === 0);
  });

  test('servers: add, modify and delete apply; a route whose server disappears is skipped with a log line', async () => {
    api.upsert('pods', pod('default', 'llama-0', LABELS, '10.0.0.10'));
    api.upsert('modelroutes', route('default', 'r1', 'llama-3', ['llama']));
    const source = await started();
    expect(view(source.snapshot)).toEqual({ routes: [], endpoints: {} });
    expect(logs.some((l) => l.includes('ModelRoute default/r1') && l.includes('ModelServer default/llama does not exist'))).toBe(true);

    api.upsert('modelservers', server('default', 'llama', LABELS, 8000));
    await settle(source, 'server added, route enabled', (v) =>
      v.routes.includes('default/r1=llama-3') && v.endpoints['default/llama']?.[0] === 'llama-0@10.0.0.10:8000');

    api.upsert('modelservers', server('default', 'llama', LABELS, 8081, { model: 'meta-llama/Llama-3-8B' }));
    await settle(source, 'server port changed', (v) => v.endpoints['default/llama']?.[0] === 'llama-0@10.0.0.10:8081');
    expect(source.snapshot?.servers[0].model).toBe('meta-llama/Llama-3-8B');

    const logsBefore = logs.length;
    api.remove('modelservers', 'default', 'llama');
    await settle(source, 'server deleted, route skipped', (v) => v.routes.length === 0 && Object.keys(v.endpoints).length === 0);
    expect(logs.slice(logsBefore).some((l) => l.includes('ModelRoute default/r1') && l.includes('route skipped'))).toBe(true);
  });

  test('pods: add, modify and delete change the endpoints', async () => {
    api.upsert('modelservers', server('default', 'llama', LABELS));
    api.upsert('modelroutes', route('default', 'r1', 'llama-3', ['llama']));
    const source = await started();
    expect(view(source.snapshot).endpoints).toEqual({ 'default/llama': [] });

    api.upsert('pods', pod('default', 'llama-0', LABELS, '10.0.0.10'));
    await settle(source, 'pod added', (v) => v.endpoints['default/llama'].join() === 'llama-0@10.0.0.10:8000');
    api.upsert('pods', pod('default', 'llama-1', LABELS, '10.0.0.11'));
    await settle(source, 'second pod added', (v) => v.endpoints['default/llama'].length === 2);
    api.upsert('pods', pod('default', 'llama-0', LABELS, '10.0.0.20'));
    await settle(source, 'pod IP changed', (v) => v.endpoints['default/llama'].join() === 'llama-0@10.0.0.20:8000,llama-1@10.0.0.11:8000');
    api.upsert('pods', pod('default', 'llama-1', { app: 'relabelled' }, '10.0.0.11'));
    await settle(source, 'pod relabelled away', (v) => v.endpoints['default/llama'].join() === 'llama-0@10.0.0.20:8000');
    api.remove('pods', 'default', 'llama-0');
    await settle(source, 'pod deleted', (v) => v.endpoints['default/llama'].length === 0);
  });

  test('pod readiness: not ready, terminating or finished pods get no traffic; ready again brings them back', async () => {
    api.upsert('modelservers', server('default', 'llama', LABELS));
    api.upsert('pods', pod('default', 'llama-0', LABELS, '10.0.0.10'));
    api.upsert('pods', pod('default', 'llama-1', LABELS, '10.0.0.11'));
    const source = await started();
    expect(view(source.snapshot).endpoints['default/llama']).toHaveLength(2);

    api.upsert('pods', pod('default', 'llama-0', LABELS, '10.0.0.10', { ready: false }));
    await settle(source, 'llama-0 not ready', (v) => v.endpoints['default/llama'].join() === 'llama-1@10.0.0.11:8000');
    api.upsert('pods', pod('default', 'llama-0', LABELS, '10.0.0.10'));
    await settle(source, 'llama-0 ready again', (v) => v.endpoints['default/llama'].length === 2);
    api.upsert('pods', pod('default', 'llama-1', LABELS, '10.0.0.11', { deleting: true }));
    await settle(source, 'llama-1 terminating', (v) => v.endpoints['default/llama'].join() === 'llama-0@10.0.0.10:8000');
    api.upsert('pods', pod('default', 'llama-0', LABELS, '10.0.0.10', { phase: 'Succeeded' }));
    await settle(source, 'llama-0 finished', (v) => v.endpoints['default/llama'].length === 0);
    const noIp = pod('default', 'llama-2', LABELS, '');
    api.upsert('pods', noIp);
    api.upsert('pods', pod('default', 'llama-3', LABELS, '10.0.0.13'));
    await settle(source, 'only the pod with an IP', (v) => v.endpoints['default/llama'].join() === 'llama-3@10.0.0.13:8000');
  });

  test('pods are cached with only what the router reads of them, from the list and from the watch', async () => {
    const bulky = (name: string, ip: string, ready: boolean): KubeObject => {
      const p = pod('default', name, LABELS, ip, { ready });
      p.metadata.annotations = { 'kubectl.kubernetes.io/restartedAt': '2025-01-01T00:00:00Z' };
      p.metadata.managedFields = [{ manager: 'kubelet', operation: 'Update', fieldsType: 'FieldsV1', fieldsV1: { 'f:status': { 'f:podIP': {} } } }];
      (p.status as Record<string, unknown>).containerStatuses = [{ name: 'engine', ready, restartCount: 0, image: 'vllm' }];
      return p;
    };
    api.upsert('modelservers', server('default', 'llama', LABELS));
    api.upsert('pods', bulky('llama-0', '10.0.0.10', true));
    const source = await started();
    const cached = (): Record<string, any>[] => (source as unknown as { pods: { objects(): Record<string, any>[] } }).pods.objects();
    const expectEssentials = (p: Record<string, any>, ready: boolean): void => {
      expect(Object.keys(p).sort()).toEqual(['metadata', 'status']);
      expect(Object.keys(p.metadata).filter((k) => p.metadata[k] !== undefined).sort()).toEqual(['labels', 'name', 'namespace', 'resourceVersion', 'uid']);
      expect(p.status).toEqual({ phase: 'Running', podIP: p.status.podIP, conditions: [{ type: 'PodScheduled', status: 'True' }, { type: 'Ready', status: ready ? 'True' : 'False' }] });
    };
    expect(cached()).toHaveLength(1);
    expectEssentials(cached()[0], true);

    api.upsert('pods', bulky('llama-0', '10.0.0.10', false));
    api.upsert('pods', bulky('llama-1', '10.0.0.11', true));
    await settle(source, 'watched changes applied', (v) => v.endpoints['default/llama'].join() === 'llama-1@10.0.0.11:8000');
    expect(cached()).toHaveLength(2);
    for (const p of cached()) expectEssentials(p, p.metadata.name === 'llama-1');
  });

  test('an invalid resource is skipped with a log line naming it; the rest keeps working; fixing it applies it', async () => {
    api.upsert('modelservers', server('default', 'llama', LABELS));
    api.upsert('modelservers', server('default', 'broken-server', LABELS, 70000));
    api.upsert('modelroutes', route('default', 'good', 'llama-3', ['llama']));
    api.upsert('modelroutes', route('default', 'bad', 'other', ['llama'], { spec: { rateLimit: { inputTokensPerUnit: 10, unit: 'week' } } }));
    api.upsert('pods', pod('default', 'llama-0', LABELS, '10.0.0.10'));
    const source = await started();
    expect(view(source.snapshot)).toEqual({ routes: ['default/good=llama-3'], endpoints: { 'default/llama': ['llama-0@10.0.0.10:8000'] } });
    expect(logs.find((l) => l.includes('ModelRoute default/bad'))).toMatch(/spec\.rateLimit\.unit.*skipped/);
    expect(warns.find((l) => l.includes('ModelRoute default/bad'))).toMatch(/spec\.rateLimit\.unit.*skipped/);
    expect(logs.find((l) => l.includes('ModelServer default/broken-server'))).toMatch(/spec\.workloadPort\.port/);

    // Logged once, not on every rebuild.
    api.upsert('pods', pod('default', 'llama-1', LABELS, '10.0.0.11'));
    await settle(source, 'another pod', (v) => v.endpoints['default/llama'].length === 2);
    expect(logs.filter((l) => l.includes('ModelRoute default/bad'))).toHaveLength(1);

    api.upsert('modelroutes', route('default', 'bad', 'other', ['llama'], { spec: { rateLimit: { inputTokensPerUnit: 10, unit: 'hour' } } }));
    await settle(source, 'fixed route applied', (v) => v.routes.includes('default/bad=other'));
  });

  test('a valid resource changed into an invalid one keeps its last valid version, logged naming the field; deleted, it goes', async () => {
    api.upsert('modelservers', server('default', 'llama', LABELS));
    api.upsert('modelroutes', route('default', 'r1', 'llama-3', ['llama'], { spec: { rateLimit: { inputTokensPerUnit: 10, unit: 'hour' } } }));
    api.upsert('pods', pod('default', 'llama-0', LABELS, '10.0.0.10'));
    const source = await started();
    expect(view(source.snapshot)).toEqual({ routes: ['default/r1=llama-3'], endpoints: { 'default/llama': ['llama-0@10.0.0.10:8000'] } });
    const routeRv = api.get('modelroutes', 'default', 'r1')!.metadata.resourceVersion;
    const serverRv = api.get('modelservers', 'default', 'llama')!.metadata.resourceVersion;

    // An edit the router rejects (a CRD schema older than the router's checks, or validation off).
    api.upsert('modelroutes', route('default', 'r1', 'llama-3', ['llama'], { spec: { rateLimit: { inputTokensPerUnit: 10, unit: 'week' } } }));
    api.upsert('modelservers', server('default', 'llama', LABELS, 70000));
    await until('both problems logged', () => warns.filter((l) => l.includes('keeps its last valid version')).length === 2, () => warns);
    expect(warns).toContain(`ModelRoute default/r1: spec.rateLimit.unit: expected one of second, minute, hour, day, month, got "week"; keeps its last valid version (resourceVersion ${routeRv})`);
    expect(warns.some((l) => l.startsWith('ModelServer default/llama: spec.workloadPort.port:') && l.endsWith(`; keeps its last valid version (resourceVersion ${serverRv})`))).toBe(true);
    // Still served as before, the server following its pods with its last valid selector and port.
    api.upsert('pods', pod('default', 'llama-1', LABELS, '10.0.0.11'));
    await settle(source, 'pod added to the kept server', (v) => v.endpoints['default/llama']?.length === 2);
    expect(view(source.snapshot).routes).toEqual(['default/r1=llama-3']);
    expect(source.snapshot!.routes[0].rateLimit?.unit).toBe('hour');
    expect(source.snapshot!.servers[0].workloadPort).toBe(8000);

    // Fixed: the new version applies.
    api.upsert('modelroutes', route('default', 'r1', 'llama-4', ['llama']));
    await settle(source, 'fixed route applied', (v) => v.routes.join() === 'default/r1=llama-4');

    // Deleted, then created again invalid: a new object with no valid version, skipped.
    api.remove('modelroutes', 'default', 'r1');
    await settle(source, 'route deleted', (v) => v.routes.length === 0);
    api.upsert('modelroutes', route('default', 'r1', 'llama-3', ['llama'], { spec: { rateLimit: { inputTokensPerUnit: 10, unit: 'week' } } }));
    await until('re-created invalid route skipped', () => warns.some((l) => l.startsWith('ModelRoute default/r1: spec.rateLimit.unit') && l.endsWith('; skipped')), () => warns);
    expect(view(source.snapshot).routes).toEqual([]);
  });

  test('a ModelServer with workloadSelector.pdGroup: its pods carry their group and role labels (and no other); a relabelled pod makes a new snapshot; a bad kvConnector.type keeps the last valid version', async () => {
    const PD_GROUP = { groupKey: 'group', prefillLabels: { role: 'prefill' }, decodeLabels: { role: 'decode' } };
    const pdServer = (name: string, type = 'nixl'): KubeObject => server('default', name, LABELS, 8000, { workloadSelector: { matchLabels: LABELS, pdGroup: PD_GROUP }, kvConnector: { type } });
    api.upsert('modelservers', pdServer('pd'));
    api.upsert('modelroutes', route('default', 'to-pd', 'pd-model', ['pd']));
    api.upsert('pods', pod('default', 'p-0', { ...LABELS, group: 'g1', role: 'prefill', extra: 'x' }, '10.0.0.1'));
    api.upsert('pods', pod('default', 'd-0', { ...LABELS, group: 'g1', role: 'decode' }, '10.0.0.2'));
    const source = await started();
    const pd = source.snapshot!.servers[0];
    expect(pd.pd).toEqual({ ...PD_GROUP, connector: 'nixl' });
    expect(pd.endpoints.map((e) => [e.name, e.labels])).toEqual([['d-0', { group: 'g1', role: 'decode' }], ['p-0', { group: 'g1', role: 'prefill' }]]);

    api.upsert('pods', pod('default', 'd-0', { ...LABELS, group: 'g2', role: 'decode' }, '10.0.0.2'));
    await until('relabelled pod applied', () => source.snapshot!.servers[0].endpoints[0].labels?.group === 'g2', () => warns);

    const serverRv = api.get('modelservers', 'default', 'pd')!.metadata.resourceVersion;
    api.upsert('modelservers', pdServer('pd', 'sglang'));
    await until('the edit logged', () => warns.some((l) => l.startsWith('ModelServer default/pd: spec.kvConnector.type:')), () => warns);
    expect(warns).toContain(`ModelServer default/pd: spec.kvConnector.type: expected one of http, lmcache, nixl, mooncake, got "sglang"; keeps its last valid version (resourceVersion ${serverRv})`);
    expect(source.snapshot!.servers[0].pd?.connector).toBe('nixl');
  });

  test('a field neither the route API nor the router has is logged once, naming it; the resource still applies', async () => {
    api.upsert('modelservers', server('default', 'llama', LABELS));
    api.upsert('modelroutes', route('default', 'typo', 'llama-3', ['llama'], { spec: { rules: [{ modelMatches: { headers: { x: { exact: 'y' } } }, targetModels: [{ modelServerName: 'llama' }] }] } }));
    const source = await started();
    expect(view(source.snapshot).routes).toEqual(['default/typo=llama-3']);
    expect(logs).toContain('ModelRoute default/typo: spec.rules[0].modelMatches: unknown field, ignored: neither the route API nor this router has it; did you mean modelMatch?');
    api.upsert('pods', pod('default', 'llama-1', LABELS, '10.0.0.11'));
    await settle(source, 'another pod', (v) => v.endpoints['default/llama'].length === 1);
    expect(logs.filter((l) => l.includes('modelMatches'))).toHaveLength(1);
  });

  test('a rateLimit.global without redis is logged as a local limit; the route still applies', async () => {
    api.upsert('modelservers', server('default', 'llama', LABELS));
    api.upsert('modelroutes', route('default', 'local-global', 'llama-3', ['llama'], { spec: { rateLimit: { inputTokensPerUnit: 10, unit: 'hour', global: {} } } }));
    const source = await started();
    expect(view(source.snapshot).routes).toEqual(['default/local-global=llama-3']);
    expect(logs).toContain(`ModelRoute default/local-global: spec.rateLimit.global: ${GLOBAL_WITHOUT_REDIS}`);
  });

  test('a route naming a ModelServer that exists but is invalid is skipped, the log saying it is invalid rather than missing', async () => {
    api.upsert('modelservers', server('default', 'broken', LABELS, 70000));
    api.upsert('modelroutes', route('default', 'r', 'llama-3', ['broken']));
    const source = await started();
    expect(view(source.snapshot).routes).toEqual([]);
    expect(logs).toContain('ModelRoute default/r: spec.rules[0].targetModels[0].modelServerName: ModelServer default/broken is invalid (its own line says why), so it counts as missing; route skipped');
    expect(logs.some((l) => l.startsWith('ModelServer default/broken: spec.workloadPort.port'))).toBe(true);
  });

  test('a route whose rule has only targets of weight 0 is kept, and logged naming the rule', async () => {
    api.upsert('modelservers', server('default', 'llama', LABELS));
    api.upsert('modelroutes', route('default', 'off', 'llama-3', ['llama'], { spec: { rules: [{ targetModels: [{ modelServerName: 'llama', weight: 0 }] }] } }));
    const source = await started();
    expect(view(source.snapshot).routes).toEqual(['default/off=llama-3']);
    expect(logs).toContain('ModelRoute default/off: spec.rules[0].targetModels: every target has weight 0, so each request this rule matches is answered 503 no_weighted_target, unless a later route of the same model name takes it (give a target a weight above 0 to send it traffic)');
  });

  test('routes for the same model name: all kept, oldest first (creationTimestamp, then namespace/name), the order they are tried in; a hidden one is logged', async () => {
    api.upsert('modelservers', server('default', 'llama', LABELS));
    api.upsert('modelservers', server('team-b', 'llama', LABELS));
    api.upsert('modelroutes', route('default', 'newer', 'llama-3', ['llama'], { metadata: { creationTimestamp: '2025-03-01T00:00:00Z' } }));
    api.upsert('modelroutes', route('default', 'older', 'llama-3', ['llama'], { metadata: { creationTimestamp: '2025-02-01T00:00:00Z' } }));
    const source = await started();
    expect(view(source.snapshot).routes).toEqual(['default/older=llama-3', 'default/newer=llama-3']);
    expect(logs.some((l) => l.includes('ModelRoute default/newer') && l.includes('is also served by ModelRoute default/older, which is tried first'))).toBe(true);

    api.remove('modelroutes', 'default', 'older');
    await settle(source, 'the remaining route alone', (v) => v.routes.join() === 'default/newer=llama-3');

    // Same creationTimestamp: namespace/name order decides.
    api.upsert('modelroutes', route('team-b', 'same-age', 'llama-3', ['llama'], { metadata: { creationTimestamp: '2025-03-01T00:00:00Z' } }));
    await until('tie logged', () => logs.some((l) => l.includes('ModelRoute team-b/same-age') && l.includes('default/newer')), () => logs);
    expect(view(source.snapshot).routes).toEqual(['default/newer=llama-3', 'team-b/same-age=llama-3']);
  });

  test('routes for one model name bound to different Gateways: the hidden one is told parentRefs is not read without ROUTER_GATEWAY, and what to do', async () => {
    api.upsert('modelservers', server('default', 'llama', LABELS));
    api.upsert('modelroutes', route('default', 'gw-8080', 'llama-3', ['llama'], { metadata: { creationTimestamp: '2025-02-01T00:00:00Z' }, spec: { parentRefs: [{ name: 'default', namespace: 'kthena-system', kind: 'Gateway' }] } }));
    api.upsert('modelroutes', route('default', 'gw-8081', 'llama-3', ['llama'], { metadata: { creationTimestamp: '2025-03-01T00:00:00Z' }, spec: { parentRefs: [{ name: 'kthena-gateway-8081', kind: 'Gateway' }] } }));
    const source = await started();
    expect(view(source.snapshot).routes).toEqual(['default/gw-8080=llama-3', 'default/gw-8081=llama-3']);
    expect(logs).toContain('ModelRoute default/gw-8081: spec.modelName: model name "llama-3" is also served by ModelRoute default/gw-8080, which is tried first and whose rule spec.rules[0] '
      + 'takes every request for it, so this route never receives one; a route of a shared model name is tried only when the earlier routes\' rules match none; '
      + 'they are bound to different Gateways (spec.parentRefs: kthena-system/default; default/kthena-gateway-8081), which is not read while ROUTER_GATEWAY is unset: '
      + 'the router serves every route on its own port, so to serve a model name differently per Gateway run a router per Gateway, each with ROUTER_GATEWAY naming its own (<namespace>/<name>)');
  });

  test('routes that serve only LoRA adapters are kept; an adapter listed twice is served by both, the oldest route first', async () => {
    api.upsert('modelservers', server('default', 'llama', LABELS));
    api.upsert('modelroutes', route('default', 'lora-new', '', ['llama'], { metadata: { creationTimestamp: '2025-03-01T00:00:00Z' }, spec: { loraAdapters: ['math', 'code'] } }));
    api.upsert('modelroutes', route('default', 'lora-old', '', ['llama'], { metadata: { creationTimestamp: '2025-02-01T00:00:00Z' }, spec: { loraAdapters: ['math'] } }));
    const source = await started();
    expect(source.snapshot!.routes.map((r) => [r.key, r.modelName, r.loraAdapters])).toEqual([
      ['default/lora-old', null, ['math']],
      ['default/lora-new', null, ['math', 'code']],
    ]);
    expect(logs.some((l) => l.includes('ModelRoute default/lora-new') && l.includes('LoRA adapter "math" is also served by ModelRoute default/lora-old, which is tried first'))).toBe(true);
  });

  test('watch drop: the client reconnects and resumes from its resourceVersion without relisting', async () => {
    api.upsert('modelservers', server('default', 'llama', LABELS));
    const source = await started();
    await until('three watches', () => api.watchCount() === 3, () => api.requests);
    const listsBefore = api.requests.filter((q) => !q.watch).length;
    const lastRv = String(api.resourceVersion);

    api.dropWatches();
    api.upsert('pods', pod('default', 'llama-0', LABELS, '10.0.0.10'));
    await settle(source, 'pod seen after a clean drop', (v) => v.endpoints['default/llama'].length === 1);

    api.dropWatches({ abrupt: true });
    api.upsert('modelroutes', route('default', 'r1', 'llama-3', ['llama']));
    await settle(source, 'route seen after an abrupt drop', (v) => v.routes.includes('default/r1=llama-3'));
    await until('three watches again', () => api.watchCount() === 3, () => api.requests);

    expect(api.requests.filter((q) => !q.watch)).toHaveLength(listsBefore);
    const rewatchRvs = api.requests.filter((q) => q.watch).slice(3).map((q) => Number(q.resourceVersion));
    expect(rewatchRvs.length).toBeGreaterThanOrEqual(6);
    for (const rv of rewatchRvs) expect(rv).toBeGreaterThanOrEqual(Number(lastRv));
  });

  test('watch reconnects back off (1 s, 2 s, ...) while the API keeps failing, then recover', async () => {
    api.upsert('modelservers', server('default', 'llama', LABELS));
    const source = await started();
    await until('three watches', () => api.watchCount() === 3, () => api.requests);
    const delaysBefore = clock.delays.length;
    api.failNextRequests(4, 503, 'pods');
    api.dropWatches({ abrupt: true });
    api.upsert('pods', pod('default', 'llama-0', LABELS, '10.0.0.10'));
    await settle(source, 'pod seen after failures', (v) => v.endpoints['default/llama'].length === 1);
    const backoff = clock.delays.slice(delaysBefore).filter((ms) => ms >= 1000);
    expect(backoff).toEqual(expect.arrayContaining([1000, 2000, 4000, 8000]));
    expect(logs.filter((l) => l.includes('pods list/watch failed') && l.includes('HTTP 503'))).toHaveLength(4);
    // Each a warning: the router runs on the last objects it saw meanwhile.
    expect(warns.filter((l) => l.includes('pods list/watch failed') && l.includes('HTTP 503'))).toHaveLength(4);
    // A failure that is no refusal carries no hint.
    expect(logs.filter((l) => l.includes('pods list/watch failed') && l.includes('HTTP 503')).every((l) => /retrying in \d+ ms$/.test(l))).toBe(true);
  });

  test('the retry backoff starts over once a watch delivers an event again; a watch that fails before any event still backs off', async () => {
    api.upsert('modelservers', server('default', 'llama', LABELS));
    const source = await started();
    await until('three watches', () => api.watchCount() === 3, () => api.requests);
    const podRetries = (from: number): number[] => logs.slice(from)
      .filter((l) => l.startsWith('pods list/watch failed'))
      .map((l) => Number(/retrying in (\d+) ms/.exec(l)![1]));
    // An outage: the watch is cut, refused three times, then answered but cut again twice before
    // any event (connects, fails at once), then served.
    let mark = logs.length;
    api.failNextRequests(3, 503, 'pods');
    api.breakNextWatches(2, 'pods');
    api.dropWatches({ abrupt: true });
    api.upsert('pods', pod('default', 'llama-0', LABELS, '10.0.0.10'));
    await settle(source, 'pod seen after the outage', (v) => v.endpoints['default/llama'].length === 1);
    expect(podRetries(mark)).toEqual([1000, 2000, 4000, 8000, 16000, 30000]);
    // The watch delivered an event: it works again, so a second short blip right after retries
    // at once (1 s), not after the raised delay.
    mark = logs.length;
    api.dropWatches({ abrupt: true });
    api.upsert('pods', pod('default', 'llama-1', LABELS, '10.0.0.11'));
    await settle(source, 'pod seen after the second blip', (v) => v.endpoints['default/llama'].length === 2);
    expect(podRetries(mark)).toEqual([1000]);
  });

  test('a watch that ends at its timeout without any event (an API server that sends no bookmarks) is reopened at once, however often', async () => {
    api.upsert('modelservers', server('default', 'llama', LABELS));
    const source = await started();
    await until('three watches', () => api.watchCount() === 3, () => api.requests);
    const delaysBefore = clock.delays.length;
    const podWatches = (): number => api.requests.filter((q) => q.watch && q.plural === 'pods').length;
    for (let i = 0; i < 5; i++) {
      const before = podWatches();
      clock.ahead += 300_000; // the watch ran its 5 minutes, quiet
      api.dropWatches();
      await until(`pods watch ${i + 2} open`, () => podWatches() === before + 1 && api.watchCount('pods') === 1, () => api.requests);
    }
    expect(clock.delays.slice(delaysBefore).filter((ms) => ms >= 1000)).toEqual([]);
    api.upsert('pods', pod('default', 'llama-0', LABELS, '10.0.0.10'));
    await settle(source, 'pod seen', (v) => v.endpoints['default/llama'].length === 1);
  });

  test('watches that end at once without events are reopened with backoff (1 s, 2 s, 4 s, ...)', async () => {
    api.upsert('modelservers', server('default', 'llama', LABELS));
    const source = await started();
    await until('three watches', () => api.watchCount() === 3, () => api.requests);
    const delaysBefore = clock.delays.length;
    const watchesBefore = api.requests.filter((q) => q.watch && q.plural === 'pods').length;
    api.sendBookmarks(); // every watch has delivered an event: healthy
    api.endNextWatches(4, 'pods');
    api.dropWatches();
    api.upsert('pods', pod('default', 'llama-0', LABELS, '10.0.0.10'));
    await settle(source, 'pod seen after quiet watch ends', (v) => v.endpoints['default/llama'].length === 1);
    // The dropped watches reconnect at once (they had been healthy), then 4 empty ends back off.
    expect(clock.delays.slice(delaysBefore).filter((ms) => ms >= 1000)).toEqual([1000, 2000, 4000, 8000]);
    expect(api.requests.filter((q) => q.watch && q.plural === 'pods').length - watchesBefore).toBe(5);
    expect(api.requests.filter((q) => !q.watch && q.plural === 'pods')).toHaveLength(1);
  });

  test('410 Gone: an expired resourceVersion makes the client relist, and changes missed meanwhile apply', async () => {
    api.upsert('modelservers', server('default', 'llama', LABELS));
    api.upsert('modelroutes', route('default', 'r1', 'llama-3', ['llama']));
    api.upsert('pods', pod('default', 'llama-0', LABELS, '10.0.0.10'));
    const source = await started();
    await until('three watches', () => api.watchCount() === 3, () => api.requests);
    const listsBefore = api.requests.filter((q) => !q.watch).length;

    // Changes whose events the client never receives (silent), then history is compacted:
    // resuming from the old resourceVersion answers a 410 ERROR event.
    api.remove('modelroutes', 'default', 'r1', { silent: true });
    api.upsert('modelroutes', route('default', 'r2', 'llama-4', ['llama']), { silent: true });
    api.remove('pods', 'default', 'llama-0', { silent: true });
    api.upsert('pods', pod('default', 'llama-1', LABELS, '10.0.0.11'), { silent: true });
    api.compact();
    api.dropWatches();

    await settle(source, 'relisted state', (v) =>
      v.routes.join() === 'default/r2=llama-4' && v.endpoints['default/llama'].join() === 'llama-1@10.0.0.11:8000');
    expect(api.requests.filter((q) => !q.watch).length).toBe(listsBefore + 3);

    // The "next watch answers 410" control relists too ...
    api.upsert('pods', pod('default', 'llama-2', LABELS, '10.0.0.12'), { silent: true });
    api.expireNextWatches(1, 'pods');
    api.dropWatches();
    await settle(source, 'silent pod seen after a 410 event', (v) => v.endpoints['default/llama'].includes('llama-2@10.0.0.12:8000'));
    expect(api.requests.filter((q) => !q.watch).length).toBe(listsBefore + 4);

    // ... and so does a watch answered with HTTP status 410.
    api.upsert('pods', pod('default', 'llama-3', LABELS, '10.0.0.13'), { silent: true });
    api.failNextRequests(1, 410, 'pods');
    api.dropWatches();
    await settle(source, 'silent pod seen after HTTP 410', (v) => v.endpoints['default/llama'].includes('llama-3@10.0.0.13:8000'));
    expect(api.requests.filter((q) => !q.watch).length).toBe(listsBefore + 5);
  });

  test('a watch answered 200 with an ERROR event other than 410 (etcd timed out) is a failure: logged with the API server\'s message, counted, retried with the backoff', async () => {
    api.upsert('modelservers', server('default', 'llama', LABELS));
    const source = await started();
    await until('three watches', () => api.watchCount() === 3, () => api.requests);
    api.sendBookmarks();
    const failuresBefore = source.watchStates().find((s) => s.resource === 'modelroutes')!.failures;
    const delaysBefore = clock.delays.length;
    api.errorNextWatches(3, 'modelroutes', 500, 'InternalError', 'etcdserver: request timed out');
    api.dropWatches();
    await until('the three failures logged', () => warns.filter((l) => l.includes('modelroutes list/watch failed (HTTP 500: watch ended by the API server: etcdserver: request timed out)')).length === 3, () => ({ warns }));
    // Then served again: a route made now applies.
    api.upsert('modelroutes', route('default', 'r1', 'llama-3', ['llama']));
    await settle(source, 'route seen once the watch is served again', (v) => v.routes.join() === 'default/r1=llama-3');
    expect(source.watchStates().find((s) => s.resource === 'modelroutes')!.failures - failuresBefore).toBe(3);
    expect(clock.delays.slice(delaysBefore).filter((ms) => ms >= 1000)).toEqual([1000, 2000, 4000]);
  });

  test('a watch answered with an ERROR event "Too large resource version" (the watch cache behind) relists, as client-go does', async () => {
    api.upsert('modelservers', server('default', 'llama', LABELS));
    const source = await started();
    await until('three watches', () => api.watchCount() === 3, () => api.requests);
    api.sendBookmarks();
    const lists = (): number => api.requests.filter((q) => !q.watch && q.plural === 'modelroutes').length;
    const listsBefore = lists();
    api.upsert('modelroutes', route('default', 'r1', 'llama-3', ['llama']), { silent: true });
    api.errorNextWatches(1, 'modelroutes', 504, 'Timeout', 'Timeout: Too large resource version: 99999, current: 105',
      { causes: [{ reason: 'ResourceVersionTooLarge', message: 'Too large resource version' }], retryAfterSeconds: 1 });
    api.dropWatches();
    await settle(source, 'silent route seen after the relist', (v) => v.routes.join() === 'default/r1=llama-3');
    expect(lists() - listsBefore).toBe(1);
  });

  test('410 Gone again and again right after each relist: the relists back off (1 s, 2 s, ...) instead of looping', async () => {
    api.upsert('modelservers', server('default', 'llama', LABELS));
    const source = await started();
    await until('three watches', () => api.watchCount() === 3, () => api.requests);
    const delaysBefore = clock.delays.length;
    const listsBefore = api.requests.filter((q) => !q.watch && q.plural === 'pods').length;
    api.sendBookmarks(); // every watch has delivered an event: the first 410 relists at once
    api.expireNextWatches(6, 'pods');
    api.dropWatches();
    const podLists = (): number => api.requests.filter((q) => !q.watch && q.plural === 'pods').length - listsBefore;
    await until('a pods watch served again', () => podLists() === 6 && api.watchCount('pods') === 1, () => api.requests);
    api.upsert('pods', pod('default', 'llama-0', LABELS, '10.0.0.10'));
    await settle(source, 'pod seen once the watches are served again', (v) => v.endpoints['default/llama'].length === 1);
    expect(podLists()).toBe(6);
    expect(clock.delays.slice(delaysBefore).filter((ms) => ms >= 1000)).toEqual([1000, 2000, 4000, 8000, 16000]);
    const held = logs.filter((l) => l.startsWith('pods watch answered 410 Gone'));
    expect(held).toHaveLength(5);
    expect(held[0]).toContain('2 times in a row, right after relisting; relisting in 1000 ms');
  });

  test('two 410s apart, a watch open and quiet between them: each relists at once, not taken for a streak', async () => {
    api.upsert('modelservers', server('default', 'llama', LABELS));
    const source = await started();
    await until('three watches', () => api.watchCount() === 3, () => api.requests);
    api.sendBookmarks();
    const lists = (): number => api.requests.filter((q) => !q.watch && q.plural === 'pods').length;
    const listsBefore = lists();
    for (const name of ['llama-0', 'llama-1']) {
      api.upsert('pods', pod('default', name, LABELS, name === 'llama-0' ? '10.0.0.10' : '10.0.0.11'), { silent: true });
      api.compact();
      api.dropWatches();
      await settle(source, `${name} seen after the relist`, (v) => v.endpoints['default/llama'].includes(`${name}@${name === 'llama-0' ? '10.0.0.10' : '10.0.0.11'}:8000`));
      await until('the pods watch open again', () => api.watchCount('pods') === 1, () => api.requests);
      clock.ahead += 5_000; // the watch stays open, quiet, for 5 s of the source's clock
    }
    expect(lists() - listsBefore).toBe(2);
    expect(logs.filter((l) => l.includes('410 Gone'))).toEqual([]);
  });

  test('a list that gets no answer (a relist after 410, or the first sync) is given up, logged, and made again', async () => {
    api.upsert('modelservers', server('default', 'llama', LABELS));
    api.upsert('pods', pod('default', 'llama-0', LABELS, '10.0.0.10'));
    // The first list of pods is never answered: the source still syncs.
    api.leaveNextListsUnanswered(1, 'pods');
    const source = newSource(null, undefined, 400);
    await source.start();
    expect(view(source.snapshot).endpoints['default/llama']).toEqual(['llama-0@10.0.0.10:8000']);
    expect(logs.find((l) => l.startsWith('pods list/watch failed (list got no answer in 0.4 s'))).toMatch(/the connection is taken for dead\); retrying in \d+ ms$/);

    // A relist (the watch answered 410 Gone) whose list hangs: changes still arrive afterwards.
    await until('three watches', () => api.watchCount() === 3, () => api.requests);
    api.leaveNextListsUnanswered(1, 'pods');
    api.expireNextWatches(1, 'pods');
    api.dropWatches();
    await until('the hung relist made', () => api.requests.filter((q) => !q.watch && q.plural === 'pods').length === 3, () => api.requests);
    api.upsert('pods', pod('default', 'llama-0', LABELS, '10.0.0.10', { ready: false }));
    await settle(source, 'the change seen after the hung relist', (v) => v.endpoints['default/llama'].length === 0);
    expect(logs.filter((l) => l.startsWith('pods list/watch failed (list got no answer in 0.4 s'))).toHaveLength(2);
  });

  test('a watch that stays open but delivers nothing past the idle limit is taken for dead, logged, and resumed', async () => {
    api.upsert('modelservers', server('default', 'llama', LABELS));
    api.upsert('pods', pod('default', 'llama-0', LABELS, '10.0.0.10'));
    const source = await started(null, 400);
    await until('three watches', () => api.watchCount() === 3, () => api.requests);
    const listsBefore = api.requests.filter((q) => !q.watch).length;
    // The pods watch hangs (a hung API server, or a connection lost without a reset): the change
    // below only reaches a new watch.
    api.stallWatches('pods');
    api.upsert('pods', pod('default', 'llama-0', LABELS, '10.0.0.10', { ready: false }));
    await settle(source, 'the change seen through a new watch', (v) => v.endpoints['default/llama'].length === 0);
    expect(logs.find((l) => l.startsWith('pods list/watch failed (watch delivered nothing for'))).toMatch(/the connection is taken for dead\); retrying in \d+ ms/);
    // Resumed from its resourceVersion: no relist.
    expect(api.requests.filter((q) => !q.watch).length).toBe(listsBefore);
  });

  test('a watch request that gets no answer at all past the idle limit is given up, logged, and made again', async () => {
    api.upsert('modelservers', server('default', 'llama', LABELS));
    api.upsert('pods', pod('default', 'llama-0', LABELS, '10.0.0.10'));
    const source = await started(null, 400);
    await until('three watches', () => api.watchCount() === 3, () => api.requests);
    api.leaveNextWatchesUnanswered(1, 'pods');
    api.sendBookmarks(); // healthy so far: the dropped pods watch is made again at once, and hangs
    api.dropWatches();
    api.upsert('pods', pod('default', 'llama-0', LABELS, '10.0.0.10', { ready: false }));
    await settle(source, 'the change seen through the watch made after the unanswered one', (v) => v.endpoints['default/llama'].length === 0);
    expect(logs.some((l) => l.startsWith('pods list/watch failed (watch delivered nothing for'))).toBe(true);
  });

  test('watches ask for BOOKMARK events, which advance the resourceVersion a resumed watch starts from', async () => {
    api.upsert('modelservers', server('default', 'llama', LABELS));
    await started();
    await until('three watches', () => api.watchCount() === 3, () => api.requests);
    expect(api.requests.filter((q) => q.watch).every((q) => q.allowWatchBookmarks)).toBe(true);
    const before = snapshots.length;
    api.upsert('modelroutes', route('other', 'r', 'x', ['missing']), { silent: true }); // bumps the version only
    const rv = String(api.resourceVersion);
    api.sendBookmarks();
    api.dropWatches(); // the stream ends after the bookmark line, so the client reads it first
    await until('three resumed watches', () => api.requests.filter((q) => q.watch && q.resourceVersion === rv).length === 3, () => api.requests);
    expect(snapshots.length).toBe(before);
  });

  test('namespace restriction: only that namespace is listed and watched', async () => {
    api.upsert('modelservers', server('team-a', 'llama', LABELS));
    api.upsert('modelservers', server('team-b', 'llama', LABELS));
    api.upsert('modelroutes', route('team-a', 'r', 'llama-a', ['llama']));
    api.upsert('modelroutes', route('team-b', 'r', 'llama-b', ['llama']));
    api.upsert('pods', pod('team-a', 'a-0', LABELS, '10.0.1.1'));
    api.upsert('pods', pod('team-b', 'b-0', LABELS, '10.0.2.1'));
    const source = await started('team-a');
    expect(view(source.snapshot)).toEqual({ routes: ['team-a/r=llama-a'], endpoints: { 'team-a/llama': ['a-0@10.0.1.1:8000'] } });

    api.upsert('pods', pod('team-b', 'b-1', LABELS, '10.0.2.2'));
    api.upsert('pods', pod('team-a', 'a-1', LABELS, '10.0.1.2'));
    await settle(source, 'team-a pod added', (v) => v.endpoints['team-a/llama'].length === 2);
    expect(view(source.snapshot).endpoints['team-b/llama']).toBeUndefined();
    expect(api.requests.length).toBeGreaterThanOrEqual(6);
    for (const q of api.requests) expect(q.namespace).toBe('team-a');
  });

  test('stop() while a watch request awaits its answer: the watch answered afterwards is closed at once', async () => {
    const source = await started();
    await until('three watches', () => api.watchCount() === 3, () => api.requests);
    api.holdNextWatches(1, 'pods');
    api.dropWatches();
    await until('the pods watch request held', () => api.heldWatches === 1, () => api.requests);
    await source.stop();
    api.releaseHeldWatches();
    await until('no watch left open', () => api.watchCount() === 0, () => api.watchCount());
  });

  test('a refusal a first deployment meets names its likely cause: CRDs missing (404), RBAC missing (403)', async () => {
    api.failNextRequests(1, 404, 'modelroutes');
    const source = newSource();
    await source.start();
    expect(logs.find((l) => l.startsWith('modelroutes list/watch failed'))).toMatch(
      /HTTP 404.*; retrying in \d+ ms; the API does not serve modelroutes: are the CRDs installed \(kubectl apply -k deploy\/crds\), and is ROUTER_API_GROUP their group\? \(docs\/kubernetes\.md\)$/);
    // Its watches open before it stops: none of its requests can meet the failure set up next.
    await until('three watches', () => api.watchCount() === 3, () => api.requests);
    await source.stop();
    api.failNextRequests(1, 403, 'pods');
    const second = newSource();
    await second.start();
    expect(logs.find((l) => l.startsWith('pods list/watch failed'))).toMatch(
      /HTTP 403.*; the router's identity may not list and watch pods in all namespaces \(ROUTER_NAMESPACE is not set\): that needs a ClusterRoleBinding/);
    await second.stop();
  });

  test('a refusal says what the API server said (who was refused, at which scope) and what the scope needs', async () => {
    const refusal = 'pods is forbidden: User "system:serviceaccount:inference-router:inference-router" cannot list resource "pods" in API group "" at the cluster scope';
    api.failNextRequests(1, 403, 'pods', refusal);
    const all = newSource();
    await all.start();
    const line = logs.find((l) => l.startsWith('pods list/watch failed'));
    expect(line).toContain(`(HTTP 403: ${refusal})`);
    expect(line).toMatch(/; the router's identity may not list and watch pods in all namespaces \(ROUTER_NAMESPACE is not set\): that needs a ClusterRoleBinding of the router's ClusterRole \(deploy\/base\); with a RoleBinding in one namespace, set ROUTER_NAMESPACE to it \(docs\/kubernetes\.md\)$/);
    await until('three watches', () => api.watchCount() === 3, () => api.requests);
    await all.stop();
    const mark = logs.length;
    api.failNextRequests(1, 403, 'modelroutes', 'modelroutes.networking.serving.volcano.sh is forbidden: User "x" cannot list resource "modelroutes" in the namespace "models"');
    const one = newSource('models');
    await one.start();
    expect(logs.slice(mark).find((l) => l.startsWith('modelroutes list/watch failed'))).toMatch(
      /\(HTTP 403: modelroutes\.networking\.serving\.volcano\.sh is forbidden: .* in the namespace "models"\); retrying in \d+ ms; the router's identity may not list and watch modelroutes in namespace models: bind the router's role there \(a RoleBinding in that namespace, or the ClusterRoleBinding of deploy\/base\) \(docs\/kubernetes\.md\)$/);
    await one.stop();
  });

  /** Each kind's `healthy`/`failures`, as the metrics show them. */
  function states(source: KubernetesSource): Record<string, { healthy: boolean; failures: number }> {
    return Object.fromEntries(source.watchStates().map((s) => [s.resource, { healthy: s.healthy, failures: s.failures }]));
  }

  test('watch states: unhealthy before the first watch, healthy once each kind watches; failures counted, unhealthy while they go on, healthy again after', async () => {
    api.upsert('modelservers', server('default', 'llama', LABELS));
    const source = newSource();
    expect(states(source)).toEqual({
      modelroutes: { healthy: false, failures: 0 }, modelservers: { healthy: false, failures: 0 }, pods: { healthy: false, failures: 0 },
    });
    await source.start();
    await until('every kind healthy', () => source.watchStates().every((s) => s.healthy), () => states(source));
    expect(source.watchStates().map((s) => s.failures)).toEqual([0, 0, 0]);

    // Pods refused from now on: their watch is cut and every retry fails.
    api.failNextRequests(1_000_000, 503, 'pods');
    api.dropWatches({ abrupt: true });
    await until('3 pods failures', () => states(source).pods.failures >= 3, () => states(source));
    expect(states(source).pods.healthy).toBe(false);
    api.failNextRequests(0);
    await until('pods healthy again', () => states(source).pods.healthy, () => states(source));
    const after = states(source);
    // Counters only grow: the failures stay counted after the recovery.
    expect(after.pods.failures).toBeGreaterThanOrEqual(3);
    // The other kinds' watches were cut once (abruptly: a failure each) and came back at once.
    await until('every kind healthy', () => source.watchStates().every((s) => s.healthy), () => states(source));
    expect(states(source).modelroutes.failures).toBe(1);
    expect(states(source).modelservers.failures).toBe(1);
  });

  test('watch state: a reconnect held back (watches ending at once without events) is unhealthy, though no failure; healthy again once a watch is open', async () => {
    // Delays of a second or more wait for release(); shorter ones (the coalescing) run.
    const held: (() => void)[] = [];
    const holding = {
      ...recordingClock(),
      setTimeout: (fn: () => void, ms: number) => {
        if (ms < 1000) return setTimeout(fn, 5);
        const h = { fn };
        held.push(() => h.fn());
        return h;
      },
      clearTimeout: (h: unknown) => {
        if (typeof h === 'object' && h !== null && 'fn' in h) (h as { fn: () => void }).fn = () => {};
        else clearTimeout(h as ReturnType<typeof setTimeout>);
      },
    };
    clock = holding as unknown as ReturnType<typeof recordingClock>;
    api.upsert('modelservers', server('default', 'llama', LABELS));
    const source = await started();
    await until('every kind healthy', () => source.watchStates().every((s) => s.healthy), () => states(source));
    api.sendBookmarks(); // each watch made progress: a clean end reconnects at once
    api.endNextWatches(1, 'pods');
    api.dropWatches();
    await until('the pods reconnect held back', () => held.length === 1, () => api.requests);
    expect(states(source).pods).toEqual({ healthy: false, failures: 0 });
    expect(states(source).modelroutes.healthy).toBe(true);
    held.shift()!();
    await until('pods healthy again', () => states(source).pods.healthy, () => states(source));
    expect(states(source).pods.failures).toBe(0);
  });

  test('an API server that cannot be reached: the whole reason is logged, naming the server and the address; healthy again once it is back', async () => {
    api.upsert('modelservers', server('default', 'llama', LABELS));
    const source = await started();
    await until('every kind healthy', () => source.watchStates().every((s) => s.healthy), () => states(source));
    const mark = logs.length;
    await api.goDown();
    const port = new URL(api.url).port;
    await until('a refused pods retry', () => logs.slice(mark).some((l) => l.startsWith('pods list/watch failed') && l.includes('ECONNREFUSED')), () => logs.slice(mark));
    expect(source.watchStates().every((s) => !s.healthy && s.failures >= 1)).toBe(true);
    const refused = logs.slice(mark).find((l) => l.startsWith('pods list/watch failed') && l.includes('ECONNREFUSED'))!;
    expect(refused).toMatch(new RegExp(`^pods list/watch failed \\(connection to the API server at http://127\\.0\\.0\\.1:${port} failed: connect ECONNREFUSED 127\\.0\\.0\\.1:${port}\\); retrying in \\d+ ms$`));
    expect(warns).toContain(refused);
    await api.comeBack();
    api.upsert('pods', pod('default', 'llama-0', LABELS, '10.0.0.10'));
    await settle(source, 'pod seen after the API server came back', (v) => v.endpoints['default/llama'].length === 1);
    await until('every kind healthy', () => source.watchStates().every((s) => s.healthy), () => states(source));
  });

  test('ModelRoutes none of which serves: logged once, naming how many; again only once it comes back', async () => {
    api.upsert('modelroutes', route('default', 'r1', 'llama-3', ['llama']));
    const source = await started();
    const line = '1 ModelRoute watched, none of which serves: every inference request is answered 404 model_not_found until one does (each route\'s line says why)';
    expect(warns.filter((l) => l === line)).toHaveLength(1);
    expect(warns).toContain('ModelRoute default/r1: spec.rules[0].targetModels[0].modelServerName: ModelServer default/llama does not exist (a target must name a ModelServer in the route\'s namespace); route skipped');
    // Other changes: not logged again.
    api.upsert('pods', pod('default', 'other-0', { app: 'other' }, '10.0.0.9'));
    api.upsert('modelroutes', route('default', 'r2', 'llama-2', ['llama']));
    await until('a second route watched', () => warns.includes('2 ModelRoutes watched, none of which serves: every inference request is answered 404 model_not_found until one does (each route\'s line says why)'), () => warns);
    api.upsert('pods', pod('default', 'other-1', { app: 'other' }, '10.0.0.8'));
    api.upsert('modelservers', server('default', 'llama', LABELS));
    await settle(source, 'routes served', (v) => v.routes.length === 2);
    expect(warns.filter((l) => l.includes('none of which serves'))).toHaveLength(2);
    api.remove('modelservers', 'default', 'llama');
    await settle(source, 'routes gone', (v) => v.routes.length === 0);
    await until('logged again', () => warns.filter((l) => l.includes('none of which serves')).length === 3, () => warns);
  });

  test('a workloadSelector that matches no pod: logged once naming the ModelServer, namespace and selector (and where such pods are), not for each event', async () => {
    api.upsert('modelservers', server('models', 'llama', { app: 'llama', tier: 'gpu' }));
    api.upsert('pods', pod('default', 'llama-0', { app: 'llama', tier: 'gpu' }, '10.0.0.10'));
    const source = await started();
    const line = 'ModelServer models/llama: spec.workloadSelector.matchLabels: selector app=llama,tier=gpu matches no pod in namespace models; it has no endpoints until one exists there; pods in namespace default carry these labels, but a ModelServer selects pods of its own namespace only';
    const said = (): number => warns.filter((l) => l === line).length;
    expect(said()).toBe(1);
    // No ModelRoute at all is no mistake: nothing said about routes.
    expect(warns.filter((l) => l.includes('none of which serves'))).toEqual([]);
    // Other changes (a second ModelServer and its pods, each a new snapshot): not logged again.
    api.upsert('modelservers', server('models', 'other', { app: 'other' }));
    await settle(source, 'models/other listed', (v) => v.endpoints['models/other']?.length === 0);
    for (let i = 0; i < 3; i++) {
      api.upsert('pods', pod('models', `other-${i}`, { app: 'other' }, `10.0.1.${i}`));
      await settle(source, `other-${i} serving`, (v) => v.endpoints['models/other'].length === i + 1);
    }
    expect(said()).toBe(1);
    // A matching pod, even one not ready, is a match: the problem goes (silently) ...
    api.upsert('pods', pod('models', 'llama-1', { app: 'llama', tier: 'gpu' }, '10.0.1.10', { ready: false }));
    api.upsert('pods', pod('models', 'other-3', { app: 'other' }, '10.0.1.3'));
    await settle(source, 'other-3 serving', (v) => v.endpoints['models/other'].length === 4);
    expect(view(source.snapshot).endpoints['models/llama']).toEqual([]);
    // ... and comes back, logged again, once the pod is gone.
    api.remove('pods', 'models', 'llama-1');
    api.upsert('pods', pod('models', 'other-4', { app: 'other' }, '10.0.1.4'));
    await settle(source, 'other-4 serving', (v) => v.endpoints['models/other'].length === 5);
    expect(said()).toBe(2);
  });

  test('a target naming a ModelServer that exists only in another namespace: the route is skipped, the line saying targets are looked up in the route\'s own namespace', async () => {
    api.upsert('modelservers', server('models', 'llama', LABELS));
    api.upsert('modelservers', server('staging', 'llama', LABELS));
    api.upsert('modelroutes', route('apps', 'r', 'llama-3', ['llama']));
    const source = await started();
    expect(view(source.snapshot).routes).toEqual([]);
    expect(warns).toContain('ModelRoute apps/r: spec.rules[0].targetModels[0].modelServerName: ModelServer apps/llama does not exist; a ModelServer llama exists in namespace models, staging, but a target names a ModelServer of its route\'s own namespace (apps): create the ModelServer in apps, or the route in the ModelServer\'s namespace; route skipped');
    api.upsert('modelservers', server('apps', 'llama', LABELS));
    await settle(source, 'route served', (v) => v.routes.length === 1);
  });

  test('start() waits through API failures and resolves once all kinds are listed; stop() before sync rejects it', async () => {
    api.upsert('modelservers', server('default', 'llama', LABELS));
    api.failNextRequests(2, 500, 'modelservers');
    const source = newSource();
    await source.start();
    expect(view(source.snapshot).endpoints).toEqual({ 'default/llama': [] });
    expect(logs.filter((l) => l.includes('modelservers list/watch failed'))).toHaveLength(2);

    api.failNextRequests(1_000_000, 500, 'pods');
    const never = newSource();
    const pending = never.start();
    await until('a failed pods list', () => logs.filter((l) => l.includes('pods list/watch failed')).length >= 2, () => logs);
    expect(never.synced).toBe(false);
    await never.stop();
    await expect(pending).rejects.toThrow(/stopped before the first sync/);
  });
});
