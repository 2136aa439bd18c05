/**
 * A small Kubernetes API server for tests: a real node:http server that speaks the list/watch
 * protocol for ModelRoutes, ModelServers (one API group, version v1alpha1) and Pods, cluster-wide
 * and namespaced. The router's real @kubernetes/client-node code talks to it through a kubeconfig
 * written by `writeKubeconfig`.
 *
 * Semantics kept from the real API server:
 * - one resourceVersion counter for all objects (like etcd); every change bumps it and stamps
 *   the object's metadata.resourceVersion;
 * - a list answers the current objects plus `metadata.resourceVersion`;
 * - `?watch=true&resourceVersion=N` first replays the recorded events newer than N, then streams
 *   new events as newline-delimited JSON; `resourceVersion` older than the compaction point
 *   (see `compact`) answers a `410 Gone` ERROR event and closes the stream, as etcd compaction does;
 * - DELETED events carry the object's last state with the new resourceVersion;
 * - BOOKMARK events carry only kind/apiVersion/metadata.resourceVersion.
 *
 * Test controls: `upsert`/`remove` (optionally `silent`: changed without an event, as if the
 * event was lost while disconnected), `dropWatches`, `stallWatches`, `leaveNextWatchesUnanswered`, `leaveNextListsUnanswered`, `holdNextWatches`, `expireNextWatches`, `endNextWatches`, `breakNextWatches`, `failNextRequests`,
 * `sendBookmarks`, `goDown`/`comeBack` (the server unreachable: connections refused), and a request log.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { writeFileSync } from 'node:fs';

export type Plural = 'modelroutes' | 'modelservers' | 'pods';

export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata: { name: string; namespace?: string; [key: string]: unknown };
  [key: string]: unknown;
}

type EventType = 'ADDED' | 'MODIFIED' | 'DELETED';

interface RecordedEvent {
  rv: number;
  plural: Plural;
  namespace: string;
  type: EventType;
  object: KubeObject;
}

interface WatchConn {
  plural: Plural;
  /** null = all namespaces. */
  namespace: string | null;
  bookmarks: boolean;
  res: ServerResponse;
}

export interface RequestRecord {
  path: string;
  plural: Plural | null;
  namespace: string | null;
  watch: boolean;
  /** The `resourceVersion` query parameter ('' when absent). */
  resourceVersion: string;
  allowWatchBookmarks: boolean;
  status: number;
}

const KINDS: Record<Plural, { kind: string; listKind: string }> = {
  modelroutes: { kind: 'ModelRoute', listKind: 'ModelRouteList' },
  modelservers: { kind: 'ModelServer', listKind: 'ModelServerList' },
  pods: { kind: 'Pod', listKind: 'PodList' },
};

export class FakeKubeApi {
  readonly group: string;
  /** Every request, in arrival order. */
  readonly requests: RequestRecord[] = [];
  private readonly server: Server;
  private readonly sockets = new Set<Socket>();
  private readonly stores: Record<Plural, Map<string, KubeObject>> = {
    modelroutes: new Map(), modelservers: new Map(), pods: new Map(),
  };
  private readonly history: RecordedEvent[] = [];
  private readonly watches = new Set<WatchConn>();
  private rv = 100;
  /** Watches from a resourceVersion below this answer 410 Gone. */
  private compactedRv = 0;
  private expire: { count: number; plural: Plural | null } = { count: 0, plural: null };
  private statusEvents: { count: number; plural: Plural | null; status: Record<string, unknown> } = { count: 0, plural: null, status: {} };
  private endEarly: { count: number; plural: Plural | null } = { count: 0, plural: null };
  private broken: { count: number; plural: Plural | null } = { count: 0, plural: null };
  private unanswered: { count: number; plural: Plural | null } = { count: 0, plural: null };
  private unansweredLists: { count: number; plural: Plural | null } = { count: 0, plural: null };
  private hold: { count: number; plural: Plural | null } = { count: 0, plural: null };
  private readonly held: (() => void)[] = [];
  private failures: { count: number; status: number; plural: Plural | null; message: string | null } = { count: 0, status: 500, plural: null, message: null };
  private uidSeq = 0;
  private port = 0;

  constructor(opts: { group: string }) {
    this.group = opts.group;
    this.server = createServer((req, res) => this.handle(req, res));
    this.server.on('connection', (s) => {
      this.sockets.add(s);
      s.on('close', () => this.sockets.delete(s));
    });
  }

  async listen(): Promise<void> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.port = (this.server.address() as AddressInfo).port;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  get resourceVersion(): number {
    return this.rv;
  }

