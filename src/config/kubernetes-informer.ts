/**
 * One list/watch of one resource kind, on @kubernetes/client-node's ListWatch.
 *
 * ListWatch lists, then watches from the list's resourceVersion; when a watch ends it resumes
 * from the last resourceVersion it saw (BackoffWatch spaces out reconnects after watches that
 * ended without events), and relists when the API answers 410 Gone. On any other failure (list
 * error, refused connection, non-200 answer, broken stream) it reports the error and stops; this
 * wrapper then restarts it with its own backoff (1 s doubling to 30 s), so a restart resumes from
 * the last resourceVersion too. The backoff starts over once the API works again: a list succeeds,
 * or a watch delivers its first event (a change or a bookmark); a watch answered but cut again
 * before any event counts as a failure in the row. A failure more than a minute after the
 * previous one starts over too. Watches ask
 * for BOOKMARK events, which move that resourceVersion forward without changes, and for a
 * server-side timeout, so connections are renewed regularly; one that stays open and silent well
 * past that timeout is taken for dead and reopened (BackoffWatch). A list (the first sync, or a
 * relist after 410 Gone) not answered in full within LIST_TIMEOUT_MS is aborted and counts as a
 * failure: the API server ends a request after a minute, so a list still pending then is a hung
 * API server or a connection lost without a reset, which would otherwise stop the informer for
 * good (no watch runs while ListWatch waits for its list). Delays go through the injected clock;
 * that timeout, like the watch watchdog, runs on real time.
 *
 * For metrics it keeps `failures` (each failure above) and `healthy` (a watch established and no
 * failure since). A failure that got no HTTP answer is logged with its whole reason (the address
 * tried) after the API server's URL.
 */
import type { KubeConfig, KubernetesListObject, KubernetesObject, ListWatch, Watch } from '@kubernetes/client-node';
import type { SourceClock } from './kubernetes-clock.js';
import { BackoffWatch } from './kubernetes-watch.js';

type ClientNode = typeof import('@kubernetes/client-node');

export interface ResourceInformerOptions<T extends KubernetesObject> {
  /** For log lines, e.g. "modelroutes". */
  name: string;
  /** API path without query, e.g. /apis/<group>/v1alpha1/modelroutes. */
  path: string;
  /** The namespace the path is confined to; null = all namespaces (for the hint of a 403). */
  namespace: string | null;
  /** The API server's URL (the kubeconfig's current cluster), named when it cannot be reached. */
  server: string;
  k8s: ClientNode;
  kubeConfig: KubeConfig;
  /** One list request; `signal` aborts it. */
  list: (signal: AbortSignal) => Promise<KubernetesListObject<T>>;
  clock: SourceClock;
  /** `level` 'warn': a failure (list/watch failed, a relist held back); else information. */
  log: (msg: string, level?: 'warn') => void;
  /** Any object was added, changed or deleted. */
  onChange: () => void;
  /** A list finished and its items are in the cache (first sync and every relist). */
  onListed: () => void;
  /** A watch delivering nothing this long is taken for dead and reopened (default WATCH_IDLE_MS). */
  watchIdleMs?: number;
  /** A list not answered in full this long is aborted and retried (default LIST_TIMEOUT_MS). */
  listTimeoutMs?: number;
  /** What of each listed or watched object to cache (default: all of it). */
  keep?: (obj: T) => T;
}

const BASE_RETRY_MS = 1000;
const MAX_RETRY_MS = 30_000;
/** A failure this long after the previous one starts the backoff over. */
const RETRY_RESET_MS = 60_000;
/** The API server ends each watch after this long (it answers with a final bookmark first). */
const WATCH_TIMEOUT_SECONDS = 300;
/** A watch still open and silent this long after its last event (or its start) is taken for dead. */
export const WATCH_IDLE_MS = (WATCH_TIMEOUT_SECONDS + 30) * 1000;
/** The API server ends a list after its request timeout (1 min by default); twice that is dead. */
export const LIST_TIMEOUT_MS = 120_000;

export class ResourceInformer<T extends KubernetesObject> {
  /** True once the first list succeeded. */
  listed = false;
  /**
   * True while a watch is established (answered and open) and no failure came after it; false
   * before the first one, from a failure until the next watch is established, and while a
   * reconnect or relist is held back (metrics: inference_router_kubernetes_watch_healthy).
   */
  healthy = false;
  /** Failed list or watch attempts so far (metrics: inference_router_kubernetes_watch_failures_total). */
  failures = 0;
  private readonly lw: ListWatch<T>;
  private readonly opts: ResourceInformerOptions<T>;
  private stopped = false;
  private retryTimer: unknown = null;
  private retryAttempt = 0;
  private lastFailureAt = Number.NEGATIVE_INFINITY;
  private readonly watch: BackoffWatch;
  /** Aborts the list in flight, if any (stop()). */
  private listAbort: AbortController | null = null;

