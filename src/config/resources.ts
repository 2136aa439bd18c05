/**
 * Resource schema: validates ModelRoute / ModelServer objects (from YAML files or from the
 * Kubernetes API) into the plain, normalized types of resource-types.ts. Every error names
 * where it was found, the resource and the path of the bad field.
 *
 * Unknown fields are tolerated (real manifests carry status, ...); unknown kinds are rejected.
 */
import { parseDuration } from './duration.js';
import { parseHostPort } from './addresses.js';
import { parseRateLimit } from './rate-limit-spec.js';
import { parseParentRefs } from './parent-refs.js';
import { nearName } from './near-name.js';
import { nestedRepetition, routeRegex } from './route-regex.js';
import { describe, isPlainObject, quoted } from './describe-value.js';
import {
  API_VERSION, KV_CONNECTOR_TYPES, type Endpoint, type KvConnectorType, type PdSpec, type ModelRoute, type ModelServer, type RateLimitSpec, type RetryPolicy, type Rule, type RuleMatch,
  type StringMatch, type TargetModel,
} from './resource-types.js';

const MATCH_KINDS = ['exact', 'prefix', 'regex'] as const;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/;
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9a-z-]+$/;

/** A bad resource. `message` reads `<where> (<Kind ns/name>): <field path>: <problem>`. */
export class ResourceError extends Error {
  /** When one error reports several problems (parseResourceFile), each of them; else just this one. */
  readonly problems: readonly ResourceError[];

  constructor(
    readonly where: string,
    readonly resource: string | null,
    readonly path: string | null,
    readonly problem: string,
    problems?: readonly ResourceError[],
  ) {
    super(formatMessage(where, resource, path, problem));
    this.name = 'ResourceError';
    this.problems = problems && problems.length > 1 ? problems : [this];
  }

  /**
   * One error for several problems; a single problem is returned as is. One line, numbered: the
   * operational log writes one line per event, where line breaks would show as `\n`.
   */
  static combine(file: string, errors: readonly ResourceError[]): ResourceError {
    if (errors.length === 1) return errors[0];
    // Each problem's own message starts with the file too: said once, before the list.
    const list = errors.map((e, i) => `(${i + 1}) ${e.message.startsWith(`${file}: `) ? e.message.slice(file.length + 2) : e.message}`).join('; ');
    return new ResourceError(file, null, null, `${errors.length} problems: ${list}`, errors);
  }
}

/**
 * `where (resource): path: problem`; without `where` (a resource read from the cluster, whose log
 * lines are already marked `kubernetes`), `resource: path: problem`.
 */
export function formatMessage(where: string, resource: string | null, path: string | null, problem: string): string {
  const head = where === '' ? resource ?? '' : resource ? `${where} (${resource})` : where;
  return `${head}${path ? `${head === '' ? '' : ': '}${path}` : ''}: ${problem}`;
}


/** `a.b` for plain keys, `a["x y"]` otherwise. */
function child(path: string, key: string): string {
  if (/^[A-Za-z_][-\w]*$/.test(key)) return path ? `${path}.${key}` : key;
  return `${path}[${JSON.stringify(key)}]`;
}

/** Field checks for one resource; every failure throws a ResourceError naming the field. */
class Checker {
  resource: string | null = null;
  constructor(readonly where: string) {}

  fail(path: string, problem: string): never {
    throw new ResourceError(this.where, this.resource, path || null, problem);
  }

  expected(path: string, what: string, got: unknown): never {
    this.fail(path, got === undefined || got === null ? `is required: expected ${what}` : `expected ${what}, got ${describe(got)}`);
  }

  object(v: unknown, path: string): Record<string, unknown> {
    return isPlainObject(v) ? v : this.expected(path, 'a mapping', v);
  }

  optObject(v: unknown, path: string): Record<string, unknown> | null {
    return v === undefined || v === null ? null : this.object(v, path);
  }

  string(v: unknown, path: string): string {
    return typeof v === 'string' && v !== '' ? v : this.expected(path, 'a non-empty string', v);
  }

  optString(v: unknown, path: string): string | null {
    return v === undefined || v === null ? null : this.string(v, path);
  }

  int(v: unknown, path: string, min: number, max: number): number {
    if (typeof v === 'number' && Number.isInteger(v) && v >= min && v <= max) return v;
    if (v === undefined || v === null) this.expected(path, `an integer from ${min} to ${max}`, v);
    this.fail(path, `must be an integer from ${min} to ${max}, got ${describe(v)}`);
  }

