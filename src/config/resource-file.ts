/**
 * A resources file: YAML documents (or `kind: List`, `ModelRouteList`, `ModelServerList`) validated one by one (resources.ts), then
 * checked as a whole: duplicate names, references, routes sharing a model name (shared-model-names.ts).
 * With ROUTER_GATEWAY set, the routes of other Gateways are checked as the others, then left out
 * (gateway-binding.ts): one file served by a router per Gateway is valid or not for all of them;
 * its warnings are about the routes served and the ModelServers they target only.
 */
import { LineCounter, parseAllDocuments } from 'yaml';
import type { ModelRoute, ModelServer } from './resource-types.js';
import { describe, isPlainObject } from './describe-value.js';
import { formatMessage, otherApiKind, ResourceError, resourceNotes, unknownFields, validateResource, type ResourceRules } from './resources.js';
import { byCreation, sharedModelNameNotes } from './shared-model-names.js';
import { routesOfGateway } from './gateway-binding.js';
import { targetedServerKeys } from './targeted-servers.js';

/** A route target that names no ModelServer in the route's namespace. */
export interface MissingReference {
  routeKey: string;
  /** namespace/name of the ModelServer it names. */
  serverKey: string;
  path: string;
  problem: string;
}

export function findMissingReferences(routes: readonly ModelRoute[], servers: readonly ModelServer[]): MissingReference[] {
  const serverKeys = new Set(servers.map((s) => s.key));
  const missing: MissingReference[] = [];
  for (const route of routes) {
    route.rules.forEach((r, i) => r.targetModels.forEach((t, j) => {
      if (serverKeys.has(`${route.namespace}/${t.modelServerName}`)) return;
      missing.push({
        routeKey: route.key,
        serverKey: `${route.namespace}/${t.modelServerName}`,
        path: `spec.rules[${i}].targetModels[${j}].modelServerName`,
        problem: `ModelServer ${route.namespace}/${t.modelServerName} does not exist (a target must name a ModelServer in the route's namespace)`,
      });
    }));
  }
  return missing;
}

/**
 * Rules whose targets all have weight 0: the route is kept (such a rule takes its requests off
 * every server), but each request it matches is answered 503 no_weighted_target, which the route
 * API refuses at admission ("total weight must be greater than zero"); said when loaded.
 */
export function findZeroWeightRules(route: ModelRoute): { path: string; problem: string }[] {
  const out: { path: string; problem: string }[] = [];
  route.rules.forEach((r, i) => {
    if (r.targetModels.every((t) => t.weight === 0)) {
      out.push({
        path: `spec.rules[${i}].targetModels`,
        problem: `every target has weight 0, so each request this rule matches is answered 503 no_weighted_target, unless a later route of the same model name takes it (give a target a weight above 0 to send it traffic)`,
      });
    }
  });
  return out;
}

const NO_ENDPOINTS = 'not set: from a resources file a ModelServer\'s pods are its spec.endpoints (spec.workloadSelector is looked up with --kubernetes only), so requests routed to it answer 503 no_ready_endpoint';

interface Located<T> { value: T; where: string }
/** A valid resource, where it is, and what to warn of about it (resourceNotes). */
interface Collected extends Located<ModelRoute | ModelServer> { notes: string[] }

export interface ParsedResourceFile {
  /** The routes served: with ROUTER_GATEWAY, those bound to its Gateway. */
  routes: ModelRoute[];
  servers: ModelServer[];
  warnings: string[];
  /** One line per route left out for being bound to another Gateway than ROUTER_GATEWAY's (information, not a warning). */
  notServed: string[];
  /** Non-empty YAML documents in the file (a `List` counts as one); 0 for an empty file. */
  documents: number;
}

/**
 * Parses a YAML file of one or more documents (each a ModelRoute, a ModelServer or a `List`,
 * `ModelRouteList` or `ModelServerList`
 * of them). Throws one ResourceError listing every problem. Routes that serve the same model name
 * are all kept, oldest creationTimestamp first, then in file order: the order they are tried in
 * (shared-model-names.ts).
 */
