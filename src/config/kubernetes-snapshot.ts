/**
 * Builds a routes/servers snapshot from the raw objects the informers hold:
 * validate each ModelRoute / ModelServer (an invalid one is skipped with a problem naming it, or,
 * when an earlier version of the same object was valid, that version is kept and the problem says so),
 * resolve each ModelServer's endpoints from ready pods (or use spec.endpoints as is), skip routes
 * that name missing ModelServers, and let the oldest route win a model name
 * (creationTimestamp, then namespace/name).
 */
import { rawKey, resourceNotes, validateResource, type ResourceRules } from './resources.js';
import { findMissingReferences, findZeroWeightRules } from './resource-file.js';
import { sharedModelNameNotes } from './shared-model-names.js';
import { API_VERSION, type Endpoint, type ModelRoute, type ModelServer } from './resource-types.js';
import { podsByNamespace, selectEndpoints, type PodLike } from './kubernetes-pods.js';

export type ResolvedServer = ModelServer & { endpoints: Endpoint[] };

export interface KubernetesSnapshot {
  routes: ModelRoute[];
  servers: ResolvedServer[];
}

export interface BuildResult {
  snapshot: KubernetesSnapshot;
  /** One line per skipped resource or unusable field, each naming the resource. */
  problems: string[];
}

type Kind = 'ModelRoute' | 'ModelServer';
/** A valid resource with the notes to log about it (unknown fields), or why it is invalid. */
type Validated = { resource: ModelRoute | ModelServer; notes: string[] } | { problem: string };

/** The last valid version of one object (kind, namespace/name and uid). */
interface LastValid {
  uid: unknown;
  resourceVersion: unknown;
  resource: ModelRoute | ModelServer;
}

type RawMeta = { name?: unknown; namespace?: unknown; uid?: unknown; resourceVersion?: unknown } | undefined;

/** Validates objects once per object identity (an informer replaces the object on every change). */
export class SnapshotBuilder {
  private readonly cache = new WeakMap<object, Validated>();
  /**
   * Per kind and namespace/name, the last version that was valid: an object later changed into
   * an invalid one keeps serving as that version (an edit the router rejects does not take a
   * route or a server away). Forgotten when the object is deleted or created again (new uid).
   */
  private readonly lastValid = { ModelRoute: new Map<string, LastValid>(), ModelServer: new Map<string, LastValid>() };
  private readonly apiVersion: string;

  constructor(private readonly rules: ResourceRules) {
    this.apiVersion = `${rules.apiGroup}/${API_VERSION}`;
  }

  build(rawRoutes: readonly object[], rawServers: readonly object[], pods: readonly PodLike[]): BuildResult {
    const problems: string[] = [];
    const servers = this.validateAll<ModelServer>(rawServers, 'ModelServer', problems);
    const candidates = this.validateAll<ModelRoute>(rawRoutes, 'ModelRoute', problems);
    // ModelServers that exist but were skipped as invalid: a route naming one is told so.
    const invalidServers = new Set<string>();
    for (const obj of rawServers) {
      const v = this.cache.get(obj);
      if (v !== undefined && 'problem' in v) invalidServers.add(rawKey((obj as { metadata?: RawMeta }).metadata));
    }

    const routable: ModelRoute[] = [];
    for (const route of candidates) {
      const missing = findMissingReferences([route], servers);
      if (missing.length === 0) routable.push(route);
      for (const m of missing) {
        const problem = invalidServers.has(m.serverKey)
          ? `ModelServer ${m.serverKey} is invalid (its own line says why), so it counts as missing`
          : m.problem;
        problems.push(`kubernetes (ModelRoute ${route.key}): ${m.path}: ${problem}; route skipped`);
      }
    }
    // Oldest first: the order the routes of one model name are tried in (shared-model-names.ts).
    const routes = routable.sort(byAge);
    for (const n of sharedModelNameNotes(routes)) problems.push(`kubernetes (ModelRoute ${n.route.key}): ${n.path}: ${n.problem}`);
    for (const route of routes) {
      for (const z of findZeroWeightRules(route)) problems.push(`kubernetes (ModelRoute ${route.key}): ${z.path}: ${z.problem}`);
    }
    const byNs = podsByNamespace(pods);
    const resolved = servers.map((s) => resolveServer(s, byNs, problems)).sort(byKey);
    return { snapshot: { routes, servers: resolved }, problems };
  }