  optInt(v: unknown, path: string, min: number, max: number): number | null {
    return v === undefined || v === null ? null : this.int(v, path, min, max);
  }

  list(v: unknown, path: string): unknown[] {
    if (!Array.isArray(v)) this.expected(path, 'a non-empty list', v);
    if (v.length === 0) this.fail(path, 'must not be empty');
    return v;
  }

  stringMap(v: unknown, path: string): Record<string, string> {
    const obj = this.object(v, path);
    const out: Record<string, string> = {};
    for (const key of Object.keys(obj)) {
      const value = obj[key];
      if (typeof value !== 'string') this.expected(child(path, key), 'a string', value);
      out[key] = value;
    }
    return out;
  }
}

/**
 * The fields of the route API's ModelRoute and ModelServer (its CRD schemas, which admit no other
 * field) and this router's own (spec.endpoints, spec.rateLimit.mode), for unknownFields(). `true`:
 * anything below is accepted as it is (metadata, status, labels); `[]`:
 * each item of a list; `*`: each value of a map.
 */
type FieldTree = true | { readonly [key: string]: FieldTree };
const STRING_MATCH_FIELDS: FieldTree = { exact: true, prefix: true, regex: true };
const COMMON_FIELDS = { apiVersion: true, kind: true, metadata: true, status: true } as const;
const ROUTE_FIELDS: FieldTree = {
  ...COMMON_FIELDS,
  spec: {
    modelName: true,
    loraAdapters: true,
    parentRefs: { '[]': { group: true, kind: true, namespace: true, name: true, sectionName: true, port: true } },
    rules: {
      '[]': {
        name: true,
        modelMatch: { headers: { '*': STRING_MATCH_FIELDS }, uri: STRING_MATCH_FIELDS, body: { model: true } },
        targetModels: { '[]': { modelServerName: true, externalModelProviderName: true, weight: true } },
      },
    },
    rateLimit: { inputTokensPerUnit: true, outputTokensPerUnit: true, unit: true, mode: true, global: { redis: { address: true } } },
  },
};
const SERVER_FIELDS: FieldTree = {
  ...COMMON_FIELDS,
  spec: {
    model: true,
    inferenceEngine: true,
    workloadSelector: { matchLabels: true, pdGroup: { groupKey: true, prefillLabels: true, decodeLabels: true } },
    workloadPort: { port: true, protocol: true },
    trafficPolicy: { timeout: true, retry: { attempts: true, retryInterval: true } },
    kvConnector: { type: true },
    endpoints: { '[]': { name: true, address: true, labels: true } },
  },
};

/**
 * Paths of the fields of a valid resource that neither the route API nor this router has (a
 * misspelt `modelMatch.header`, say, which would otherwise leave a rule that matches every
 * request): they are ignored, and the sources say so.
 */
export function unknownFields(obj: unknown): string[] {
  return unknownFieldList(obj).map((f) => f.path);
}

/**
 * What the sources warn of in a valid resource, as path and problem: its unknown fields (with the
 * field likely meant), a `spec.rateLimit.global` that names no Redis (globalWithoutRedis), and a
 * `spec.workloadPort.protocol` other than http (otherProtocol).
 */
export function resourceNotes(obj: unknown): { path: string; problem: string }[] {
  const notes = unknownFieldList(obj).map((f) => ({ path: f.path, problem: f.near === null ? UNKNOWN_FIELD : `${UNKNOWN_FIELD}; did you mean ${f.near}?` }));
  const localGlobal = globalWithoutRedis(obj);
  if (localGlobal !== null) notes.push({ path: localGlobal, problem: GLOBAL_WITHOUT_REDIS });
  const protocol = otherProtocol(obj);
  if (protocol !== null) notes.push({ path: 'spec.workloadPort.protocol', problem: `${quoted(protocol)} ${PLAIN_HTTP_ONLY}` });
  for (const r of slowRegexes(obj)) notes.push({ path: r.path, problem: `${quoted(r.pattern)} ${NESTED_REPETITION} ${quoted(r.nested)}` });
  const route = specOf(obj, 'ModelRoute');
  const limit = route?.rateLimit;
  if (isPlainObject(limit) && (limit.inputTokensPerUnit ?? null) === null && (limit.outputTokensPerUnit ?? null) === null) {
    notes.push({ path: 'spec.rateLimit', problem: 'sets neither inputTokensPerUnit nor outputTokensPerUnit: the route has no limit, as the route API reads it' });
  }
  const attempts = retryAttempts(obj);
  if (attempts !== null && attempts > MAX_RETRY_ATTEMPTS) {
    notes.push({ path: 'spec.trafficPolicy.retry.attempts', problem: `${attempts} is read as ${MAX_RETRY_ATTEMPTS}: a request is tried on at most ${MAX_RETRY_ATTEMPTS} more pods (each pod at most once)` });
  }
  if (Array.isArray(route?.rules) && route.rules.length === 0) {
    notes.push({ path: 'spec.rules', problem: 'is empty: the route serves no request (one for its model goes on to the next route of that name, else is answered 404 no_matching_rule)' });
  }
  for (const m of routeStringMatches(obj)) {
    if (!isPlainObject(m.value)) continue;
    const present = matchKindsSet(m.value);
    if (present.length === 1 || (present.length === 0 && Object.keys(m.value).length > 0)) continue;
    notes.push({ path: m.path, problem: present.length === 0 ? MATCHES_ANY : `sets ${present.join(' and ')}: ${present[0]} is read, the others are ignored, as the route API reads a match` });
  }
  return notes;
}

