import type { ModelRoute, PdSpec, RateLimitSpec, ResourceSnapshot, Rule } from '../config/resource-types.js';
import { pdRole } from '../config/resources.js';
import { compileMatcher, type Matcher } from './string-matcher.js';
import type { EndpointRegistry, EndpointState } from '../upstream/endpoint-registry.js';
import { routeLimitKey, type LimitKey } from '../ratelimit/limit-key.js';
import { NearNames } from '../config/near-name.js';

/** pick(): the matching rule sends no traffic (every target has weight 0). */
export const NO_WEIGHTED_TARGET = Symbol('no weighted target');

/** A ModelServer as the hot path needs it. */
export interface CompiledServer {
  readonly key: string;
  /** Rewrite the upstream request's `model` to this, or null. */
  readonly model: string | null;
  readonly timeoutMs: number;
  /** spec.inferenceEngine (vLLM, SGLang, ...) or null. */
  readonly inferenceEngine: string | null;
  readonly retry: CompiledRetry;
  /** Every pod of the server (for a pdGroup server: of both roles, and those of neither). */
  readonly endpoints: readonly EndpointState[];
  /** Prefill/decode disaggregation (pdGroup), or null: each request goes to one pod of `endpoints`. */
  readonly pd: CompiledPd | null;
}

/** A pdGroup server's pods, paired by group (compilePd). */
export interface CompiledPd {
  readonly connector: PdSpec['connector'];
  /** SGLang's bootstrap handoff: prefill and decode requests sent together, sharing a bootstrap room. */
  readonly sglang: boolean;
  /** The prefill answer's kv_transfer_params go to the decode pod (nixl, mooncake); else nothing passes (http, lmcache). */
  readonly kvTransfer: boolean;
  /** The decode pods of the groups that have pods of both roles. */
  readonly decode: readonly EndpointState[];
  /** The prefill pods of each decode pod's group. */
  readonly prefillOf: ReadonlyMap<EndpointState, readonly EndpointState[]>;
}

/** How a request of this server moves to another pod (proxyWithRetries). */
export interface CompiledRetry {
  /** More pods tried after the first. */
  readonly attempts: number;
  /** false: only a pod that was not reached is left for another; true: any failure before a byte reached the client. */
  readonly anyFailure: boolean;
  readonly intervalMs: number;
}

/** Without trafficPolicy.retry: connection failures move on to up to two more pods. */
export const DEFAULT_RETRY: CompiledRetry = Object.freeze({ attempts: 2, anyFailure: false, intervalMs: 0 });

/**
 * A ModelServer as rules target it: its compiled server in the snapshot in use. The slot stays
 * while the routes do: a change of ModelServers only (their pods moved) puts the new server in the
 * slot, and no route is compiled again. A request holds the server it picked, not the slot.
 */
export interface ServerSlot {
  current: CompiledServer;
}

interface CompiledRule {
  readonly name: string;
  /** [lower-case header name, matcher] pairs; all must hold. */
  readonly headerMatchers: readonly (readonly [string, Matcher])[];
  readonly uriMatcher: Matcher | null;
  /** modelMatch.body.model, or null; applied when the route is given the model name it serves (servedAs). */
  readonly model: string | null;
  /** The servers the rule sends to (weight above 0), each the slot of its ModelServer. */
  readonly servers: readonly ServerSlot[];
  /** Cumulative weights, same order as servers; last = total. */
  readonly cumulative: readonly number[];
}

export interface CompiledRoute {
  readonly key: string;
  /** The model name it was found by: spec.modelName, or one of spec.loraAdapters. */
  readonly modelName: string;
  readonly rules: readonly CompiledRule[];
  readonly rateLimit: RateLimitSpec | null;
  /** What the route's rateLimit counts against (routeLimitKey of its key). */
  readonly limitKey: LimitKey;
  /**
   * The next route that serves the same model name (oldest first in Kubernetes, file order from a
   * file), tried when none of this route's rules matches or its matching rule's targets all have
   * weight 0 (config/shared-model-names.ts); null for the last.
   */
  readonly next: CompiledRoute | null;
}

/** What a matching rule needs to read from the request. */
export interface MatchInput {
  /** Request path without the query string. */
  readonly url: string;
  /** Lower-case header name -> value ("" when absent). */
  header(name: string): string;
}