export function parseResourceFile(
  text: string,
  file: string,
  opts: ResourceRules,
): ParsedResourceFile {
  const errors: ResourceError[] = [];
  const warnings: string[] = [];
  const items: Collected[] = [];
  const docs = documents(text, file, errors);
  for (const { value, where } of docs) {
    const listKind = isPlainObject(value) ? value.kind : undefined;
    if (isPlainObject(value) && (listKind === 'List' || listKind === 'ModelRouteList' || listKind === 'ModelServerList')) {
      if (!Array.isArray(value.items)) {
        errors.push(new ResourceError(where, listKind, 'items', `expected a list of resources, got ${describe(value.items)}`));
        continue;
      }
      // A typed list (what the API answers to a list request) may leave out its items' kind and
      // apiVersion, which are then the list's, as kubectl takes them.
      const typed = listKind === 'List' ? null : { kind: listKind.slice(0, -'List'.length), apiVersion: value.apiVersion };
      value.items.forEach((item, i) => {
        const full = typed !== null && isPlainObject(item)
          ? { ...item, kind: item.kind ?? typed.kind, apiVersion: item.apiVersion ?? typed.apiVersion }
          : item;
        collect(full, `${where}, items[${i}]`);
      });
    } else {
      collect(value, where);
    }
  }
  function collect(obj: unknown, where: string): void {
    const other = otherApiKind(obj, opts.apiGroup);
    if (other !== null) {
      warnings.push(`${where}: ${other} is not a resource of the router (it reads ModelRoute and ModelServer of ${opts.apiGroup}); skipped`);
      return;
    }
    try {
      const value = validateResource(obj, where, opts);
      const notes = resourceNotes(obj).map((f) => formatMessage(where, `${value.kind} ${value.key}`, f.path, f.problem));
      items.push({ value, where, notes });
    } catch (err) {
      if (!(err instanceof ResourceError)) throw err;
      // A misspelt field (`modelname`) is what leaves the right one (`modelName`) missing: name it.
      const unknown = unknownFields(obj);
      errors.push(unknown.length === 0 ? err : new ResourceError(err.where, err.resource, err.path,
        `${err.problem} (misspelt? this resource also has unknown ${unknown.length === 1 ? 'field' : 'fields'} ${unknown.join(', ')})`));
    }
  }
  if (errors.length > 0) throw ResourceError.combine(file, errors);

  const firstByKey = new Map<string, Located<ModelRoute | ModelServer>>();
  const routes: ModelRoute[] = [];
  const servers: ModelServer[] = [];
  const whereOfRoute = new Map<string, string>();
  const unique: Collected[] = [];
  for (const item of items) {
    const res = item.value;
    const label = `${res.kind} ${res.key}`;
    const first = firstByKey.get(label);
    if (first !== undefined) {
      errors.push(new ResourceError(item.where, label, 'metadata.name', `duplicate ${label}, first defined in ${first.where}`));
      continue;
    }
    firstByKey.set(label, item);
    unique.push(item);
    if (res.kind === 'ModelServer') {
      servers.push(res);
      continue;
    }
    whereOfRoute.set(res.key, item.where);
    routes.push(res);
  }
  for (const m of findMissingReferences(routes, servers)) {
    errors.push(new ResourceError(whereOfRoute.get(m.routeKey) ?? file, `ModelRoute ${m.routeKey}`, m.path, m.problem));
  }
  if (errors.length > 0) throw ResourceError.combine(file, errors);
  // Oldest first, as the route API orders routes of one name: routes that carry a
  // creationTimestamp (a `kubectl get -o yaml` dump) before those without, which keep file order.
  routes.sort(byCreation);
  const gateway = opts.gateway ?? null;
  const { kept, skipped } = routesOfGateway(routes, gateway);
  const notServed = skipped.map((s) => formatMessage(whereOfRoute.get(s.route.key) ?? file, `ModelRoute ${s.route.key}`, 'spec.parentRefs', s.problem));
  // With a Gateway set, what is said of a route not served, or of a ModelServer only such routes
  // target (or none), is not this router's concern: the router of that Gateway says it.
  const keptKeys = new Set(kept.map((r) => r.key));
  const targeted = targetedServerKeys(kept);
  const concerns = (res: ModelRoute | ModelServer): boolean => gateway === null || (res.kind === 'ModelRoute' ? keptKeys.has(res.key) : targeted.has(res.key));
  for (const item of unique) if (concerns(item.value)) warnings.push(...item.notes);
  for (const item of unique) {
    // A route API manifest names its pods by spec.workloadSelector, which only --kubernetes
    // resolves: from a file such a server has no pod, and every request for it would answer 503.
    const res = item.value;
    if (res.kind === 'ModelServer' && res.endpoints === null && concerns(res)) warnings.push(formatMessage(item.where, `ModelServer ${res.key}`, 'spec.endpoints', NO_ENDPOINTS));
  }
  for (const route of kept) {
    for (const z of findZeroWeightRules(route)) warnings.push(formatMessage(whereOfRoute.get(route.key) ?? file, `ModelRoute ${route.key}`, z.path, z.problem));
  }
  for (const n of sharedModelNameNotes(kept, gateway)) warnings.push(formatMessage(whereOfRoute.get(n.route.key) ?? file, `ModelRoute ${n.route.key}`, n.path, n.problem));
  return { routes: kept, servers, warnings, notServed, documents: docs.length };
}

/** The non-empty documents of a YAML stream as plain JS, each with its `<file>: document <n>`. */
function documents(text: string, file: string, errors: ResourceError[]): Located<unknown>[] {
  const lineCounter = new LineCounter();
  // `merge`: `<<: *anchor` merge keys, which kubectl's YAML reader applies too (YAML 1.1), are
  // merged here as well rather than read as a key named "<<".
  const parsed = parseAllDocuments(text, { lineCounter, prettyErrors: false, merge: true });
  const syntax = (where: string, e: { pos: [number, number]; message: string }): ResourceError => {
    const { line, col } = lineCounter.linePos(e.pos[0]);
    return new ResourceError(where, null, null, `YAML syntax error at line ${line}, column ${col}: ${e.message}`);
  };
  if (!Array.isArray(parsed) || parsed.length === 0) {
    const streamErrors = (parsed as { errors?: { pos: [number, number]; message: string }[] }).errors ?? [];
    for (const e of streamErrors) errors.push(syntax(file, e));
    return [];
  }
  const out: Located<unknown>[] = [];
  parsed.forEach((doc, i) => {
    const where = `${file}: document ${i + 1}`;
    if (doc.errors.length > 0) {
      errors.push(syntax(where, doc.errors[0]));
      return;
    }
    if (doc.contents === null) return;
    try {
      const value: unknown = doc.toJS({ maxAliasCount: 100 });
      if (value !== null && value !== undefined) out.push({ value, where });
    } catch (err) {
      errors.push(new ResourceError(where, null, null, `cannot read YAML: ${(err as Error).message}`));
    }
  });
  return out;
}