/** The `spec` of a raw resource of `kind` (as written, unvalidated), or null. */
function specOf(obj: unknown, kind: 'ModelRoute' | 'ModelServer'): Record<string, unknown> | null {
  return isPlainObject(obj) && obj.kind === kind && isPlainObject(obj.spec) ? obj.spec : null;
}

/** The kinds a string match sets (exact, prefix, regex: the order the route API reads them in). */
function matchKindsSet(match: Record<string, unknown>): (typeof MATCH_KINDS)[number][] {
  return MATCH_KINDS.filter((k) => match[k] !== undefined && match[k] !== null);
}

/** A ModelServer's spec.trafficPolicy.retry.attempts as written, when it is a number. */
function retryAttempts(obj: unknown): number | null {
  const policy = specOf(obj, 'ModelServer')?.trafficPolicy;
  const retry = isPlainObject(policy) ? policy.retry : undefined;
  return isPlainObject(retry) && typeof retry.attempts === 'number' ? retry.attempts : null;
}

/** What a string match that sets none of exact, prefix, regex is told. */
const MATCHES_ANY = 'sets none of exact, prefix, regex: it matches any value (an absent header too), as the route API reads it';

/** A ModelRoute's string matches (spec.rules[].modelMatch: each header's, the uri's), as written, with their paths. */
function routeStringMatches(obj: unknown): { path: string; value: unknown }[] {
  const rules = specOf(obj, 'ModelRoute')?.rules;
  if (!Array.isArray(rules)) return [];
  const out: { path: string; value: unknown }[] = [];
  rules.forEach((rule: unknown, i: number) => {
    const match = isPlainObject(rule) ? rule.modelMatch : undefined;
    if (!isPlainObject(match)) return;
    const path = `spec.rules[${i}].modelMatch`;
    if (isPlainObject(match.headers)) for (const [name, m] of Object.entries(match.headers)) out.push({ path: child(`${path}.headers`, name), value: m });
    if (match.uri !== undefined && match.uri !== null) out.push({ path: `${path}.uri`, value: match.uri });
  });
  return out;
}

/** What slowRegexes() reports, after the pattern; then the nested repetition. */
export const NESTED_REPETITION = 'repeats a part that repeats itself, which a crafted value can make take seconds to match '
  + '(regexes run on a backtracking engine here, not RE2): rewrite it without the nesting:';

/** A ModelRoute's regex matches (spec.rules[].modelMatch: headers, uri) with a nested repetition (route-regex.ts nestedRepetition). */
function slowRegexes(obj: unknown): { path: string; pattern: string; nested: string }[] {
  const out: { path: string; pattern: string; nested: string }[] = [];
  for (const { path, value: m } of routeStringMatches(obj)) {
    // Only a regex that is read (exact and prefix are read before it).
    if (!isPlainObject(m) || typeof m.regex !== 'string' || matchKindsSet(m)[0] !== 'regex') continue;
    const nested = nestedRepetition(m.regex);
    if (nested !== null) out.push({ path: `${path}.regex`, pattern: m.regex, nested });
  }
  return out;
}

/** What otherProtocol() reports, after the value. */
export const PLAIN_HTTP_ONLY = 'is not read: the router speaks plain HTTP to the pods, so a pod that takes only TLS at this port '
  + 'fails every request; give the port where the pods speak plain HTTP';

/**
 * A ModelServer's `spec.workloadPort.protocol` when it is set to anything but `http` (the route API
 * allows `https`), else null: this router has no TLS to the pods.
 */