/** Longest requested model name compared with the served ones for a "did you mean". */
const MAX_NEAR_MODEL_LENGTH = 256;
/** Hints kept per table for names no route serves (unknownModelHint); emptied when full. */
const UNKNOWN_HINTS_KEPT = 256;

/** Most model names an unknown-model answer lists (GET /v1/models lists them all). */
const SERVED_HINT_NAMES = 10;

function servedModelsHint(names: readonly string[]): string {
  if (names.length === 0) return '; no route serves any model: no ModelRoute applies (the resources have none, or each was skipped: the router\'s log says why)';
  const listed = names.slice(0, SERVED_HINT_NAMES).map((n) => JSON.stringify(n)).join(', ');
  const more = names.length - SERVED_HINT_NAMES;
  return more > 0 ? `; served: ${listed} and ${more} more (GET /v1/models lists them all)` : `; served: ${listed}`;
}

/**
 * The compiled routing table of one snapshot: model name -> route -> rule -> server.
 * Built when a snapshot arrives, never per request.
 */
export class RouteTable {
  readonly version: number;
  /**
   * The snapshot's routes, the array given: a next table built from a snapshot with this same
   * array (a change of ModelServers only: its routes as they were) compiles no route again: it
   * takes this one's routes whole and puts the servers that changed in their slots.
   */
  readonly routes: ResourceSnapshot['routes'];
  /** The version of the snapshot these routes came with (this one's, unless it took them from the table before). */
  readonly routesVersion: number;
  private readonly byModel: Map<string, CompiledRoute>;
  /** Lower-case header names any rule matches on (copied from the request up front). */
  readonly matchHeaderNames: ReadonlySet<string>;
  /** Body of GET /v1/models, prebuilt. */
  readonly modelsJson: string;
  /**
   * What a request for a model no route serves is told it could ask for, prebuilt: `; served: a,
   * b, …`, the first SERVED_HINT_NAMES names and how many more, or that no route serves any.
   */
  readonly servedModelsHint: string;
  /** The served model names, in the order of byModel, that unknownModelHint compares a name with. */
  private readonly nearNames: NearNames;
  /** unknownModelHint's answers by the name asked for: at most UNKNOWN_HINTS_KEPT, for this snapshot's names. */
  private readonly hints = new Map<string, string>();
  /** Body of GET /v1/models/{id} (the OpenAI model object) per served model, prebuilt. */
  private readonly modelObjects: Map<string, string>;
  /** The `created` of the served models (seconds). */
  private readonly created: number;
  /** The rate limits of the served routes (to connect their stores before traffic). */
  readonly rateLimits: readonly RateLimitSpec[];
  /** The ModelServers by key (namespace/name). */
  private readonly servers: Map<string, CompiledServer>;
  /** Each ModelServer as the snapshot gave it, as JSON: what tells a next table which servers changed. */
  private readonly serverSources: Map<string, string>;
  /** The slots the compiled rules target, shared with the tables of the same routes before and after. */
  private readonly slots: SlotsByServer;