  private validateAll<T extends ModelRoute | ModelServer>(raw: readonly object[], kind: Kind, problems: string[]): T[] {
    const out: T[] = [];
    const lastValid = this.lastValid[kind];
    const seen = new Set<string>();
    for (const obj of raw) {
      let v = this.cache.get(obj);
      if (v === undefined) {
        v = this.validate(obj, kind);
        this.cache.set(obj, v);
      }
      const meta = (obj as { metadata?: RawMeta }).metadata;
      const key = rawKey(meta);
      seen.add(key);
      if ('problem' in v) {
        const kept = lastValid.get(key);
        if (kept !== undefined && kept.uid === meta?.uid) {
          problems.push(`${v.problem}; keeps its last valid version (resourceVersion ${String(kept.resourceVersion)})`);
          out.push(kept.resource as T);
        } else {
          lastValid.delete(key);
          problems.push(`${v.problem}; skipped`);
        }
      } else {
        lastValid.set(key, { uid: meta?.uid, resourceVersion: meta?.resourceVersion, resource: v.resource });
        problems.push(...v.notes);
        out.push(v.resource as T);
      }
    }
    for (const key of lastValid.keys()) if (!seen.has(key)) lastValid.delete(key);
    return out;
  }

  private validate(obj: object, kind: Kind): Validated {
    // Items of some list responses carry no apiVersion/kind; the informer tells us which it is.
    const o = obj as { apiVersion?: unknown; kind?: unknown };
    const input = o.apiVersion === undefined || o.kind === undefined
      ? { ...obj, apiVersion: o.apiVersion ?? this.apiVersion, kind: o.kind ?? kind }
      : obj;
    try {
      const res = validateResource(input, 'kubernetes', this.rules);
      if (res.kind !== kind) return { problem: `kubernetes (${res.kind} ${res.key}): kind: expected ${kind} from the ${kind} watch` };
      return { resource: res, notes: resourceNotes(input).map((f) => `kubernetes (${res.kind} ${res.key}): ${f.path}: ${f.problem}`) };
    } catch (err) {
      return { problem: err instanceof Error ? err.message : String(err) };
    }
  }
}

function resolveServer(server: ModelServer, podsByNs: Map<string, PodLike[]>, problems: string[]): ResolvedServer {
  if (server.endpoints !== null) return { ...server, endpoints: server.endpoints };
  const selector = server.workloadSelector;
  if (selector === null) {
    problems.push(`kubernetes (ModelServer ${server.key}): spec: has neither endpoints nor workloadSelector; it has no endpoints`);
    return { ...server, endpoints: [] };
  }
  if (Object.keys(selector.matchLabels).length === 0) {
    problems.push(`kubernetes (ModelServer ${server.key}): spec.workloadSelector.matchLabels: is empty, so it selects no pods`);
    return { ...server, endpoints: [] };
  }
  if (server.workloadPort === null) {
    problems.push(`kubernetes (ModelServer ${server.key}): spec.workloadPort.port: is required with workloadSelector; it has no endpoints`);
    return { ...server, endpoints: [] };
  }
  const pods = podsByNs.get(server.namespace) ?? [];
  return { ...server, endpoints: selectEndpoints(pods, selector.matchLabels, server.workloadPort) };
}

function byAge(a: ModelRoute, b: ModelRoute): number {
  const ta = a.creationTimestamp === null ? Number.POSITIVE_INFINITY : Date.parse(a.creationTimestamp);
  const tb = b.creationTimestamp === null ? Number.POSITIVE_INFINITY : Date.parse(b.creationTimestamp);
  if (ta !== tb) return ta < tb ? -1 : 1;
  return byKey(a, b);
}

function byKey(a: { key: string }, b: { key: string }): number {
  return a.key < b.key ? -1 : a.key > b.key ? 1 : 0;
}