function otherProtocol(obj: unknown): unknown {
  const port = specOf(obj, 'ModelServer')?.workloadPort;
  if (!isPlainObject(port)) return null;
  const protocol = port.protocol;
  return protocol === undefined || protocol === null || protocol === 'http' ? null : protocol;
}

/** An unknown field, and the known one beside it that it likely misspells (nearName), if any. */
interface UnknownField { path: string; near: string | null }

function unknownFieldList(obj: unknown): UnknownField[] {
  const kind = isPlainObject(obj) ? obj.kind : undefined;
  if (kind !== 'ModelRoute' && kind !== 'ModelServer') return [];
  const out: UnknownField[] = [];
  walkFields(obj, kind === 'ModelRoute' ? ROUTE_FIELDS : SERVER_FIELDS, '', out);
  return out;
}

function walkFields(v: unknown, tree: FieldTree, path: string, out: UnknownField[]): void {
  if (tree === true) return;
  const items = tree['[]'];
  if (items !== undefined) {
    if (Array.isArray(v)) v.forEach((item, i) => walkFields(item, items, `${path}[${i}]`, out));
    return;
  }
  if (!isPlainObject(v)) return;
  const each = tree['*'];
  for (const key of Object.keys(v)) {
    const sub = each ?? tree[key];
    if (sub !== undefined) walkFields(v[key], sub, child(path, key), out);
    else out.push({ path: child(path, key), near: nearName(key, Object.keys(tree).filter((k) => !(k in v))) });
  }
}

/** What unknownFields() reports for each path. */
export const UNKNOWN_FIELD = 'unknown field, ignored: neither the route API nor this router has it';

/** What globalWithoutRedis() reports. */
export const GLOBAL_WITHOUT_REDIS = 'has no redis.address, so this limit is local: counted in each router instance, '
  + 'N instances allow N× the limit (as in the route API); set global.redis.address for one budget across instances';

/**
 * The path of a valid ModelRoute's `spec.rateLimit.global` when it is there (empty or null too) but
 * names no Redis (the route API allows it, and it means a local limit), else null: what reads as a
 * shared budget is not one.
 */
export function globalWithoutRedis(obj: unknown): string | null {
  const limit = specOf(obj, 'ModelRoute')?.rateLimit;
  // `global:` with nothing under it (its `redis` lines commented out) is null: present, and local.
  if (!isPlainObject(limit) || limit.global === undefined) return null;
  const redis = isPlainObject(limit.global) ? limit.global.redis : undefined;
  return redis === undefined || redis === null ? 'spec.rateLimit.global' : null;
}

/** namespace/name of a resource's metadata as given, before it is validated (namespace `default` when absent or empty). */
export function rawKey(meta: { name?: unknown; namespace?: unknown } | undefined): string {
  const ns = typeof meta?.namespace === 'string' && meta.namespace !== '' ? meta.namespace : 'default';
  return `${ns}/${String(meta?.name ?? '')}`;
}

const KINDS = ['ModelRoute', 'ModelServer'] as const;

/**
 * A document of another API's kind (`apps/v1` Deployment, a Gateway API `HTTPRoute`, a `v1`
 * Service), as bundles of the route API's examples hold beside its resources: described
 * (`Deployment default/llm (apps/v1)`), to be left out with a line rather than refuse the file;
 * null for anything else. A kind of the router's own API group, or a near miss of ModelRoute or
 * ModelServer in any group, is not another API's: it is read, and refused when wrong.
 */
export function otherApiKind(obj: unknown, apiGroup: string): string | null {
  if (!isPlainObject(obj)) return null;
  const { kind, apiVersion } = obj;
  if (typeof kind !== 'string' || kind === '' || typeof apiVersion !== 'string' || apiVersion === '') return null;
  const slash = apiVersion.indexOf('/');
  const group = slash < 0 ? '' : apiVersion.slice(0, slash);
  if (group === apiGroup || (KINDS as readonly string[]).includes(kind) || nearName(kind, KINDS) !== null || kind.endsWith('List')) return null;
  const meta = isPlainObject(obj.metadata) ? obj.metadata : {};
  const name = typeof meta.name === 'string' && meta.name !== '' ? ` ${typeof meta.namespace === 'string' && meta.namespace !== '' ? `${meta.namespace}/` : ''}${meta.name}` : '';
  return `${kind}${name} (${apiVersion})`;
}