  /**
   * `prev`: the table in use. When `snapshot.routes` is its routes array (a change of ModelServers
   * only), the routes stay as they were compiled and the servers that changed are put in their
   * slots (ServerSlot): the table is the one a build from scratch gives
   * (test/unit/route/route-table-reuse.test.ts). A build that fails changes nothing of `prev`, nor
   * of `endpoints`. `routesVersion`: the version of the snapshot the routes came with, when it is
   * not this one's (a whole snapshot sent after changes of ModelServers only).
   */
  constructor(snapshot: ResourceSnapshot, endpoints: EndpointRegistry, defaultTimeoutMs: number, now = Date.now(), prev: RouteTable | null = null, routesVersion = snapshot.version) {
    this.version = snapshot.version;
    this.routes = snapshot.routes;
    const reuse = prev !== null && prev.routes === snapshot.routes ? prev : null;
    this.routesVersion = reuse?.routesVersion ?? routesVersion;
    // A route that targets a server gone fails the build here, before any pod is acquired or slot changed.
    if (reuse !== null) checkTargets(snapshot.routes, reuse.servers, new Set(snapshot.servers.map((s) => s.key)));
    const servers = new Map<string, CompiledServer>();
    this.serverSources = new Map();
    for (const s of snapshot.servers) {
      const source = JSON.stringify(s);
      this.serverSources.set(s.key, source);
      const states = s.endpoints.map((e) => endpoints.acquire(e));
      const before = reuse?.servers.get(s.key);
      servers.set(s.key, before !== undefined && reuse!.serverSources.get(s.key) === source ? before : {
        key: s.key,
        model: s.model,
        timeoutMs: s.timeoutMs ?? defaultTimeoutMs,
        inferenceEngine: s.inferenceEngine,
        retry: s.retry === null ? DEFAULT_RETRY : { attempts: s.retry.attempts, anyFailure: true, intervalMs: s.retry.intervalMs },
        endpoints: states,
        pd: s.pd === undefined || s.pd === null ? null : compilePd(s.pd, s.endpoints, states),
      });
    }
    endpoints.releaseUnused();
    this.servers = servers;
    // The primary's time of the snapshot: every worker answers the same (its own load time differed by worker).
    this.created = Math.floor((snapshot.createdAt ?? now) / 1000);
    if (reuse !== null) {
      // The same routes: the same chains, model names, header names and limits; the servers in their slots.
      this.slots = reuse.slots;
      this.slots.fill(servers);
      this.byModel = reuse.byModel;
      this.matchHeaderNames = reuse.matchHeaderNames;
      this.rateLimits = reuse.rateLimits;
      this.modelObjects = reuse.created === this.created ? reuse.modelObjects : modelObjectsOf(this.byModel.keys(), this.created);
      this.modelsJson = reuse.created === this.created ? reuse.modelsJson : modelsListJson(this.modelObjects);
      this.nearNames = reuse.nearNames;
      this.servedModelsHint = reuse.servedModelsHint;
      return;
    }
    const headerNames = new Set<string>();
    this.slots = new SlotsByServer(servers);
    this.byModel = compileChains(snapshot.routes, this.slots, headerNames);
    const limits = new Set<RateLimitSpec>();
    for (const first of this.byModel.values()) for (let r: CompiledRoute | null = first; r !== null; r = r.next) if (r.rateLimit !== null) limits.add(r.rateLimit);
    this.matchHeaderNames = headerNames;
    this.rateLimits = [...limits];
    this.modelObjects = modelObjectsOf(this.byModel.keys(), this.created);
    this.modelsJson = modelsListJson(this.modelObjects);
    const served = [...this.byModel.keys()];
    this.nearNames = new NearNames(served);
    this.servedModelsHint = servedModelsHint(served);
  }

  /** The OpenAI model object of a served model (GET /v1/models/{id}), or undefined. */
  modelJson(id: string): string | undefined {
    return this.modelObjects.get(id);
  }

  /**
   * What a request for `model`, which no route serves, is told after "is not served by any
   * route": the served model it is likely a misspelling of (another case, or within two letters:
   * `SF-Model`, `sf-modle`), then servedModelsHint. Error path only: the names are compared once
   * per name asked for while this table serves (its hint is kept: UNKNOWN_HINTS_KEPT names at most),
   * and a name longer than any worth comparing is not compared.
   */
  unknownModelHint(model: string): string {
    if (model.length > MAX_NEAR_MODEL_LENGTH) return this.servedModelsHint;
    // A client that names a model wrongly names it again with every retry: its hint is kept.
    const kept = this.hints.get(model);
    if (kept !== undefined) return kept;
    const near = this.nearNames.near(model);
    const hint = near === null ? this.servedModelsHint : ` (did you mean ${JSON.stringify(near)}?)${this.servedModelsHint}`;
    if (this.hints.size >= UNKNOWN_HINTS_KEPT) this.hints.clear();
    this.hints.set(model, hint);
    return hint;
  }

  route(modelName: string): CompiledRoute | undefined {
    return this.byModel.get(modelName);
  }

  /** The ModelServer of `key` (namespace/name) in this snapshot, or undefined. */
  server(key: string): CompiledServer | undefined {
    return this.servers.get(key);
  }

  /**
   * First rule whose match holds, then a server drawn by weight; null when no rule matches;
   * NO_WEIGHTED_TARGET when the matching rule's targets all have weight 0.
   */
  static pick(route: CompiledRoute, input: MatchInput, random: () => number = Math.random): CompiledServer | typeof NO_WEIGHTED_TARGET | null {
    for (const rule of route.rules) {
      if (!ruleMatches(rule, input)) continue;
      return drawByWeight(rule, random) ?? NO_WEIGHTED_TARGET;
    }
    return null;
  }
}

/**
 * The slots of the servers, for rules (`of`) and for the rules of LoRA adapters (`keepingModel`:
 * the request's model, the adapter, goes upstream as it is, where spec.model of the ModelServer
 * names the base model and would drop the adapter).
 */
