/**
 * Builds a routes/servers snapshot from the raw objects the informers hold:
 * validate each ModelRoute / ModelServer (an invalid one is skipped with a problem naming it, or,
 * when an earlier version of the same object was valid, that version is kept and the problem says so),
 * resolve each ModelServer's endpoints from ready pods (or use spec.endpoints as is), skip routes
 * that name missing ModelServers, and order the routes oldest first (creationTimestamp, then
 * namespace/name), the order the routes of one model name are tried in. With ROUTER_GATEWAY set,
 * valid routes bound to another Gateway are left out first (gateway-binding.ts), each with a line
 * of information rather than a problem, and the problems about them, or about ModelServers that no
 * route bound to the Gateway targets, are not given (an invalid route is named all the same).
 *
 * Mistakes that load without an error are problems too: ModelRoutes of which none can serve (every
 * request then answered 404), a workloadSelector that matches no pod, and a target naming a
 * ModelServer that exists only in another namespace. Problems are lines for the operational log;
 * the source logs each one once, when it appears (again only after it went away and came back).
 */
import { rawKey, resourceNotes, validateResource, type ResourceRules } from './resources.js';
import { findMissingReferences, findZeroWeightRules, type MissingReference } from './resource-file.js';
import { byCreation, sharedModelNameNotes } from './shared-model-names.js';
import { routesOfGateway } from './gateway-binding.js';
import { targetedServerKeys } from './targeted-servers.js';
import { API_VERSION, type Endpoint, type ModelRoute, type ModelServer } from './resource-types.js';
import { PodLabelIndex, podMatches, podsByNamespace, selectEndpoints, type PodLike } from './kubernetes-pods.js';

export type ResolvedServer = ModelServer & { endpoints: Endpoint[] };

export interface KubernetesSnapshot {
  routes: ModelRoute[];
  servers: ResolvedServer[];
}

export interface BuildResult {
  snapshot: KubernetesSnapshot;
  /** One line per skipped resource or unusable field, each naming the resource. */
  problems: string[];
  /** One line per valid route left out for being bound to another Gateway than ROUTER_GATEWAY's (information). */
  notServed: string[];
}

type Kind = 'ModelRoute' | 'ModelServer';
/** A line about one resource (namespace/name): `invalid` when it says why the resource (this version of it) is not valid. */
interface ResourceLine { key: string; text: string; invalid: boolean }
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
    const serverLines: ResourceLine[] = [];
    const routeLines: ResourceLine[] = [];
    const servers = this.validateAll<ModelServer>(rawServers, 'ModelServer', serverLines);
    const candidates = this.validateAll<ModelRoute>(rawRoutes, 'ModelRoute', routeLines);
    // ModelServers that exist but were skipped as invalid: a route naming one is told so.
    const invalidServers = new Set<string>();
    /** By ModelServer name, the namespaces that have one (valid or not): a target names one of its route's namespace only. */
    const serverNamespaces = new Map<string, string[]>();
    for (const obj of rawServers) {
      const meta = (obj as { metadata?: RawMeta }).metadata;
      const key = rawKey(meta);
      const v = this.cache.get(obj);
      if (v !== undefined && 'problem' in v) invalidServers.add(key);
      const slash = key.indexOf('/');
      const name = key.slice(slash + 1);
      const list = serverNamespaces.get(name);
      if (list === undefined) serverNamespaces.set(name, [key.slice(0, slash)]);
      else list.push(key.slice(0, slash));
    }

    const gateway = this.rules.gateway ?? null;
    const { kept, skipped } = routesOfGateway(candidates, gateway);
    const notServed = skipped.map((s) => `ModelRoute ${s.route.key}: spec.parentRefs: ${s.problem}`);
    // With a Gateway set, the lines about a route not served, or about a ModelServer that no route
    // bound to it targets, are not this router's concern (the router of that Gateway logs them). A
    // route invalid as it is now is named all the same: which Gateway it is bound to is not known.
    const targeted = targetedServerKeys(kept);
    const notServedKeys = new Set(skipped.map((s) => s.route.key));
    const concernsServer = (key: string): boolean => gateway === null || targeted.has(key);
    for (const l of serverLines) if (concernsServer(l.key)) problems.push(l.text);
    for (const l of routeLines) if (l.invalid || !notServedKeys.has(l.key)) problems.push(l.text);
    const routable: ModelRoute[] = [];
    // One pass over every route's targets (one set of the servers), grouped by route.
    const missingOf = new Map<string, MissingReference[]>();
    for (const m of findMissingReferences(kept, servers)) {
      const list = missingOf.get(m.routeKey);
      if (list === undefined) missingOf.set(m.routeKey, [m]);
      else list.push(m);
    }
    for (const route of kept) {
      const missing = missingOf.get(route.key);
      if (missing === undefined) {
        routable.push(route);
        continue;
      }
      for (const m of missing) {
        const problem = invalidServers.has(m.serverKey)
          ? `ModelServer ${m.serverKey} is invalid (its own line says why), so it counts as missing`
          : elsewhere(m.serverKey, serverNamespaces) ?? m.problem;
        problems.push(`ModelRoute ${route.key}: ${m.path}: ${problem}; route skipped`);
      }
    }
    // Oldest first: the order the routes of one model name are tried in (shared-model-names.ts).
    const routes = routable.sort(byAge);
    for (const n of sharedModelNameNotes(routes, gateway)) problems.push(`ModelRoute ${n.route.key}: ${n.path}: ${n.problem}`);
    for (const route of routes) {
      for (const z of findZeroWeightRules(route)) problems.push(`ModelRoute ${route.key}: ${z.path}: ${z.problem}`);
    }
    const byNs = podsByNamespace(pods);
    const byLabel = new PodLabelIndex(byNs);
    const resolved = servers.map((s) => resolveServer(s, byNs, byLabel, concernsServer(s.key) ? problems : [])).sort(byKey);
    if (rawRoutes.length > 0 && routes.length === 0) {
      const n = rawRoutes.length;
      problems.push(`${n} ModelRoute${n === 1 ? '' : 's'} watched, none of which serves${gateway === null ? '' : ` (ROUTER_GATEWAY=${gateway})`}: every inference request is answered 404 model_not_found until one does (each route's line says why)`);
    }
    return { snapshot: { routes, servers: resolved }, problems, notServed };
  }

  /** The valid objects of one kind (or their last valid versions); `lines` gets what to log about each. */
  private validateAll<T extends ModelRoute | ModelServer>(raw: readonly object[], kind: Kind, lines: ResourceLine[]): T[] {
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
          lines.push({ key, text: `${v.problem}; keeps its last valid version (resourceVersion ${String(kept.resourceVersion)})`, invalid: true });
          out.push(kept.resource as T);
        } else {
          lastValid.delete(key);
          lines.push({ key, text: `${v.problem}; skipped`, invalid: true });
        }
      } else {
        lastValid.set(key, { uid: meta?.uid, resourceVersion: meta?.resourceVersion, resource: v.resource });
        for (const text of v.notes) lines.push({ key, text, invalid: false });
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
      const res = validateResource(input, '', this.rules);
      if (res.kind !== kind) return { problem: `${res.kind} ${res.key}: kind: expected ${kind} from the ${kind} watch` };
      return { resource: res, notes: resourceNotes(input).map((f) => `${res.kind} ${res.key}: ${f.path}: ${f.problem}`) };
    } catch (err) {
      return { problem: err instanceof Error ? err.message : String(err) };
    }
  }
}