/** What the route API's third kind is refused with: this router has no external providers. */
const EXTERNAL_PROVIDER_UNSUPPORTED = 'external model providers are not supported: the router forwards to the pods of ModelServers only; '
  + 'expected ModelRoute or ModelServer';

/**
 * What to do about an apiVersion of another group or version: resources of the same API under
 * another group (kthena's, a fork's) are read with ROUTER_API_GROUP; another version is not read.
 */
function apiVersionHint(got: string, group: string): string {
  const slash = got.lastIndexOf('/');
  const gotGroup = slash === -1 ? '' : got.slice(0, slash);
  const gotVersion = got.slice(slash + 1);
  if (gotVersion === API_VERSION && gotGroup !== group && gotGroup !== '') {
    return `; the router reads the API group ROUTER_API_GROUP names (${group}): set ROUTER_API_GROUP=${gotGroup} to read resources of this one`;
  }
  if (gotGroup === group) return `; the router reads version ${API_VERSION} of ${group} only`;
  return '';
}

/**
 * What resources are read with besides their own text: the API group they must be of
 * (ROUTER_API_GROUP), REDIS_CLUSTER, which decides the Redis addresses a global limit may name, and
 * ROUTER_GATEWAY, which decides the ModelRoutes served (gateway-binding.ts; not a validation: a
 * route of another Gateway is valid, and left out).
 */
export interface ResourceRules {
  readonly apiGroup: string;
  readonly redisCluster: boolean;
  /** `<namespace>/<name>` of the Gateway served; null or absent: every route. */
  readonly gateway?: string | null;
}

/** Validates one resource object. `where` prefixes messages, e.g. `routes.yaml: document 2` or `kubernetes`. */
export function validateResource(obj: unknown, where: string, opts: ResourceRules): ModelRoute | ModelServer {
  const c: Checker = new Checker(where);
  const top = c.object(obj, '');
  const kind = top.kind;
  if (kind !== 'ModelRoute' && kind !== 'ModelServer') {
    if (typeof kind !== 'string' || kind === '') c.expected('kind', 'ModelRoute or ModelServer', kind);
    const near = nearName(kind, KINDS);
    c.fail('kind', `unsupported kind ${JSON.stringify(kind)} (apiVersion ${quoted(top.apiVersion)}); `
      + (near !== null ? `did you mean ${near}?` : kind === 'ExternalModelProvider' ? EXTERNAL_PROVIDER_UNSUPPORTED : 'expected ModelRoute or ModelServer'));
  }
  c.resource = kind;
  const meta = c.object(top.metadata, 'metadata');
  if (typeof meta.name === 'string' && meta.name !== '') c.resource = `${kind} ${rawKey(meta)}`;
  const apiVersion = `${opts.apiGroup}/${API_VERSION}`;
  if (top.apiVersion !== apiVersion) {
    if (typeof top.apiVersion !== 'string' || top.apiVersion === '') c.expected('apiVersion', JSON.stringify(apiVersion), top.apiVersion);
    c.fail('apiVersion', `expected ${JSON.stringify(apiVersion)}, got ${JSON.stringify(top.apiVersion)}${apiVersionHint(top.apiVersion, opts.apiGroup)}`);
  }

  const name = c.string(meta.name, 'metadata.name');
  if (name.length > 253 || !DNS_SUBDOMAIN.test(name)) {
    c.fail('metadata.name', `must be a DNS subdomain name (lower-case letters, digits, '-' and '.', at most 253 characters), got ${describe(name)}`);
  }
  let namespace = 'default';
  if (meta.namespace !== undefined && meta.namespace !== null && meta.namespace !== '') {
    namespace = c.string(meta.namespace, 'metadata.namespace');
    if (namespace.length > 63 || !DNS_LABEL.test(namespace)) {
      c.fail('metadata.namespace', `must be a DNS label (lower-case letters, digits and '-', at most 63 characters), got ${describe(namespace)}`);
    }
  }
  const creationTimestamp = timestamp(c, meta.creationTimestamp);
  const id = { namespace, name, key: `${namespace}/${name}` };
  return kind === 'ModelRoute'
    ? modelRoute(c, id, creationTimestamp, top.spec, opts.redisCluster)
    : modelServer(c, id, top.spec);
}

function timestamp(c: Checker, v: unknown): string | null {
  if (v === undefined || v === null) return null;
  if (v instanceof Date && !Number.isNaN(v.getTime())) return v.toISOString().replace('.000Z', 'Z');
  if (typeof v === 'string' && !Number.isNaN(Date.parse(v))) return v;
  c.expected('metadata.creationTimestamp', 'an RFC 3339 timestamp', v);
}