  /** Open watch streams, optionally of one plural. */
  watchCount(plural?: Plural): number {
    let n = 0;
    for (const w of this.watches) if (plural === undefined || w.plural === plural) n++;
    return n;
  }

  /**
   * Writes a kubeconfig (no auth) pointing at this server; returns its path. client-node only
   * talks plain http when the cluster sets insecure-skip-tls-verify.
   */
  writeKubeconfig(path: string): string {
    writeFileSync(path, [
      'apiVersion: v1', 'kind: Config', 'current-context: fake',
      'clusters:', '- name: fake', '  cluster:', `    server: ${this.url}`, '    insecure-skip-tls-verify: true',
      'users:', '- name: fake', '  user: {}',
      'contexts:', '- name: fake', '  context: {cluster: fake, user: fake}', '',
    ].join('\n'));
    return path;
  }

  /**
   * Creates or replaces an object (namespace defaults to "default"); returns the stored copy.
   * `silent`: no watch event is recorded or sent (the change is only visible to a new list).
   */
  upsert(plural: Plural, obj: KubeObject, opts: { silent?: boolean } = {}): KubeObject {
    const namespace = obj.metadata.namespace ?? 'default';
    const key = `${namespace}/${obj.metadata.name}`;
    const store = this.stores[plural];
    const previous = store.get(key);
    const rv = ++this.rv;
    const copy = structuredClone(obj);
    copy.metadata = {
      ...copy.metadata,
      namespace,
      uid: previous?.metadata.uid ?? `uid-${++this.uidSeq}`,
      creationTimestamp: copy.metadata.creationTimestamp ?? previous?.metadata.creationTimestamp ?? new Date(Date.UTC(2025, 0, 1, 0, 0, this.uidSeq)).toISOString().replace('.000Z', 'Z'),
      resourceVersion: String(rv),
    };
    if (plural === 'pods') {
      delete copy.apiVersion;
      delete copy.kind;
    } else {
      copy.apiVersion = copy.apiVersion ?? `${this.group}/v1alpha1`;
      copy.kind = copy.kind ?? KINDS[plural].kind;
    }
    store.set(key, copy);
    if (!opts.silent) this.emit({ rv, plural, namespace, type: previous ? 'MODIFIED' : 'ADDED', object: copy });
    return copy;
  }

  /** Deletes an object; returns false when it did not exist. */
  remove(plural: Plural, namespace: string, name: string, opts: { silent?: boolean } = {}): boolean {
    const key = `${namespace}/${name}`;
    const previous = this.stores[plural].get(key);
    if (previous === undefined) return false;
    this.stores[plural].delete(key);
    const rv = ++this.rv;
    const object = structuredClone(previous);
    object.metadata.resourceVersion = String(rv);
    if (!opts.silent) this.emit({ rv, plural, namespace, type: 'DELETED', object });
    return true;
  }

  get(plural: Plural, namespace: string, name: string): KubeObject | undefined {
    const obj = this.stores[plural].get(`${namespace}/${name}`);
    return obj === undefined ? undefined : structuredClone(obj);
  }

  /**
   * Closes every open watch stream. `abrupt` destroys the sockets (a network failure);
   * otherwise the responses end cleanly (the server's watch timeout).
   */
  dropWatches(opts: { abrupt?: boolean } = {}): void {
    for (const w of this.watches) {
      if (opts.abrupt) w.res.socket?.destroy();
      else w.res.end();
    }
    this.watches.clear();
  }

  /**
   * The open watch streams (of `plural` only, if given) stay open but get nothing more, not even
   * their end: a hung API server, or a connection lost without a reset. New watches are served.
   */
  stallWatches(plural: Plural | null = null): void {
    for (const w of this.watches) {
      if (plural === null || w.plural === plural) this.watches.delete(w);
    }
  }

  /** Forgets history: a watch resuming from any resourceVersion before now gets 410 Gone. */
  compact(): void {
    this.compactedRv = this.rv;
    this.history.length = 0;
  }

  /** The next `count` watch requests (of `plural` only, if given) answer a 410 Gone ERROR event, whatever their resourceVersion. */
  expireNextWatches(count = 1, plural: Plural | null = null): void {
    this.expire = { count, plural };
  }

  /**
   * The next `count` watch requests (of `plural` only, if given) get 200, then an ERROR event whose
   * Status has `code`, `reason`, `message` (and `details`, when given), and their end: an API server
   * whose etcd timed out (500), or whose watch cache is behind the resourceVersion asked for (504,
   * `Too large resource version`).
   */
  errorNextWatches(count: number, plural: Plural | null, code: number, reason: string, message: string, details?: Record<string, unknown>): void {
    this.statusEvents = { count, plural, status: { ...statusObject(code, reason, message), ...(details === undefined ? {} : { details }) } };
  }