function resolveServer(server: ModelServer, podsByNs: Map<string, PodLike[]>, byLabel: PodLabelIndex, problems: string[]): ResolvedServer {
  if (server.endpoints !== null) return { ...server, endpoints: server.endpoints };
  const selector = server.workloadSelector;
  if (selector === null) {
    problems.push(`ModelServer ${server.key}: spec: has neither endpoints nor workloadSelector; it has no endpoints`);
    return { ...server, endpoints: [] };
  }
  if (Object.keys(selector.matchLabels).length === 0) {
    problems.push(`ModelServer ${server.key}: spec.workloadSelector.matchLabels: is empty, so it selects no pods`);
    return { ...server, endpoints: [] };
  }
  if (server.workloadPort === null) {
    problems.push(`ModelServer ${server.key}: spec.workloadPort.port: is required with workloadSelector; it has no endpoints`);
    return { ...server, endpoints: [] };
  }
  const pods = byLabel.candidates(server.namespace, selector.matchLabels);
  if (!pods.some((p) => podMatches(p, selector.matchLabels))) problems.push(noPodMatches(server, selector.matchLabels, podsByNs));
  const pd = server.pd ?? null;
  const labelKeys = pd === null ? null : [pd.groupKey, ...Object.keys(pd.prefillLabels), ...Object.keys(pd.decodeLabels)];
  return { ...server, endpoints: selectEndpoints(pods, selector.matchLabels, server.workloadPort, labelKeys) };
}

/** A workloadSelector that matches no pod of its namespace (serving or not), with the namespaces whose pods it would match. */
function noPodMatches(server: ModelServer, matchLabels: Readonly<Record<string, string>>, podsByNs: Map<string, PodLike[]>): string {
  const selector = Object.entries(matchLabels).map(([k, v]) => `${k}=${v}`).join(',');
  const others: string[] = [];
  for (const [ns, pods] of podsByNs) {
    if (ns !== server.namespace && pods.some((p) => podMatches(p, matchLabels))) others.push(ns);
  }
  const hint = others.length === 0
    ? ''
    : `; pods in namespace ${others.sort().join(', ')} carry these labels, but a ModelServer selects pods of its own namespace only`;
  return `ModelServer ${server.key}: spec.workloadSelector.matchLabels: selector ${selector} matches no pod in namespace ${server.namespace}; it has no endpoints until one exists there${hint}`;
}

/**
 * What a target naming a ModelServer missing from its route's namespace (`serverKey`) is told when
 * ModelServers of that name exist in other namespaces; null when none does.
 */
function elsewhere(serverKey: string, serverNamespaces: Map<string, string[]>): string | null {
  const slash = serverKey.indexOf('/');
  const ns = serverKey.slice(0, slash);
  const name = serverKey.slice(slash + 1);
  const others = (serverNamespaces.get(name) ?? []).filter((n) => n !== ns).sort();
  if (others.length === 0) return null;
  return `ModelServer ${serverKey} does not exist; a ModelServer ${name} exists in namespace ${others.join(', ')}, but a target names a ModelServer of its route's own namespace (${ns}): create the ModelServer in ${ns}, or the route in the ModelServer's namespace`;
}

function byAge(a: ModelRoute, b: ModelRoute): number {
  return byCreation(a, b) || byKey(a, b);
}

function byKey(a: { key: string }, b: { key: string }): number {
  return a.key < b.key ? -1 : a.key > b.key ? 1 : 0;
}