interface Identity { namespace: string; name: string; key: string }

function modelRoute(c: Checker, id: Identity, creationTimestamp: string | null, specValue: unknown, redisCluster: boolean): ModelRoute {
  const spec = c.object(specValue, 'spec');
  const loraAdapters = loraAdapterList(c, spec.loraAdapters, 'spec.loraAdapters');
  // As in the route API, modelName may be left out (or empty) when loraAdapters names adapters.
  const noModelName = spec.modelName === undefined || spec.modelName === null || spec.modelName === '';
  if (noModelName && loraAdapters.length === 0) {
    c.fail('spec.modelName', 'is required unless spec.loraAdapters lists adapters: expected a non-empty string');
  }
  const modelName = noModelName ? null : c.string(spec.modelName, 'spec.modelName');
  // An empty list is allowed, as in the route API (told in resourceNotes): the route serves nothing.
  if (!Array.isArray(spec.rules)) c.expected('spec.rules', 'a list of rules', spec.rules);
  const rules = spec.rules.map((r, i) => rule(c, r, `spec.rules[${i}]`));
  const rateLimit = rateLimitSpec(c, spec.rateLimit, 'spec.rateLimit', redisCluster);
  const parentRefs = parseParentRefs(spec.parentRefs, 'spec.parentRefs', id.namespace, (p, problem) => c.fail(p, problem));
  return { kind: 'ModelRoute', ...id, modelName, loraAdapters, rules, rateLimit, parentRefs, creationTimestamp };
}

function loraAdapterList(c: Checker, v: unknown, path: string): string[] {
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v)) c.expected(path, 'a list of adapter names', v);
  return v.map((name, i) => c.string(name, `${path}[${i}]`));
}

function rule(c: Checker, v: unknown, path: string): Rule {
  const obj = c.object(v, path);
  // Optional in the route API (an empty name counts as none there); unnamed rules are named by
  // position for logs and errors.
  const unnamed = obj.name === undefined || obj.name === null || obj.name === '';
  const name = unnamed ? `rule-${path.slice(path.lastIndexOf('[') + 1, -1)}` : c.string(obj.name, `${path}.name`);
  const modelMatch = ruleMatch(c, obj.modelMatch, `${path}.modelMatch`);
  const targetModels = c.list(obj.targetModels, `${path}.targetModels`)
    .map((t, i) => targetModel(c, t, `${path}.targetModels[${i}]`));
  return { name, modelMatch, targetModels };
}

/** null when there is no condition at all (matches every request). */
function ruleMatch(c: Checker, v: unknown, path: string): RuleMatch | null {
  const obj = c.optObject(v, path);
  if (obj === null) return null;
  const headers: Record<string, StringMatch> = {};
  const headersObj = c.optObject(obj.headers, `${path}.headers`);
  if (headersObj !== null) {
    for (const rawName of Object.keys(headersObj)) {
      const headerPath = child(`${path}.headers`, rawName);
      const lower = rawName.toLowerCase();
      if (!HEADER_NAME.test(lower)) c.fail(headerPath, `invalid header name ${JSON.stringify(rawName)}`);
      if (lower in headers) c.fail(headerPath, `header ${JSON.stringify(lower)} is listed twice (header names are case-insensitive)`);
      headers[lower] = stringMatch(c, headersObj[rawName], headerPath);
    }
  }
  const uri = obj.uri === undefined || obj.uri === null ? null : stringMatch(c, obj.uri, `${path}.uri`);
  const body = c.optObject(obj.body, `${path}.body`);
  const model = body === null ? null : c.optString(body.model, `${path}.body.model`);
  if (uri === null && model === null && Object.keys(headers).length === 0) return null;
  return { headers, uri, model };
}

function stringMatch(c: Checker, v: unknown, path: string): StringMatch {
  const obj = c.object(v, path);
  // As the route API reads a match (told in resourceNotes): none set matches any value; of several,
  // exact is read first, then prefix, then regex.
  const present = matchKindsSet(obj);
  if (present.length === 0) {
    // Other fields and none of the three: a misspelling (`exatc`), not a match of anything.
    if (Object.keys(obj).length > 0) c.fail(path, 'must set one of exact, prefix, regex; got none');
    return { kind: 'prefix', value: '' };
  }
  const kind = present[0];
  const value = obj[kind];
  if (typeof value !== 'string') c.expected(`${path}.${kind}`, 'a string', value);
  if (kind === 'regex') {
    try {
      routeRegex(value);
    } catch (err) {
      c.fail(`${path}.regex`, `invalid regular expression ${JSON.stringify(value)}: ${(err as Error).message}`);
    }
  }
  return { kind, value };
}

