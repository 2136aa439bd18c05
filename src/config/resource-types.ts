/**
 * Validated, normalized resources. Produced by config/resources.ts from YAML (file source)
 * or from Kubernetes objects (kubernetes source); plain data, so it crosses IPC as JSON.
 */
/** The version of the ModelRoute/ModelServer resources: apiVersion is `<apiGroup>/v1alpha1`. */
export const API_VERSION = 'v1alpha1';

export type WindowUnit = 'second' | 'minute' | 'hour' | 'day' | 'month';
/** Every WindowUnit, in increasing length. */
export const WINDOW_UNITS: readonly WindowUnit[] = ['second', 'minute', 'hour', 'day', 'month'];

export interface StringMatch {
  kind: 'exact' | 'prefix' | 'regex';
  value: string;
}

export interface RuleMatch {
  /** Header name (lower-case) -> match. Empty object = no header condition. */
  headers: Record<string, StringMatch>;
  /** Match on the request path (without query), or null. */
  uri: StringMatch | null;
  /** modelMatch.body.model: the request's `model` must be exactly this, or null. */
  model: string | null;
}

export interface TargetModel {
  modelServerName: string;
  /** 0..100, relative; default 100. */
  weight: number;
}

export interface Rule {
  name: string;
  /** null = matches every request. */
  modelMatch: RuleMatch | null;
  targetModels: TargetModel[];
}

export interface RateLimitSpec {
  /** null = no input limit. Positive integer otherwise. */
  inputTokensPerUnit: number | null;
  /** null = no output limit. Positive integer otherwise. */
  outputTokensPerUnit: number | null;
  unit: WindowUnit;
  /** null = local mode. */
  global: { redis: { address: string } } | null;
  /** `shadow`: counts and decides as usual, but never rejects (default `enforce`). */
  mode: RateLimitMode;
}

export type RateLimitMode = 'enforce' | 'shadow';

export interface ModelRoute {
  kind: 'ModelRoute';
  namespace: string;
  name: string;
  /** `${namespace}/${name}` */
  key: string;
  /**
   * spec.modelName: the `model` clients send, or null when the route serves only LoRA adapters
   * (the route API allows an empty modelName when loraAdapters is set).
   */
  modelName: string | null;
  /** spec.loraAdapters: more `model` names the route serves; the request's model is kept upstream. */
  loraAdapters: string[];
  rules: Rule[];
  rateLimit: RateLimitSpec | null;
  /**
   * spec.parentRefs: what the route is bound to (gateway-binding.ts). Read for routing only when
   * ROUTER_GATEWAY names a Gateway; named when two routes claim one model name.
   */
  parentRefs: ParentRef[];
  /** RFC 3339 creationTimestamp when known (Kubernetes), else null. */
  creationTimestamp: string | null;
}

/** One entry of a ModelRoute's spec.parentRefs (a Gateway API ParentReference). */
export interface ParentRef {
  /** `group` as given ('' is the core group), or null when left out (the Gateway API's gateway.networking.k8s.io). */
  group: string | null;
  /** `kind` as given, or null when left out (the Gateway API's Gateway). */
  kind: string | null;
  /** `namespace`, the route's own when left out (as in the Gateway API). */
  namespace: string;
  name: string;
  /** `sectionName` (a listener of the Gateway), or null. Shown, not read (gateway-binding.ts). */
  sectionName: string | null;
}

export interface Endpoint {
  /** Pod name as it appears in logs (selected_pod). */
  name: string;
  host: string;
  port: number;
  /**
   * The pod's labels that a ModelServer's pdGroup reads (its groupKey, prefillLabels and
   * decodeLabels): spec.endpoints[].labels from a file, the pod's own from Kubernetes. Absent for
   * the pods of a server without pdGroup.
   */
  labels?: Record<string, string>;
}

/** spec.kvConnector.type: how a prefill pod hands its KV cache to a decode pod (route API values). */
export type KvConnectorType = 'http' | 'lmcache' | 'nixl' | 'mooncake';
export const KV_CONNECTOR_TYPES: readonly KvConnectorType[] = ['http', 'lmcache', 'nixl', 'mooncake'];

/** spec.workloadSelector.pdGroup with spec.kvConnector: prefill/decode disaggregation. */
export interface PdSpec {
  /** The label whose value groups pods: a prefill pod serves with decode pods of the same value only. */
  groupKey: string;
  prefillLabels: Record<string, string>;
  decodeLabels: Record<string, string>;
  /**
   * spec.kvConnector.type; when not set, `sglang` for `inferenceEngine: SGLang` (SGLang's own
   * bootstrap handoff, which only the engine selects, as in the route API's router), else `http`.
   */
  connector: KvConnectorType | 'sglang';
}

export interface ModelServer {
  kind: 'ModelServer';
  namespace: string;
  name: string;
  /** `${namespace}/${name}` */
  key: string;
  /** When set, the upstream request's `model` is rewritten to it. */
  model: string | null;
  inferenceEngine: string | null;
  workloadSelector: { matchLabels: Record<string, string> } | null;
  workloadPort: number | null;
  /** trafficPolicy.timeout in ms, or null (use ROUTER_UPSTREAM_TIMEOUT). */
  timeoutMs: number | null;
  /** trafficPolicy.retry, or null (connect failures only, on up to two more pods). */
  retry: RetryPolicy | null;
  /** spec.endpoints (standalone), or null (Kubernetes: resolved from pods). */
  endpoints: Endpoint[] | null;
  /** Prefill/decode disaggregation (spec.workloadSelector.pdGroup), or null/absent: each request to one pod. */
  pd?: PdSpec | null;
}

/** ModelServer.spec.trafficPolicy.retry. */
export interface RetryPolicy {
  /** More pods tried after the first attempt failed before any byte reached the client. */
  attempts: number;
  /** retryInterval in ms: the wait before each retry (0 = at once). */
  intervalMs: number;
}

/** A consistent set of resources; what the primary sends to workers (with endpoints resolved). */
export interface ResourceSnapshot {
  /** Increases with every applied change. */
  version: number;
  routes: ModelRoute[];
  /** endpoints always resolved here (never null): [] when none is ready. */
  servers: (ModelServer & { endpoints: Endpoint[] })[];
  /** When the primary made it (epoch ms): the `created` of the served models, the same in every worker. */
  createdAt?: number;
}