  /** The next `count` watch requests (of `plural` only, if given) are never answered, not even with headers. */
  leaveNextWatchesUnanswered(count: number, plural: Plural | null = null): void {
    this.unanswered = { count, plural };
  }

  /** The next `count` watch requests (of `plural` only, if given) wait, unanswered, for `releaseHeldWatches`. */
  holdNextWatches(count: number, plural: Plural | null = null): void {
    this.hold = { count, plural };
  }

  /** Watch requests held by `holdNextWatches` (arrived so far). */
  get heldWatches(): number {
    return this.held.length;
  }

  /** Answers the held watch requests, as any other watch. */
  releaseHeldWatches(): void {
    for (const answer of this.held.splice(0)) answer();
  }

  /** The next `count` list requests (of `plural` only, if given) are never answered, not even with headers. */
  leaveNextListsUnanswered(count: number, plural: Plural | null = null): void {
    this.unansweredLists = { count, plural };
  }

  /** The next `count` watch requests (of `plural` only, if given) get 200 and an immediate end, with no event. */
  endNextWatches(count: number, plural: Plural | null = null): void {
    this.endEarly = { count, plural };
  }

  /** The next `count` watch requests (of `plural` only, if given) get 200, then their connection is reset before any event. */
  breakNextWatches(count: number, plural: Plural | null = null): void {
    this.broken = { count, plural };
  }

  /**
   * The next `count` requests (list or watch; of `plural` only, if given) answer `status` with a
   * Status body, whose message is `message` when given (e.g. the API server's RBAC refusal).
   */
  failNextRequests(count: number, status = 500, plural: Plural | null = null, message: string | null = null): void {
    this.failures = { count, status, plural, message };
  }

  /** Sends a BOOKMARK at the current resourceVersion to every watch that asked for bookmarks. */
  sendBookmarks(): void {
    for (const w of this.watches) {
      if (!w.bookmarks) continue;
      const { kind } = KINDS[w.plural];
      const apiVersion = w.plural === 'pods' ? 'v1' : `${this.group}/v1alpha1`;
      writeEvent(w.res, { type: 'BOOKMARK', object: { kind, apiVersion, metadata: { resourceVersion: String(this.rv) } } });
    }
  }

  /**
   * The API server goes away: it stops listening (new connections are refused) and every open
   * connection, watch streams included, is reset. Its objects and history stay for `comeBack`.
   */
  async goDown(): Promise<void> {
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    for (const s of this.sockets) s.destroy();
    this.watches.clear();
    await closed;
  }