function targetModel(c: Checker, v: unknown, path: string): TargetModel {
  const obj = c.object(v, path);
  if (obj.modelServerName === undefined && obj.externalModelProviderName !== undefined) {
    // The route API can also send a target to an external model provider; this router forwards to pods only.
    c.fail(`${path}.externalModelProviderName`, 'targets of external model providers are not supported: name a ModelServer in modelServerName');
  }
  const modelServerName = c.string(obj.modelServerName, `${path}.modelServerName`);
  const weight = c.optInt(obj.weight, `${path}.weight`, 0, 100) ?? 100;
  return { modelServerName, weight };
}

function rateLimitSpec(c: Checker, v: unknown, path: string, redisCluster: boolean): RateLimitSpec | null {
  return parseRateLimit(v, path, (p, problem) => c.fail(p, problem), redisCluster, true);
}

function modelServer(c: Checker, id: Identity, specValue: unknown): ModelServer {
  const spec = c.optObject(specValue, 'spec') ?? {};
  const model = c.optString(spec.model, 'spec.model');
  const inferenceEngine = c.optString(spec.inferenceEngine, 'spec.inferenceEngine');
  let workloadSelector: ModelServer['workloadSelector'] = null;
  const selector = c.optObject(spec.workloadSelector, 'spec.workloadSelector');
  if (selector !== null) {
    const labels = selector.matchLabels;
    const matchLabels = labels === undefined || labels === null ? {} : c.stringMap(labels, 'spec.workloadSelector.matchLabels');
    workloadSelector = { matchLabels };
  }
  const pd = selector === null ? null : pdSpec(c, selector.pdGroup, spec.kvConnector, inferenceEngine);
  const port = c.optObject(spec.workloadPort, 'spec.workloadPort');
  const workloadPort = port === null ? null : c.optInt(port.port, 'spec.workloadPort.port', 1, 65535);
  const policy = c.optObject(spec.trafficPolicy, 'spec.trafficPolicy');
  const timeoutMs = policy === null ? null : timeout(c, policy.timeout, 'spec.trafficPolicy.timeout');
  const retry = policy === null ? null : retryPolicy(c, policy.retry, 'spec.trafficPolicy.retry');
  const endpoints = endpointList(c, spec.endpoints, 'spec.endpoints', pd);
  const server: ModelServer = { kind: 'ModelServer', ...id, model, inferenceEngine, workloadSelector, workloadPort, timeoutMs, retry, endpoints };
  // Only on a pdGroup server: the others' snapshots stay as they were.
  if (pd !== null) server.pd = pd;
  return server;
}

/** spec.workloadSelector.pdGroup with spec.kvConnector, or null when there is no pdGroup (kvConnector is then not read). */
function pdSpec(c: Checker, v: unknown, connectorValue: unknown, inferenceEngine: string | null): PdSpec | null {
  const path = 'spec.workloadSelector.pdGroup';
  const obj = c.optObject(v, path);
  if (obj === null) return null;
  const groupKey = c.string(obj.groupKey, `${path}.groupKey`);
  const prefillLabels = roleLabels(c, obj.prefillLabels, `${path}.prefillLabels`);
  const decodeLabels = roleLabels(c, obj.decodeLabels, `${path}.decodeLabels`);
  const kv = c.optObject(connectorValue, 'spec.kvConnector');
  const type = kv === null ? null : c.optString(kv.type, 'spec.kvConnector.type');
  let connector: PdSpec['connector'] = 'http';
  if (type !== null) {
    if (!(KV_CONNECTOR_TYPES as readonly string[]).includes(type)) {
      c.fail('spec.kvConnector.type', `expected one of ${KV_CONNECTOR_TYPES.join(', ')}, got ${JSON.stringify(type)}`);
    }
    connector = type as KvConnectorType;
  } else if (inferenceEngine === 'SGLang') {
    // As the route API's router: SGLang's bootstrap handoff is chosen by the engine, not named in kvConnector.
    connector = 'sglang';
  }
  return { groupKey, prefillLabels, decodeLabels, connector };
}

/** prefillLabels / decodeLabels: a non-empty map (an empty one would give every pod the role). */
function roleLabels(c: Checker, v: unknown, path: string): Record<string, string> {
  const labels = c.stringMap(v, path);
  if (Object.keys(labels).length === 0) c.fail(path, 'must not be empty: it tells the pods of this role from the others');
  return labels;
}

