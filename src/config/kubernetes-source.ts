/**
 * The Kubernetes resource source: watches ModelRoutes and ModelServers (`<apiGroup>/v1alpha1`)
 * and Pods, in all namespaces or in one, and emits a routes/servers snapshot whenever any of
 * them changes (changes coalesced over `debounceMs`, 50 ms by default). ModelServer endpoints
 * are their ready pods; see kubernetes-snapshot.ts for validation and conflict rules.
 *
 * @kubernetes/client-node is imported when start() runs, so importing this module is cheap for
 * the file source and cannot fail because of the client library.
 */
import type { CoreV1Api, CustomObjectsApi, KubeConfig, KubernetesListObject, KubernetesObject } from '@kubernetes/client-node';
import { API_VERSION } from './resource-types.js';
import { systemSourceClock, type SourceClock } from './kubernetes-clock.js';
import { ResourceInformer } from './kubernetes-informer.js';
import { podEssentials, type PodLike } from './kubernetes-pods.js';
import { SnapshotBuilder, type KubernetesSnapshot } from './kubernetes-snapshot.js';

export type { SourceClock } from './kubernetes-clock.js';
export type { KubernetesSnapshot, ResolvedServer } from './kubernetes-snapshot.js';

export interface KubernetesSourceOptions {
  /** e.g. networking.serving.volcano.sh */
  apiGroup: string;
  /** REDIS_CLUSTER: the Redis addresses a global limit may name (config/addresses.ts). */
  redisCluster: boolean;
  /** Watch only this namespace; null = all namespaces. */
  namespace: string | null;
  /** ROUTER_GATEWAY: serve only the ModelRoutes bound to this Gateway (`<namespace>/<name>`); null or absent: every route. */
  gateway?: string | null;
  /** Defaults to KubeConfig.loadFromDefault(): $KUBECONFIG, ~/.kube/config, then in-cluster. */
  kubeConfig?: KubeConfig;
  /** `level` 'warn': a failure or a resource skipped for a problem; else information. */
  log: (msg: string, level?: 'warn') => void;
  clock?: SourceClock;
  /** Coalescing window for changes in ms (default 50). */
  debounceMs?: number;
  /** A watch delivering nothing this long is taken for dead and reopened (default 330 s; real time). */
  watchIdleMs?: number;
  /** A list not answered in full this long is aborted and made again (default 120 s; real time). */
  listTimeoutMs?: number;
}

type SnapshotListener = (s: KubernetesSnapshot) => void;

/** The three kinds watched, as named in log lines and in the `resource` label of the metrics. */
export const WATCHED_RESOURCES = ['modelroutes', 'modelservers', 'pods'] as const;

/** The state of one kind's list/watch (metrics: inference_router_kubernetes_watch_*). */
export interface WatchState {
  readonly resource: typeof WATCHED_RESOURCES[number];
  /** A watch is established and no failure came after it. */
  readonly healthy: boolean;
  /** Failed list or watch attempts so far. */
  readonly failures: number;
}

type Obj = KubernetesObject & object;

export class KubernetesSource {
  private readonly opts: KubernetesSourceOptions;
  private readonly clock: SourceClock;
  private readonly debounceMs: number;
  private readonly builder: SnapshotBuilder;
  private readonly listeners: SnapshotListener[] = [];
  private informers: ResourceInformer<Obj>[] = [];
  private routes: ResourceInformer<Obj> | null = null;
  private servers: ResourceInformer<Obj> | null = null;
  private pods: ResourceInformer<Obj> | null = null;
  private state: 'new' | 'starting' | 'running' | 'stopped' = 'new';
  private isSynced = false;
  private syncWaiter: { resolve: () => void; reject: (err: Error) => void } | null = null;
  private timer: unknown = null;
  private current: KubernetesSnapshot | null = null;
  private currentJson = '';
  private reported = new Set<string>();
  private reportedNotServed = new Set<string>();

  constructor(opts: KubernetesSourceOptions) {
    this.opts = opts;
    this.clock = opts.clock ?? systemSourceClock;
    this.debounceMs = opts.debounceMs ?? 50;
    this.builder = new SnapshotBuilder({ apiGroup: opts.apiGroup, redisCluster: opts.redisCluster, gateway: opts.gateway ?? null });
  }