class SlotsByServer {
  private readonly plain = new Map<string, ServerSlot>();
  private readonly keeping = new Map<string, ServerSlot>();

  constructor(servers: ReadonlyMap<string, CompiledServer>) {
    for (const [key, s] of servers) this.plain.set(key, { current: s });
  }

  of(key: string): ServerSlot | undefined {
    return this.plain.get(key);
  }

  keepingModel(key: string): ServerSlot | undefined {
    let slot = this.keeping.get(key);
    if (slot === undefined) {
      const s = this.plain.get(key);
      if (s === undefined) return undefined;
      slot = { current: keepModel(s.current) };
      this.keeping.set(key, slot);
    }
    return slot;
  }

  /** Puts `servers` in their slots (a server no rule targets gets one, for later tables; one gone leaves its slot, which no rule targets). */
  fill(servers: ReadonlyMap<string, CompiledServer>): void {
    for (const [key, s] of servers) {
      const slot = this.plain.get(key);
      if (slot === undefined) this.plain.set(key, { current: s });
      else if (slot.current !== s) {
        slot.current = s;
        const kept = this.keeping.get(key);
        if (kept !== undefined) kept.current = keepModel(s);
      }
    }
  }
}

function keepModel(s: CompiledServer): CompiledServer {
  return s.model === null ? s : { ...s, model: null };
}

/**
 * The chains of routes by the model name they serve, in the snapshot's order (the order they are
 * tried in). Each route serves its modelName; a LoRA adapter is served by the routes that list it,
 * unless a route has it as its modelName.
 */
function compileChains(routes: readonly ModelRoute[], slots: SlotsByServer, headerNames: Set<string>): Map<string, CompiledRoute> {
  const byName = new Map<string, RouteRules[]>();
  const add = (name: string, rules: RouteRules): void => {
    const list = byName.get(name);
    if (list === undefined) byName.set(name, [rules]);
    else list.push(rules);
  };
  const plain = (key: string): ServerSlot | undefined => slots.of(key);
  const keeping = (key: string): ServerSlot | undefined => slots.keepingModel(key);
  for (const r of routes) if (r.modelName !== null) add(r.modelName, compileRoute(r, plain, headerNames));
  const modelNames = new Set(byName.keys());
  for (const r of routes) {
    if (r.loraAdapters.length === 0) continue;
    const compiled = compileRoute(r, keeping, headerNames);
    for (const adapter of r.loraAdapters) if (!modelNames.has(adapter)) add(adapter, compiled);
  }
  const chains = new Map<string, CompiledRoute>();
  for (const [name, list] of byName) {
    let next: CompiledRoute | null = null;
    for (let i = list.length - 1; i >= 0; i--) next = servedAs(list[i], name, next);
    chains.set(name, next!);
  }
  return chains;
}

/**
 * The routes compiled before (against `before`) checked against `servers`: a target of a server
 * gone fails as the build from scratch fails, with its message (the routes in the order
 * compileChains compiles them: those of a modelName, then those of adapters only).
 */
function checkTargets(routes: readonly ModelRoute[], before: ReadonlyMap<string, CompiledServer>, servers: ReadonlySet<string>): void {
  let gone = false;
  for (const key of before.keys()) if (!servers.has(key)) gone = true;
  if (!gone) return;
  const check = (r: ModelRoute): void => {
    for (const rule of r.rules) {
      for (const t of rule.targetModels) {
        if (!servers.has(`${r.namespace}/${t.modelServerName}`)) throw new Error(`${r.key}: rule ${rule.name} names unknown ModelServer ${t.modelServerName}`);
      }
    }
  };
  for (const r of routes) if (r.modelName !== null) check(r);
  for (const r of routes) if (r.modelName === null && r.loraAdapters.length > 0) check(r);
}

/** The OpenAI model object of each name (GET /v1/models/{id}). */
function modelObjectsOf(names: Iterable<string>, created: number): Map<string, string> {
  const objects = new Map<string, string>();
  for (const id of names) objects.set(id, JSON.stringify({ id, object: 'model', created, owned_by: 'inference-router' }));
  return objects;
}

/** The body of GET /v1/models. */
function modelsListJson(objects: ReadonlyMap<string, string>): string {
  return `{"object":"list","data":[${[...objects.values()].join(',')}]}`;
}