/** A pod's role in `pd` by its labels: decode first (as the route API's router), else prefill, else null. */
export function pdRole(labels: Readonly<Record<string, string>> | undefined, pd: PdSpec): 'prefill' | 'decode' | null {
  if (labels === undefined || labels[pd.groupKey] === undefined) return null;
  if (labelsMatch(labels, pd.decodeLabels)) return 'decode';
  if (labelsMatch(labels, pd.prefillLabels)) return 'prefill';
  return null;
}

function labelsMatch(labels: Readonly<Record<string, string>>, want: Readonly<Record<string, string>>): boolean {
  for (const key in want) if (labels[key] !== want[key]) return false;
  return true;
}

/** Most retries per request: each one is another pod doing the work again. */
export const MAX_RETRY_ATTEMPTS = 10;
const MAX_RETRY_INTERVAL_MS = 60_000;
/** The route API's attempts are an int32. */
const INT32_MAX = 2_147_483_647;

function retryPolicy(c: Checker, v: unknown, path: string): RetryPolicy | null {
  const obj = c.optObject(v, path);
  if (obj === null) return null;
  // Optional in the route API, whose reading of a missing count is its zero value: no retry.
  // More than the most is taken as the most (told in resourceNotes): the route API sets no bound.
  const attempts = Math.min(MAX_RETRY_ATTEMPTS, c.optInt(obj.attempts, `${path}.attempts`, 0, INT32_MAX) ?? 0);
  let intervalMs = 0;
  const interval = obj.retryInterval;
  if (interval !== undefined && interval !== null) {
    if (typeof interval !== 'string') c.expected(`${path}.retryInterval`, 'a duration string such as "100ms"', interval);
    try {
      intervalMs = parseDuration(interval);
    } catch (err) {
      c.fail(`${path}.retryInterval`, (err as Error).message);
    }
    if (intervalMs > MAX_RETRY_INTERVAL_MS) c.fail(`${path}.retryInterval`, `must be at most 1m, got ${describe(interval)}`);
  }
  return { attempts, intervalMs };
}

function timeout(c: Checker, v: unknown, path: string): number | null {
  if (v === undefined || v === null) return null;
  if (typeof v !== 'string') c.expected(path, 'a duration string such as "30s" or "1m30s"', v);
  let ms: number;
  try {
    ms = parseDuration(v);
  } catch (err) {
    c.fail(path, (err as Error).message);
  }
  // The route API reads a zero timeout as none set ("by default, there is no timeout"): here too,
  // so ROUTER_UPSTREAM_TIMEOUT applies, rather than the ModelServer being refused.
  if (ms === 0) return null;
  return ms;
}

function endpointList(c: Checker, v: unknown, path: string, pd: PdSpec | null): Endpoint[] | null {
  if (v === undefined || v === null) return null;
  if (!Array.isArray(v)) c.expected(path, 'a list of {name, address}', v);
  const seen = new Set<string>();
  return v.map((item, i) => {
    const itemPath = `${path}[${i}]`;
    const obj = c.object(item, itemPath);
    const name = c.string(obj.name, `${itemPath}.name`);
    if (seen.has(name)) c.fail(`${itemPath}.name`, `duplicate endpoint name ${JSON.stringify(name)}`);
    seen.add(name);
    const address = c.string(obj.address, `${itemPath}.address`);
    const hp = parseHostPort(address);
    if (typeof hp === 'string') c.fail(`${itemPath}.address`, `${hp}, got ${describe(address)}`);
    const labels = obj.labels === undefined || obj.labels === null ? undefined : c.stringMap(obj.labels, `${itemPath}.labels`);
    if (pd === null) return { name, host: hp.host, port: hp.port };
    // A pod of a pdGroup server serves in one role of one group: said by its labels.
    if (pdRole(labels, pd) === null) {
      c.fail(`${itemPath}.labels`, `must carry the label ${JSON.stringify(pd.groupKey)} (spec.workloadSelector.pdGroup.groupKey) and those of `
        + `prefillLabels ${describeLabels(pd.prefillLabels)} or decodeLabels ${describeLabels(pd.decodeLabels)}, got ${labels === undefined ? 'none' : describeLabels(labels)}`);
    }
    return { name, host: hp.host, port: hp.port, labels };
  });
}

function describeLabels(labels: Readonly<Record<string, string>>): string {
  return `{${Object.entries(labels).map(([k, v]) => `${k}: ${v}`).join(', ')}}`;
}