  constructor(opts: ResourceInformerOptions<T>) {
    this.opts = opts;
    const { k8s, clock } = opts;
    const listFn = async (): Promise<KubernetesListObject<T>> => {
      const list = await this.listWithTimeout();
      const keep = opts.keep;
      if (keep !== undefined && Array.isArray(list.items)) list.items = list.items.map(keep);
      // ListWatch stores the items right after this promise settles; report once they are in.
      setImmediate(() => this.listedNow());
      return list;
    };
    this.watch = new BackoffWatch(
      new k8s.Watch(opts.kubeConfig), clock, (m, level) => opts.log(`${opts.name} ${m}`, level), opts.watchIdleMs ?? WATCH_IDLE_MS,
      () => {
        this.retryAttempt = 0;
      },
      opts.keep,
      (established) => {
        if (!this.stopped) this.healthy = established;
      },
    );
    // ListWatch keeps a query on the path and adds watch=true&resourceVersion=N to it.
    const watchPath = `${opts.path}?allowWatchBookmarks=true&timeoutSeconds=${WATCH_TIMEOUT_SECONDS}`;
    this.lw = new k8s.ListWatch<T>(watchPath, this.watch as unknown as Watch, listFn, false);
    const changed = (): void => {
      if (!this.stopped) opts.onChange();
    };
    this.lw.on('add', changed);
    this.lw.on('update', changed);
    this.lw.on('delete', changed);
    this.lw.on('error', (err: unknown) => this.failed(err));
  }

  start(): void {
    this.stopped = false;
    this.run();
  }

  /** The cached objects (all namespaces this informer watches). */
  objects(): readonly T[] {
    return this.lw.list();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.retryTimer !== null) this.opts.clock.clearTimeout(this.retryTimer);
    this.retryTimer = null;
    this.watch.cancel();
    this.listAbort?.abort();
    await this.lw.stop();
  }

  /** opts.list(), aborted and rejected when not answered in full within listTimeoutMs. */
  private listWithTimeout(): Promise<KubernetesListObject<T>> {
    const ms = this.opts.listTimeoutMs ?? LIST_TIMEOUT_MS;
    const abort = new AbortController();
    this.listAbort = abort;
    return new Promise<KubernetesListObject<T>>((resolve, reject) => {
      const timer = setTimeout(() => {
        reject(new Error(`list got no answer in ${formatSeconds(ms)} (the API server ends a list sooner): the connection is taken for dead`));
        abort.abort();
      }, ms);
      timer.unref();
      const settle = (): void => {
        clearTimeout(timer);
        if (this.listAbort === abort) this.listAbort = null;
      };
      this.opts.list(abort.signal).then((list) => {
        settle();
        resolve(list);
      }, (err: unknown) => {
        settle();
        reject(err);
      });
    });
  }

  private run(): void {
    this.watch.resume();
    this.lw.start().catch((err: unknown) => this.failed(err));
  }

  private listedNow(): void {
    if (this.stopped) return;
    this.listed = true;
    this.retryAttempt = 0;
    this.opts.onListed();
  }

  private failed(err: unknown): void {
    if (this.stopped || this.retryTimer !== null) return;
    const now = this.opts.clock.now();
    if (now - this.lastFailureAt > RETRY_RESET_MS) this.retryAttempt = 0;
    this.lastFailureAt = now;
    const delay = Math.min(BASE_RETRY_MS * 2 ** this.retryAttempt, MAX_RETRY_MS);
    this.retryAttempt++;
    this.failures++;
    this.healthy = false;
    this.opts.log(`${this.opts.name} list/watch failed (${describeError(err, this.opts.server)}); retrying in ${delay} ms${failureHint(this.opts.name, this.opts.namespace, err)}`, 'warn');
    this.retryTimer = this.opts.clock.setTimeout(() => {
      this.retryTimer = null;
      if (!this.stopped) this.run();
    }, delay);
  }
}

/** The likely cause of a refusal a first deployment meets: CRDs not installed, RBAC not applied or bound at another scope. */
function failureHint(name: string, namespace: string | null, err: unknown): string {
  const e = (err ?? {}) as { statusCode?: unknown; code?: unknown };
  const status = typeof e.statusCode === 'number' ? e.statusCode : typeof e.code === 'number' ? e.code : null;
  if (status === 404 && name !== 'pods') {
    return `; the API does not serve ${name}: are the CRDs installed (kubectl apply -k deploy/crds), and is ROUTER_API_GROUP their group? (docs/kubernetes.md)`;
  }
  if (status === 403) {
    return namespace === null
      ? `; the router's identity may not list and watch ${name} in all namespaces (ROUTER_NAMESPACE is not set): that needs a ClusterRoleBinding of the router's ClusterRole (deploy/base); with a RoleBinding in one namespace, set ROUTER_NAMESPACE to it (docs/kubernetes.md)`
      : `; the router's identity may not list and watch ${name} in namespace ${namespace}: bind the router's role there (a RoleBinding in that namespace, or the ClusterRoleBinding of deploy/base) (docs/kubernetes.md)`;
  }
  if (status === 401) return '; the API refused the credentials of the kubeconfig or service account';
  return '';
}

