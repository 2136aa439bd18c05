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

interface CompiledRule {
  readonly name: string;
  /** [lower-case header name, matcher] pairs; all must hold. */
  readonly headerMatchers: readonly (readonly [string, Matcher])[];
  readonly uriMatcher: Matcher | null;
  /** modelMatch.body.model, or null; applied when the route is given the model name it serves (servedAs). */
  readonly model: string | null;
  readonly servers: readonly CompiledServer[];
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
  /** The rate limits of the served routes (to connect their stores before traffic). */
  readonly rateLimits: readonly RateLimitSpec[];
  /** The ModelServers by key (namespace/name). */
  private readonly servers: Map<string, CompiledServer>;

  constructor(snapshot: ResourceSnapshot, endpoints: EndpointRegistry, defaultTimeoutMs: number, now = Date.now()) {
    this.version = snapshot.version;
    const servers = new Map<string, CompiledServer>();
    for (const s of snapshot.servers) {
      const states = s.endpoints.map((e) => endpoints.acquire(e));
      servers.set(s.key, {
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
    const headerNames = new Set<string>();
    // Each name's routes in the snapshot's order, the order they are tried in.
    const byName = new Map<string, RouteRules[]>();
    const add = (name: string, rules: RouteRules): void => {
      const list = byName.get(name);
      if (list === undefined) byName.set(name, [rules]);
      else list.push(rules);
    };
    for (const r of snapshot.routes) if (r.modelName !== null) add(r.modelName, compileRoute(r, servers, headerNames));
    // A LoRA adapter is served by the routes that list it, unless a route has it as its modelName.
    // The request's model (the adapter) goes upstream as it is: spec.model of the ModelServer
    // names the base model, which would drop the adapter.
    const modelNames = new Set(byName.keys());
    let keepModel: Map<string, CompiledServer> | null = null;
    for (const r of snapshot.routes) {
      if (r.loraAdapters.length === 0) continue;
      keepModel ??= new Map([...servers].map(([key, s]) => [key, s.model === null ? s : { ...s, model: null }]));
      const compiled = compileRoute(r, keepModel, headerNames);
      for (const adapter of r.loraAdapters) if (!modelNames.has(adapter)) add(adapter, compiled);
    }
    this.byModel = new Map();
    const limits = new Set<RateLimitSpec>();
    for (const [name, list] of byName) {
      let next: CompiledRoute | null = null;
      for (let i = list.length - 1; i >= 0; i--) {
        next = servedAs(list[i], name, next);
        if (next.rateLimit !== null) limits.add(next.rateLimit);
      }
      this.byModel.set(name, next!);
    }
    this.matchHeaderNames = headerNames;
    this.rateLimits = [...limits];
    // The primary's time of the snapshot: every worker answers the same (its own load time differed by worker).
    const created = Math.floor((snapshot.createdAt ?? now) / 1000);
    this.modelObjects = new Map();
    for (const id of this.byModel.keys()) {
      this.modelObjects.set(id, JSON.stringify({ id, object: 'model', created, owned_by: 'inference-router' }));
    }
    this.modelsJson = `{"object":"list","data":[${[...this.modelObjects.values()].join(',')}]}`;
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

function compileRoute(r: ModelRoute, servers: Map<string, CompiledServer>, headerNames: Set<string>): RouteRules {
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

function compileRule(route: ModelRoute, rule: Rule, servers: Map<string, CompiledServer>, headerNames: Set<string>): CompiledRule {
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
  const compiledServers: CompiledServer[] = [];
  const cumulative: number[] = [];
  let total = 0;
  for (const t of rule.targetModels) {
    const server = servers.get(`${route.namespace}/${t.modelServerName}`);
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
  if (n === 1) return rule.servers[0];
  const x = random() * rule.cumulative[n - 1];
  for (let i = 0; i < n; i++) if (x < rule.cumulative[i]) return rule.servers[i];
  return rule.servers[n - 1];
}