  /** True once the first full list of all three kinds has been applied (start() resolved). */
  get synced(): boolean {
    return this.isSynced;
  }

  /** The last emitted snapshot, or null before the first sync. */
  get snapshot(): KubernetesSnapshot | null {
    return this.current;
  }

  /** Each kind's list/watch: healthy or not, and its failures so far (not healthy, 0 failures before start()). */
  watchStates(): WatchState[] {
    const informers = [this.routes, this.servers, this.pods];
    return WATCHED_RESOURCES.map((resource, i) => {
      const inf = informers[i];
      return { resource, healthy: inf?.healthy ?? false, failures: inf?.failures ?? 0 };
    });
  }

  /** Called with every new snapshot (the first one before start() resolves). */
  onSnapshot(cb: SnapshotListener): void {
    this.listeners.push(cb);
  }

  /**
   * Starts watching; resolves after the first full sync of ModelRoutes, ModelServers and Pods.
   * Failures are retried with backoff (and logged), so this waits until the API answers.
   * Rejects if stop() is called first.
   */
  async start(): Promise<void> {
    if (this.state !== 'new') throw new Error(`KubernetesSource.start(): already ${this.state}`);
    this.state = 'starting';
    const k8s = await import('@kubernetes/client-node');
    if (this.isStopped()) throw new Error('KubernetesSource stopped before the first sync');
    let kc = this.opts.kubeConfig;
    if (kc === undefined) {
      kc = new k8s.KubeConfig();
      kc.loadFromDefault();
    }
    const server = kc.getCurrentCluster()?.server;
    if (server === undefined) throw new Error('the kubeconfig has no current cluster');
    const custom = kc.makeApiClient(k8s.CustomObjectsApi);
    const core = kc.makeApiClient(k8s.CoreV1Api);
    const { apiGroup, namespace } = this.opts;
    const common = {
      k8s, kubeConfig: kc, namespace, server, clock: this.clock, log: this.opts.log,
      onChange: () => this.changed(), onListed: () => this.listed(),
      ...(this.opts.watchIdleMs === undefined ? {} : { watchIdleMs: this.opts.watchIdleMs }),
      ...(this.opts.listTimeoutMs === undefined ? {} : { listTimeoutMs: this.opts.listTimeoutMs }),
    };
    this.routes = new ResourceInformer<Obj>({ ...common, name: 'modelroutes', ...customList(custom, apiGroup, namespace, 'modelroutes') });
    this.servers = new ResourceInformer<Obj>({ ...common, name: 'modelservers', ...customList(custom, apiGroup, namespace, 'modelservers') });
    this.pods = new ResourceInformer<Obj>({ ...common, name: 'pods', ...podList(core, namespace), keep: (pod) => podEssentials(pod) as Obj });
    this.informers = [this.routes, this.servers, this.pods];

    const synced = new Promise<void>((resolve, reject) => {
      this.syncWaiter = { resolve, reject };
    });
    this.opts.log(`watching ModelRoutes and ModelServers (${apiGroup}/${API_VERSION}) and Pods in ${namespace === null ? 'all namespaces' : `namespace ${namespace}`} at ${server}`);
    for (const inf of this.informers) inf.start();
    await synced;
  }

  async stop(): Promise<void> {
    if (this.state === 'stopped') return;
    this.state = 'stopped';
    if (this.timer !== null) this.clock.clearTimeout(this.timer);
    this.timer = null;
    if (this.syncWaiter !== null) {
      this.syncWaiter.reject(new Error('KubernetesSource stopped before the first sync'));
      this.syncWaiter = null;
    }
    await Promise.all(this.informers.map((inf) => inf.stop()));
  }

  /** stop() was called (the router stops): a start() still waiting for its first sync rejects, which is no failure. */
  get stopped(): boolean {
    return this.isStopped();
  }

  private isStopped(): boolean {
    return this.state === 'stopped';
  }