/** Why a list or watch failed: the HTTP status and the API server's message, or the whole network error and the server's address. */
export function describeError(err: unknown, server: string): string {
  if (err === null || err === undefined) return 'unknown error';
  const e = err as { statusCode?: unknown; code?: unknown; message?: unknown; body?: unknown; cause?: { code?: unknown; message?: unknown } };
  const network = networkFailure(e, server);
  if (network !== null) return network;
  const parts: string[] = [];
  if (typeof e.statusCode === 'number') parts.push(`HTTP ${e.statusCode}`);
  else if (typeof e.code === 'number') parts.push(`HTTP ${e.code}`);
  // A refused list carries the API server's Status: its message names who was refused what, where.
  const said = statusMessage(e.body);
  if (said !== null) parts.push(firstLine(said));
  else if (typeof e.message === 'string' && e.message !== '') parts.push(firstLine(apiExceptionMessage(e.message)));
  if (e.cause && typeof e.cause.code === 'string') parts.push(e.cause.code);
  else if (e.cause && typeof e.cause.message === 'string') parts.push(firstLine(e.cause.message));
  return parts.length > 0 ? parts.join(': ') : withoutCredentials(String(err));
}

/**
 * client-node's ApiException says `HTTP-Code: 401\nMessage: Unauthorized\nBody: …\nHeaders: {…}`:
 * its Message line (the status is said apart); any other message as it is.
 */
function apiExceptionMessage(message: string): string {
  if (!message.startsWith('HTTP-Code:')) return message;
  const said = /^Message: (.*)$/m.exec(message);
  return said === null || said[1].trim() === '' ? message.split('\n', 1)[0] : said[1].trim();
}

/**
 * `s` with the credentials of an Authorization value (`Bearer <token>`, `Basic <…>`) replaced by
 * `[redacted]`: a header the HTTP client refused is quoted in its error (a token with a stray
 * character), and the log must not carry the secret.
 */
export function withoutCredentials(s: string): string {
  return s.replace(/\b(Bearer|Basic)\s+[^\s"',;]+/gi, '$1 [redacted]');
}

/**
 * A request that got no HTTP answer (refused, unresolvable name, timeout, connection reset): the
 * error carries a system error code (node-fetch's FetchError `code`, or its cause's). Its reason is
 * kept whole (it names the address tried, e.g. `connect ECONNREFUSED 10.96.0.1:443`), after the
 * API server's URL; null for anything else.
 */
function networkFailure(e: { code?: unknown; message?: unknown; cause?: { code?: unknown; message?: unknown } }, server: string): string | null {
  const code = typeof e.code === 'string' ? e.code : typeof e.cause?.code === 'string' ? e.cause.code : null;
  // Node's own refusal of the request it was to send (a header value it cannot carry): no connection was tried.
  if (code === null || code.startsWith('ERR_INVALID_')) return null;
  const message = typeof e.message === 'string' ? e.message.trim() : '';
  // node-fetch: "request to <url> failed, reason: connect ECONNREFUSED 10.96.0.1:443".
  const at = message.indexOf('reason: ');
  let reason = at === -1 ? message : message.slice(at + 'reason: '.length);
  if (reason === '') reason = code;
  else if (!reason.includes(code)) reason = `${reason} (${code})`;
  return `connection to the API server at ${server} failed: ${withoutCredentials(reason).replace(/\s*\n\s*/g, ' ')}`;
}

/** The message of a v1 Status answer (a JSON string or an object), or null. */
function statusMessage(body: unknown): string | null {
  let status = body;
  if (typeof body === 'string') {
    try {
      status = JSON.parse(body);
    } catch {
      return null;
    }
  }
  if (status === null || typeof status !== 'object') return null;
  const message = (status as { message?: unknown }).message;
  return typeof message === 'string' && message !== '' ? message : null;
}

function formatSeconds(ms: number): string {
  return ms < 10_000 ? `${(ms / 1000).toFixed(1)} s` : `${Math.round(ms / 1000)} s`;
}

/** The message on one line (its line breaks as spaces), credentials redacted, at most 200 characters. */
function firstLine(s: string): string {
  const line = withoutCredentials(s).replace(/\s*[\r\n]+\s*/g, ' ').trim();
  return line.length > 200 ? `${line.slice(0, 197)}...` : line;
}