  /** Listens again on the same port, with the same objects and history (after `goDown`). */
  async comeBack(): Promise<void> {
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(this.port, '127.0.0.1', () => {
        this.server.off('error', reject);
        resolve();
      });
    });
  }

  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    // Already closed by goDown: the callback gets ERR_SERVER_NOT_RUNNING, and the server is closed all the same.
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private emit(event: RecordedEvent): void {
    this.history.push(event);
    for (const w of this.watches) {
      if (matches(w, event)) writeEvent(w.res, { type: event.type, object: event.object });
    }
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    const url = new URL(req.url ?? '/', 'http://fake');
    const route = this.parsePath(url.pathname);
    const watch = url.searchParams.get('watch') === 'true' || url.searchParams.get('watch') === '1';
    const resourceVersion = url.searchParams.get('resourceVersion') ?? '';
    const allowWatchBookmarks = url.searchParams.get('allowWatchBookmarks') === 'true';
    const record: RequestRecord = {
      path: url.pathname, plural: route?.plural ?? null, namespace: route?.namespace ?? null, watch, resourceVersion, allowWatchBookmarks, status: 200,
    };
    this.requests.push(record);
    const fail = (status: number, reason: string, message: string): void => {
      record.status = status;
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(statusObject(status, reason, message)));
    };
    if (req.method !== 'GET') return fail(405, 'MethodNotAllowed', `method ${req.method} is not supported by the fake API`);
    if (route === null) return fail(404, 'NotFound', `the server could not find the requested resource (${url.pathname})`);
    if (this.failures.count > 0 && (this.failures.plural === null || this.failures.plural === route.plural)) {
      this.failures.count--;
      const status = this.failures.status;
      const reason = status === 410 ? 'Expired' : status === 403 ? 'Forbidden' : 'InternalError';
      return fail(status, reason, this.failures.message ?? `injected failure ${status}`);
    }
    if (!watch) {
      if (this.unansweredLists.count > 0 && (this.unansweredLists.plural === null || this.unansweredLists.plural === route.plural)) {
        this.unansweredLists.count--;
        return;
      }
      return this.list(route.plural, route.namespace, res);
    }
    if (this.hold.count > 0 && (this.hold.plural === null || this.hold.plural === route.plural)) {
      this.hold.count--;
      this.held.push(() => this.startWatch(route.plural, route.namespace, resourceVersion, allowWatchBookmarks, res));
      return;
    }
    this.startWatch(route.plural, route.namespace, resourceVersion, allowWatchBookmarks, res);
  }

  private parsePath(path: string): { plural: Plural; namespace: string | null } | null {
    const core = /^\/api\/v1\/(?:namespaces\/([^/]+)\/)?(pods)$/.exec(path);
    if (core) return { plural: 'pods', namespace: core[1] ?? null };
    const prefix = `/apis/${this.group}/v1alpha1/`;
    if (!path.startsWith(prefix)) return null;
    const custom = /^(?:namespaces\/([^/]+)\/)?(modelroutes|modelservers)$/.exec(path.slice(prefix.length));
    return custom ? { plural: custom[2] as Plural, namespace: custom[1] ?? null } : null;
  }

  private list(plural: Plural, namespace: string | null, res: ServerResponse): void {
    const items = [...this.stores[plural].values()]
      .filter((o) => namespace === null || o.metadata.namespace === namespace)
      .sort((a, b) => keyOf(a).localeCompare(keyOf(b)));
    const body = {
      kind: KINDS[plural].listKind,
      apiVersion: plural === 'pods' ? 'v1' : `${this.group}/v1alpha1`,
      metadata: { resourceVersion: String(this.rv) },
      items,
    };
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  }

  private startWatch(plural: Plural, namespace: string | null, rvText: string, bookmarks: boolean, res: ServerResponse): void {
    if (this.unanswered.count > 0 && (this.unanswered.plural === null || this.unanswered.plural === plural)) {
      this.unanswered.count--;
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json', 'transfer-encoding': 'chunked' });
    res.flushHeaders();
    if (this.endEarly.count > 0 && (this.endEarly.plural === null || this.endEarly.plural === plural)) {
      this.endEarly.count--;
      res.end();
      return;
    }
    if (this.broken.count > 0 && (this.broken.plural === null || this.broken.plural === plural)) {
      this.broken.count--;
      res.socket?.destroy();
      return;
    }
    if (this.statusEvents.count > 0 && (this.statusEvents.plural === null || this.statusEvents.plural === plural)) {
      this.statusEvents.count--;
      writeEvent(res, { type: 'ERROR', object: this.statusEvents.status });
      res.end();
      return;
    }
    const from = Number(rvText);
    const expireThis = this.expire.count > 0 && (this.expire.plural === null || this.expire.plural === plural);
    if (expireThis || (rvText !== '' && rvText !== '0' && (!Number.isInteger(from) || from < this.compactedRv))) {
      if (expireThis) this.expire.count--;
      writeEvent(res, {
        type: 'ERROR',
        object: statusObject(410, 'Expired', `too old resource version: ${rvText} (${this.compactedRv})`),
      });
      res.end();
      return;
    }
    const conn: WatchConn = { plural, namespace, bookmarks, res };
    if (rvText === '' || rvText === '0') {
      // "Any" resourceVersion: synthetic ADDED events for the current state.
      for (const obj of this.stores[plural].values()) {
        if (namespace === null || obj.metadata.namespace === namespace) writeEvent(res, { type: 'ADDED', object: obj });
      }
    } else {
      for (const event of this.history) {
        if (event.rv > from && matches(conn, event)) writeEvent(res, { type: event.type, object: event.object });
      }
    }
    this.watches.add(conn);
    res.on('close', () => this.watches.delete(conn));
  }
}

function matches(w: WatchConn, event: RecordedEvent): boolean {
  return w.plural === event.plural && (w.namespace === null || w.namespace === event.namespace);
}

function writeEvent(res: ServerResponse, event: { type: string; object: unknown }): void {
  if (!res.writableEnded && !res.destroyed) res.write(`${JSON.stringify(event)}\n`);
}

function keyOf(o: KubeObject): string {
  return `${o.metadata.namespace ?? ''}/${o.metadata.name}`;
}

function statusObject(code: number, reason: string, message: string): Record<string, unknown> {
  return { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason, code };
}

/** Starts a fake API server for `group` on a free port. */
export async function startFakeKubeApi(group: string): Promise<FakeKubeApi> {
  const api = new FakeKubeApi({ group });
  await api.listen();
  return api;
}