  private listed(): void {
    if (this.isSynced || this.isStopped()) return;
    if (!this.informers.every((inf) => inf.listed)) return;
    this.isSynced = true;
    this.state = 'running';
    this.emit();
    const waiter = this.syncWaiter;
    this.syncWaiter = null;
    waiter?.resolve();
  }

  private changed(): void {
    if (!this.isSynced || this.timer !== null || this.isStopped()) return;
    this.timer = this.clock.setTimeout(() => {
      this.timer = null;
      if (!this.isStopped()) this.emit();
    }, this.debounceMs);
  }

  /** Builds a snapshot; logs new problems; calls listeners when the snapshot differs from the last. */
  private emit(): void {
    if (this.routes === null || this.servers === null || this.pods === null) return;
    const { snapshot, problems, notServed } = this.builder.build(
      this.routes.objects(), this.servers.objects(), this.pods.objects() as readonly PodLike[],
    );
    this.reported = logNew(problems, this.reported, (p) => this.opts.log(p, 'warn'));
    // Routes of other Gateways: told once each, as problems are, but as information.
    this.reportedNotServed = logNew(notServed, this.reportedNotServed, (n) => this.opts.log(n));
    const json = JSON.stringify(snapshot);
    if (json === this.currentJson) return;
    this.current = snapshot;
    this.currentJson = json;
    const endpoints = snapshot.servers.reduce((n, s) => n + s.endpoints.length, 0);
    this.opts.log(`snapshot: ${snapshot.routes.length} routes, ${snapshot.servers.length} servers, ${endpoints} ready endpoints`);
    for (const cb of this.listeners) {
      try {
        cb(snapshot);
      } catch (err) {
        this.opts.log(`snapshot listener failed: ${(err as Error)?.stack ?? String(err)}`);
      }
    }
  }
}

function customList(api: CustomObjectsApi, group: string, namespace: string | null, plural: string): {
  path: string; list: (signal: AbortSignal) => Promise<KubernetesListObject<Obj>>;
} {
  const version = API_VERSION;
  if (namespace === null) {
    return {
      path: `/apis/${group}/${version}/${plural}`,
      list: (signal) => api.listClusterCustomObject({ group, version, plural }, withSignal(signal)) as Promise<KubernetesListObject<Obj>>,
    };
  }
  return {
    path: `/apis/${group}/${version}/namespaces/${encodeURIComponent(namespace)}/${plural}`,
    list: (signal) => api.listNamespacedCustomObject({ group, version, namespace, plural }, withSignal(signal)) as Promise<KubernetesListObject<Obj>>,
  };
}

function podList(api: CoreV1Api, namespace: string | null): { path: string; list: (signal: AbortSignal) => Promise<KubernetesListObject<Obj>> } {
  if (namespace === null) return { path: '/api/v1/pods', list: (signal) => api.listPodForAllNamespaces({}, withSignal(signal)) };
  return {
    path: `/api/v1/namespaces/${encodeURIComponent(namespace)}/pods`,
    list: (signal) => api.listNamespacedPod({ namespace }, withSignal(signal)),
  };
}

type CallOptions = NonNullable<Parameters<CoreV1Api['listNamespacedPod']>[1]>;
type Middleware = NonNullable<CallOptions['middleware']>[number];

/** Call options that make one request abortable by `signal` (a middleware run after the kubeconfig's). */
function withSignal(signal: AbortSignal): CallOptions {
  const middleware = {
    // The client's middleware chain only calls toPromise() on what pre/post return.
    pre: (ctx: { setSignal(s: AbortSignal): void }) => {
      ctx.setSignal(signal);
      return { toPromise: () => Promise.resolve(ctx) };
    },
    post: (rsp: unknown) => ({ toPromise: () => Promise.resolve(rsp) }),
  } as unknown as Middleware;
  return { middleware: [middleware], middlewareMergeStrategy: 'append' };
}

/** Logs each of `lines` that the build before did not have (`before`); returns them, for the next build. */
function logNew(lines: readonly string[], before: ReadonlySet<string>, log: (line: string) => void): Set<string> {
  const now = new Set(lines);
  for (const line of now) if (!before.has(line)) log(line);
  return now;
}