/**
 * A pdGroup server's pods by role and group (`labels` of each endpoint; `states` in the same
 * order): only the groups with pods of both roles serve, a decode pod with the prefill pods of its
 * group. Pods of neither role are left out.
 */
export function compilePd(pd: PdSpec, list: readonly { labels?: Record<string, string> }[], states: readonly EndpointState[]): CompiledPd {
  const groups = new Map<string, { prefill: EndpointState[]; decode: EndpointState[] }>();
  for (let i = 0; i < list.length; i++) {
    const labels = list[i].labels;
    const role = pdRole(labels, pd);
    if (role === null) continue;
    const name = labels![pd.groupKey];
    let g = groups.get(name);
    if (g === undefined) groups.set(name, g = { prefill: [], decode: [] });
    g[role].push(states[i]);
  }
  const decode: EndpointState[] = [];
  const prefillOf = new Map<EndpointState, readonly EndpointState[]>();
  for (const g of groups.values()) {
    if (g.prefill.length === 0) continue;
    for (const d of g.decode) {
      decode.push(d);
      prefillOf.set(d, g.prefill);
    }
  }
  return { connector: pd.connector, sglang: pd.connector === 'sglang', kvTransfer: pd.connector === 'nixl' || pd.connector === 'mooncake', decode, prefillOf };
}

/** A route's rules compiled, before it is given the model name it serves (servedAs). */
type RouteRules = Omit<CompiledRoute, 'modelName' | 'next'>;

function compileRoute(r: ModelRoute, servers: (key: string) => ServerSlot | undefined, headerNames: Set<string>): RouteRules {
  return {
    key: r.key,
    rateLimit: r.rateLimit,
    limitKey: routeLimitKey(r.key),
    rules: r.rules.map((rule) => compileRule(r, rule, servers, headerNames)),
  };
}

/**
 * The route as it serves one model name: the rules whose modelMatch.body.model names another are
 * left out, so nothing of that condition is checked per request.
 */
function servedAs(route: RouteRules, modelName: string, next: CompiledRoute | null): CompiledRoute {
  return { ...route, modelName, next, rules: route.rules.filter((rule) => rule.model === null || rule.model === modelName) };
}

function compileRule(route: ModelRoute, rule: Rule, servers: (key: string) => ServerSlot | undefined, headerNames: Set<string>): CompiledRule {
  const headerMatchers: (readonly [string, Matcher])[] = [];
  let uriMatcher: Matcher | null = null;
  if (rule.modelMatch) {
    for (const [name, m] of Object.entries(rule.modelMatch.headers)) {
      const lower = name.toLowerCase();
      headerNames.add(lower);
      headerMatchers.push([lower, compileMatcher(m)]);
    }
    if (rule.modelMatch.uri) uriMatcher = compileMatcher(rule.modelMatch.uri);
  }
  const compiledServers: ServerSlot[] = [];
  const cumulative: number[] = [];
  let total = 0;
  for (const t of rule.targetModels) {
    const server = servers(`${route.namespace}/${t.modelServerName}`);
    if (!server) throw new Error(`${route.key}: rule ${rule.name} names unknown ModelServer ${t.modelServerName}`);
    if (t.weight <= 0) continue;
    total += t.weight;
    compiledServers.push(server);
    cumulative.push(total);
  }
  return { name: rule.name, headerMatchers, uriMatcher, model: rule.modelMatch?.model ?? null, servers: compiledServers, cumulative };
}

function ruleMatches(rule: CompiledRule, input: MatchInput): boolean {
  if (rule.uriMatcher !== null && !rule.uriMatcher(matchPath(input.url))) return false;
  for (const [name, m] of rule.headerMatchers) if (!m(input.header(name))) return false;
  return true;
}

/**
 * The path a `uri` match reads, as the route API's router reads it (Go's URL.Path): its percent
 * escapes decoded (`/v1/%63ompletions` is `/v1/completions`); as sent when none, or when they do
 * not decode as UTF-8.
 */
function matchPath(url: string): string {
  if (url.indexOf('%') === -1) return url;
  try {
    return decodeURIComponent(url);
  } catch {
    return url;
  }
}

function drawByWeight(rule: CompiledRule, random: () => number): CompiledServer | null {
  const n = rule.servers.length;
  if (n === 0) return null;
  if (n === 1) return rule.servers[0].current;
  const x = random() * rule.cumulative[n - 1];
  for (let i = 0; i < n; i++) if (x < rule.cumulative[i]) return rule.servers[i].current;
  return rule.servers[n - 1].current;
}
