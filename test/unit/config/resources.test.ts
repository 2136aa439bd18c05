import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { GLOBAL_WITHOUT_REDIS, NESTED_REPETITION, PLAIN_HTTP_ONLY, ResourceError, UNKNOWN_FIELD, validateResource } from '../../../src/config/resources.js';
import { findMissingReferences, parseResourceFile } from '../../../src/config/resource-file.js';
import { GATEWAY_ROUTES } from '../../helpers/route-api-manifests.js';
import { parseHostPort, redisAddressProblem } from '../../../src/config/addresses.js';
import type { ModelRoute, ModelServer } from '../../../src/config/resource-types.js';

const opts = { apiGroup: 'networking.serving.volcano.sh', redisCluster: false };
const API = 'networking.serving.volcano.sh/v1alpha1';

const CANONICAL = `apiVersion: networking.serving.volcano.sh/v1alpha1
kind: ModelRoute
metadata:
  name: deepseek-r1
  namespace: default
spec:
  modelName: "deepseek-r1"
  rules:
  - name: "default"
    targetModels:
    - modelServerName: "deepseek-r1-1-5b"
  rateLimit:
    inputTokensPerUnit: 10
    outputTokensPerUnit: 5000
    unit: minute
    global:
      redis:
        address: redis-server.kthena-system.svc.cluster.local:6379
---
apiVersion: networking.serving.volcano.sh/v1alpha1
kind: ModelServer
metadata:
  name: deepseek-r1-1-5b
  namespace: default
spec:
  workloadSelector:
    matchLabels:
      app: deepseek-r1-1-5b
  workloadPort:
    port: 8000
  model: "deepseek-ai/DeepSeek-R1-Distill-Qwen-1.5B"
  inferenceEngine: "vLLM"
  trafficPolicy:
    timeout: 10s
`;

const SERVER = `apiVersion: ${API}
kind: ModelServer
metadata:
  name: sf-server
spec:
  endpoints:
  - name: pod-a
    address: 127.0.0.1:18001
`;

/** A route document (namespace default unless given) with the given spec lines appended. */
function route(name: string, specYaml: string, namespace?: string): string {
  return `apiVersion: ${API}
kind: ModelRoute
metadata:
  name: ${name}
${namespace ? `  namespace: ${namespace}\n` : ''}spec:
${specYaml}`;
}

const SIMPLE_SPEC = `  modelName: sf-model
  rules:
  - name: default
    targetModels:
    - modelServerName: sf-server
`;

function parse(text: string, file = 'routes.yaml') {
  return parseResourceFile(text, file, opts);
}

/** The ResourceError thrown by fn (fails the test when nothing or something else is thrown). */
function errorOf(fn: () => unknown): ResourceError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(ResourceError);
    return err as ResourceError;
  }
  throw new Error('expected a ResourceError, nothing was thrown');
}

/** Parses `SERVER --- <doc>` and returns the error message for the route in document 2. */
function routeError(specYaml: string): string {
  return errorOf(() => parse(`${SERVER}---\n${route('sf-route', specYaml)}`)).message;
}

function serverError(specYaml: string): string {
  return errorOf(() => parse(`apiVersion: ${API}\nkind: ModelServer\nmetadata:\n  name: s1\nspec:\n${specYaml}`, 'servers.yaml')).message;
}

describe('parseResourceFile: valid input', () => {
  it('parses the canonical example from the route API docs', () => {
    const { routes, servers, warnings } = parse(CANONICAL);
    // Its server selects pods by label, which a file cannot resolve: loaded, with a warning.
    expect(warnings).toEqual([expect.stringMatching(/^routes\.yaml: document \d+ \(ModelServer default\/deepseek-r1-1-5b\): spec\.endpoints: not set: /)]);
    expect(routes).toEqual<ModelRoute[]>([{
      kind: 'ModelRoute',
      namespace: 'default',
      name: 'deepseek-r1',
      key: 'default/deepseek-r1',
      modelName: 'deepseek-r1',
      loraAdapters: [],
      rules: [{ name: 'default', modelMatch: null, targetModels: [{ modelServerName: 'deepseek-r1-1-5b', weight: 100 }] }],
      rateLimit: {
        inputTokensPerUnit: 10,
        outputTokensPerUnit: 5000,
        unit: 'minute',
        global: { redis: { address: 'redis-server.kthena-system.svc.cluster.local:6379' } },
        mode: 'enforce',
      },
      parentRefs: [],
      creationTimestamp: null,
    }]);
    expect(servers).toEqual<ModelServer[]>([{
      kind: 'ModelServer',
      namespace: 'default',
      name: 'deepseek-r1-1-5b',
      key: 'default/deepseek-r1-1-5b',
      model: 'deepseek-ai/DeepSeek-R1-Distill-Qwen-1.5B',
      inferenceEngine: 'vLLM',
      workloadSelector: { matchLabels: { app: 'deepseek-r1-1-5b' } },
      workloadPort: 8000,
      timeoutMs: 10_000,
      retry: null,
      endpoints: null,
    }]);
  });

  it('parses examples/prefill-decode.yaml: two groups of a prefill and a decode pod, NIXL', () => {
    const text = readFileSync(new URL('../../../examples/prefill-decode.yaml', import.meta.url), 'utf8');
    const { servers, routes, warnings } = parseResourceFile(text, 'prefill-decode.yaml', opts);
    expect(warnings).toEqual([]);
    expect(routes.map((r) => r.key)).toEqual(['dev/deepseek-v2']);
    expect(servers[0].pd).toMatchObject({ groupKey: 'modelserving.volcano.sh/group-name', connector: 'nixl' });
    expect(servers[0].endpoints!.map((e) => e.labels?.['modelserving.volcano.sh/role'])).toEqual(['prefill', 'decode', 'prefill', 'decode']);
  });

  it('parses examples/resources.yaml', () => {
    const text = readFileSync(new URL('../../../examples/resources.yaml', import.meta.url), 'utf8');
    const { routes, servers, warnings } = parseResourceFile(text, 'resources.yaml', opts);
    expect(warnings).toEqual([]);
    expect(servers).toHaveLength(1);
    expect(servers[0]).toMatchObject({
      key: 'default/sf-server',
      model: 'sf-model-v1',
      timeoutMs: 30_000,
      endpoints: [
        { name: 'sf-pod-a', host: '127.0.0.1', port: 18001 },
        { name: 'sf-pod-b', host: '127.0.0.1', port: 18002 },
      ],
    });
    expect(routes.map((r) => [r.key, r.modelName, r.rateLimit])).toEqual([
      ['default/sf-route', 'sf-model', { inputTokensPerUnit: 100000, outputTokensPerUnit: 100000, unit: 'minute', global: null, mode: 'enforce' }],
      ['default/small-limit-route', 'sf-model-limited', { inputTokensPerUnit: 10, outputTokensPerUnit: 5000, unit: 'minute', global: null, mode: 'enforce' }],
    ]);
    expect(routes.every((r) => r.rules[0].targetModels[0].modelServerName === 'sf-server')).toBe(true);
  });

  it('parses several documents, skipping empty ones, in file order', () => {
    const text = `---\n# only a comment\n---\n${SERVER}---\n---\n${route('a', SIMPLE_SPEC)}---\n${route('b', SIMPLE_SPEC.replace('sf-model', 'other-model'))}`;
    const { routes, servers } = parse(text);
    expect(servers.map((s) => s.key)).toEqual(['default/sf-server']);
    expect(routes.map((r) => `${r.key}=${r.modelName}`)).toEqual(['default/a=sf-model', 'default/b=other-model']);
  });

  it('parses an empty file to nothing', () => {
    expect(parse('')).toEqual({ routes: [], servers: [], warnings: [], notServed: [], documents: 0 });
    expect(parse('# nothing here\n')).toEqual({ routes: [], servers: [], warnings: [], notServed: [], documents: 0 });
    expect(parse('kind: List\nitems: []\n')).toEqual({ routes: [], servers: [], warnings: [], notServed: [], documents: 1 });
  });

  it('applies YAML merge keys (<<: *anchor), as kubectl does', () => {
    const text = `${SERVER}---\n${route('r', `  modelName: m
  defaults: &target {modelServerName: sf-server, weight: 40}
  rules:
  - targetModels:
    - <<: *target
    - <<: *target
      weight: 60
`)}`;
    const { routes } = parse(text);
    expect(routes[0].rules[0].targetModels).toEqual([{ modelServerName: 'sf-server', weight: 40 }, { modelServerName: 'sf-server', weight: 60 }]);
  });

  it('accepts a ModelRouteList or ModelServerList (the API\'s list answer), its items taking the list\'s kind and apiVersion when they leave them out', () => {
    const text = `apiVersion: ${API}\nkind: ModelServerList\nmetadata: {resourceVersion: "7"}\nitems:\n- metadata: {name: s1}\n  spec: {endpoints: [{name: p, address: "127.0.0.1:1"}]}\n`
      + `---\napiVersion: ${API}\nkind: ModelRouteList\nitems:\n- metadata: {name: r1}\n  spec: {modelName: m, rules: [{targetModels: [{modelServerName: s1}]}]}\n`
      + `- {apiVersion: ${API}, kind: ModelRoute, metadata: {name: r2}, spec: {modelName: m2, rules: [{targetModels: [{modelServerName: s1}]}]}}\n`;
    const { routes, servers, warnings } = parse(text);
    expect(servers.map((s) => s.key)).toEqual(['default/s1']);
    expect(routes.map((r) => r.key)).toEqual(['default/r1', 'default/r2']);
    expect(warnings).toEqual([]);
    expect(errorOf(() => parse(`apiVersion: ${API}\nkind: ModelRouteList\nitems: {}\n`)).message)
      .toBe('routes.yaml: document 1 (ModelRouteList): items: expected a list of resources, got a mapping');
  });

  it('accepts kind: List with items', () => {
    const list = {
      apiVersion: 'v1',
      kind: 'List',
      items: [
        { apiVersion: API, kind: 'ModelServer', metadata: { name: 's1', namespace: 'team' }, spec: {} },
        { apiVersion: API, kind: 'ModelRoute', metadata: { name: 'r1', namespace: 'team' }, spec: { modelName: 'm', rules: [{ name: 'x', targetModels: [{ modelServerName: 's1', weight: 30 }] }] } },
      ],
    };
    const { routes, servers } = parse(JSON.stringify(list)); // JSON is YAML
    expect(servers.map((s) => s.key)).toEqual(['team/s1']);
    expect(routes[0].key).toBe('team/r1');
    expect(routes[0].rules[0].targetModels).toEqual([{ modelServerName: 's1', weight: 30 }]);
  });

  it('applies defaults: namespace default, weight 100, no match, no rate limit, null server fields', () => {
    const { routes, servers } = parse(`${SERVER}---\n${route('r', SIMPLE_SPEC)}`);
    expect(routes[0]).toMatchObject({ namespace: 'default', key: 'default/r', rateLimit: null, creationTimestamp: null });
    expect(routes[0].rules[0]).toEqual({ name: 'default', modelMatch: null, targetModels: [{ modelServerName: 'sf-server', weight: 100 }] });
    expect(servers[0]).toMatchObject({
      namespace: 'default', model: null, inferenceEngine: null, workloadSelector: null, workloadPort: null, timeoutMs: null,
    });
  });

  it('reads a zero trafficPolicy.timeout (0s, 0, 0m0s) as none set, as the route API does: ROUTER_UPSTREAM_TIMEOUT then applies', () => {
    for (const zero of ['0s', '"0"', '0m0s', '0.0s']) {
      const { servers } = parse(`apiVersion: ${API}\nkind: ModelServer\nmetadata: {name: s}\nspec:\n  endpoints: [{name: p, address: "127.0.0.1:1"}]\n  trafficPolicy: {timeout: ${zero}}\n`);
      expect(servers[0].timeoutMs, zero).toBeNull();
    }
  });

  it('reads trafficPolicy.retry (attempts, retryInterval as in the route API)', () => {
    const spec = (p: string) => `apiVersion: ${API}\nkind: ModelServer\nmetadata:\n  name: s1\nspec:\n  trafficPolicy: ${p}\n`;
    expect(parse(spec('{retry: {attempts: 3, retryInterval: 100ms}}')).servers[0].retry).toEqual({ attempts: 3, intervalMs: 100 });
    expect(parse(spec('{retry: {attempts: 0}}')).servers[0].retry).toEqual({ attempts: 0, intervalMs: 0 });
    // attempts is optional in the route API (whose CRD defaults only retryInterval): left out, it is 0.
    expect(parse(spec('{retry: {retryInterval: 100ms}}')).servers[0].retry).toEqual({ attempts: 0, intervalMs: 100 });
    expect(parse(spec('{retry: {}}')).servers[0].retry).toEqual({ attempts: 0, intervalMs: 0 });
    expect(parse(spec('{timeout: 5s}')).servers[0].retry).toBeNull();
  });

  it('accepts a ModelServer with neither endpoints nor workloadSelector, and without spec', () => {
    const { servers } = parse(`apiVersion: ${API}\nkind: ModelServer\nmetadata:\n  name: lonely\n`);
    expect(servers[0]).toMatchObject({ key: 'default/lonely', endpoints: null, workloadSelector: null });
  });

  it('normalizes header and uri matches, lower-casing header names', () => {
    const { routes } = parse(`${SERVER}---\n${route('r', `  modelName: m
  rules:
  - name: premium
    modelMatch:
      headers:
        X-User-Tier:
          exact: premium
        x-region:
          regex: "^eu-(west|north)$"
      uri:
        prefix: /v1/chat
    targetModels:
    - modelServerName: sf-server
      weight: 0
  - name: empty-match
    modelMatch: {}
    targetModels:
    - modelServerName: sf-server
`)}`);
    expect(routes[0].rules[0].modelMatch).toEqual({
      headers: { 'x-user-tier': { kind: 'exact', value: 'premium' }, 'x-region': { kind: 'regex', value: '^eu-(west|north)$' } },
      uri: { kind: 'prefix', value: '/v1/chat' },
      model: null,
    });
    expect(routes[0].rules[0].targetModels[0].weight).toBe(0);
    expect(routes[0].rules[1].modelMatch).toBeNull();
  });

  it('a resource refused for a missing or bad field names its unknown fields too: a misspelling is the likely cause', () => {
    const text = `apiVersion: networking.serving.volcano.sh/v1alpha1
kind: ModelRoute
metadata: {name: r}
spec:
  modelname: m
  rule:
  - targetModels: [{modelServerName: s}]
`;
    expect(() => parse(text)).toThrow('routes.yaml: document 1 (ModelRoute default/r): spec.modelName: is required unless spec.loraAdapters lists adapters: '
      + 'expected a non-empty string (misspelt? this resource also has unknown fields spec.modelname, spec.rule)');
    // Without an unknown field, the message is the problem alone.
    expect(() => parse(text.replace('modelname: m', 'modelName: m').replace('rule:', 'rules:').replace('[{modelServerName: s}]', '[{modelServerName: s, weight: 150}]')))
      .toThrow(/weight: [^()]*$/);
  });

  it('tolerates unknown fields that real manifests carry', () => {
    const text = `apiVersion: ${API}
kind: ModelServer
metadata:
  name: sf-server
  labels: {app: x}
  annotations: {note: y}
  uid: 1234-abcd
spec:
  inferenceEngine: SGLang
  workloadSelector:
    matchLabels: {app: x}
  workloadPort: {port: 8000, protocol: http}
  kvConnector: {type: nixl}
  trafficPolicy:
    timeout: 1m30s
    retry: {attempts: 3, retryInterval: 100ms}
status: {}
---
${route('r', `  modelName: m
  loraAdapters: [lora-a]
  parentRefs:
  - name: gw
  rules:
  - name: default
    modelMatch:
      body:
        model: lora-a
      headers:
        x-a: {exact: b}
    targetModels:
    - modelServerName: sf-server
  rateLimit:
    outputTokensPerUnit: 7
    unit: second
    extra: ignored
status:
  conditions: []
`)}`;
    const { routes, servers, warnings } = parse(text);
    // Every field of the route API is known; only the made-up one is reported (and ignored).
    expect(warnings.filter((w) => w.includes('unknown field'))).toEqual([`routes.yaml: document 2 (ModelRoute default/r): spec.rateLimit.extra: ${UNKNOWN_FIELD}`]);
    expect(servers[0]).toMatchObject({ timeoutMs: 90_000, workloadPort: 8000, inferenceEngine: 'SGLang' });
    expect(routes[0].rateLimit).toEqual({ inputTokensPerUnit: null, outputTokensPerUnit: 7, unit: 'second', global: null, mode: 'enforce' });
    expect(routes[0].rules[0].modelMatch).toEqual({ headers: { 'x-a': { kind: 'exact', value: 'b' } }, uri: null, model: 'lora-a' });
    expect(JSON.parse(JSON.stringify(routes[0]))).not.toHaveProperty('status');
  });

  it('warns of a field neither the route API nor the router has, naming it: a misspelt modelMatch.header would match every request', () => {
    const { routes, warnings } = parse(`${SERVER}---\n${route('r', `  modelName: m
  rules:
  - name: premium
    modelMatch:
      header:
        user-type: {exact: premium}
    targetModels:
    - {modelServerName: sf-server, wieght: 10}
`)}---\napiVersion: ${API}\nkind: List\nitems:\n- apiVersion: ${API}\n  kind: ModelServer\n  metadata: {name: s2}\n  spec: {endpoint: [], workloadPort: {port: 1, portName: x}}\n`);
    expect(routes[0].rules[0].modelMatch).toBeNull();
    expect(warnings).toEqual([
      `routes.yaml: document 2 (ModelRoute default/r): spec.rules[0].modelMatch.header: ${UNKNOWN_FIELD}; did you mean headers?`,
      `routes.yaml: document 2 (ModelRoute default/r): spec.rules[0].targetModels[0].wieght: ${UNKNOWN_FIELD}; did you mean weight?`,
      `routes.yaml: document 3, items[0] (ModelServer default/s2): spec.endpoint: ${UNKNOWN_FIELD}; did you mean endpoints?`,
      `routes.yaml: document 3, items[0] (ModelServer default/s2): spec.workloadPort.portName: ${UNKNOWN_FIELD}`,
      expect.stringContaining('(ModelServer default/s2): spec.endpoints: not set'),
    ]);
  });

  it('accepts redis:// and rediss:// URLs and bracketed IPv6 addresses', () => {
    for (const address of ['redis://redis:6379', 'rediss://user:secret@redis.example.com:6380/2', '[::1]:6379', '10.0.0.5:6379']) {
      const spec = `${SIMPLE_SPEC}  rateLimit:\n    inputTokensPerUnit: 1\n    unit: day\n    global:\n      redis:\n        address: "${address}"\n`;
      const { routes } = parse(`${SERVER}---\n${route('r', spec)}`);
      expect(routes[0].rateLimit?.global).toEqual({ redis: { address } });
    }
  });

  it('returns plain JSON-serializable data', () => {
    const result = parse(CANONICAL);
    expect(JSON.parse(JSON.stringify(result))).toEqual(result);
  });
});

describe('parseResourceFile: errors name file, document, resource and field', () => {
  it('rejects an out-of-range weight with the documented message', () => {
    const spec = `  modelName: m
  rules:
  - name: default
    targetModels:
    - modelServerName: sf-server
    - modelServerName: sf-server
      weight: 150
`;
    expect(routeError(spec)).toBe(
      'routes.yaml: document 2 (ModelRoute default/sf-route): spec.rules[0].targetModels[1].weight: must be an integer from 0 to 100, got 150',
    );
  });

  it('names file and line of a YAML syntax error', () => {
    const text = `${SERVER}---\nkind: ModelRoute\nmetadata:\n  name: [unclosed\n`;
    const message = errorOf(() => parse(text)).message;
    expect(message).toMatch(/^routes\.yaml: document 2: YAML syntax error at line 1[0-9], column \d+: /);
  });

  it('rejects duplicate YAML keys as a syntax error', () => {
    const message = errorOf(() => parse(`${SERVER}  model: a\n  model: b\n`)).message;
    expect(message).toMatch(/^routes\.yaml: document 1: YAML syntax error at line 10, column 3: .*unique/i);
  });

  it('rejects a document that is not a mapping', () => {
    expect(errorOf(() => parse(`${SERVER}---\n- a\n- b\n`)).message).toBe('routes.yaml: document 2: expected a mapping, got a list');
    expect(errorOf(() => parse('just text')).message).toBe('routes.yaml: document 1: expected a mapping, got the string "just text"');
  });

  it('rejects unknown kinds of its API group, naming them; another API\'s kinds are skipped with a warning', () => {
    const other = parse(`apiVersion: v1\nkind: Service\nmetadata:\n  name: x\n---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {name: llm, namespace: ml}\n---\n${SERVER}`);
    expect(other.warnings.slice(0, 2)).toEqual([
      'routes.yaml: document 1: Service x (v1) is not a resource of the router (it reads ModelRoute and ModelServer of networking.serving.volcano.sh); skipped',
      'routes.yaml: document 2: Deployment ml/llm (apps/v1) is not a resource of the router (it reads ModelRoute and ModelServer of networking.serving.volcano.sh); skipped',
    ]);
    expect(other.servers).toHaveLength(1);
    expect(errorOf(() => parse(`apiVersion: ${API}\nkind: ModelProxy\nmetadata:\n  name: x\n`)).message)
      .toBe(`routes.yaml: document 1: kind: unsupported kind "ModelProxy" (apiVersion "${API}"); expected ModelRoute or ModelServer`);
    expect(errorOf(() => parse('apiVersion: v1\nmetadata: {name: x}\n')).message)
      .toBe('routes.yaml: document 1: kind: is required: expected ModelRoute or ModelServer');
  });

  it('the route API\'s ExternalModelProvider is told that external providers are not supported', () => {
    // As in volcano-sh/kthena docs/proposal/kthena-router-third-party-model-api.md.
    const text = `apiVersion: ${API}\nkind: ExternalModelProvider\nmetadata:\n  name: openai\nspec:\n  provider: openai\n`;
    expect(errorOf(() => parse(text)).message).toBe(`routes.yaml: document 1: kind: unsupported kind "ExternalModelProvider" (apiVersion "${API}"); `
      + 'external model providers are not supported: the router forwards to the pods of ModelServers only; expected ModelRoute or ModelServer');
  });

  it('a misspelt kind is told the one meant', () => {
    for (const [kind, meant] of [['ModelSrver', 'ModelServer'], ['modelroute', 'ModelRoute'], ['ModelRoutes', 'ModelRoute']]) {
      const text = SERVER.replace('kind: ModelServer', `kind: ${kind}`);
      expect(errorOf(() => parse(text)).message, kind)
        .toBe(`routes.yaml: document 1: kind: unsupported kind "${kind}" (apiVersion "${API}"); did you mean ${meant}?`);
    }
  });

  it('rejects a wrong apiVersion, and honours the apiGroup option', () => {
    const text = SERVER.replace(API, 'networking.serving.other.io/v1alpha1');
    expect(errorOf(() => parse(text)).message).toBe(
      'routes.yaml: document 1 (ModelServer default/sf-server): apiVersion: expected "networking.serving.volcano.sh/v1alpha1", got "networking.serving.other.io/v1alpha1"'
      + '; the router reads the API group ROUTER_API_GROUP names (networking.serving.volcano.sh): set ROUTER_API_GROUP=networking.serving.other.io to read resources of this one',
    );
    const ok = parseResourceFile(text, 'r.yaml', { apiGroup: 'networking.serving.other.io', redisCluster: false });
    expect(ok.servers[0].key).toBe('default/sf-server');
    expect(errorOf(() => parse(SERVER.replace('v1alpha1', 'v1beta1'))).message)
      .toMatch(/apiVersion: expected ".*\/v1alpha1", got "networking\.serving\.volcano\.sh\/v1beta1"; the router reads version v1alpha1 of networking\.serving\.volcano\.sh only$/);
    // Neither the group nor the version of the router's: nothing more to say than what was expected.
    expect(errorOf(() => parse(SERVER.replace(API, 'apps/v1'))).message).toMatch(/apiVersion: expected ".*\/v1alpha1", got "apps\/v1"$/);
    expect(errorOf(() => parse(SERVER.replace(`apiVersion: ${API}`, 'apiVersion: 3'))).message).toMatch(/apiVersion: expected ".*\/v1alpha1", got 3$/);
  });

  it('checks metadata', () => {
    expect(errorOf(() => parse(`apiVersion: ${API}\nkind: ModelServer\n`)).message)
      .toBe('routes.yaml: document 1 (ModelServer): metadata: is required: expected a mapping');
    expect(errorOf(() => parse(`apiVersion: ${API}\nkind: ModelServer\nmetadata:\n  namespace: x\n`)).message)
      .toBe('routes.yaml: document 1 (ModelServer): metadata.name: is required: expected a non-empty string');
    expect(errorOf(() => parse(`apiVersion: ${API}\nkind: ModelServer\nmetadata:\n  name: Bad_Name\n`)).message)
      .toMatch(/^routes\.yaml: document 1 \(ModelServer default\/Bad_Name\): metadata\.name: must be a DNS subdomain name .*got the string "Bad_Name"$/);
    expect(errorOf(() => parse(`apiVersion: ${API}\nkind: ModelServer\nmetadata:\n  name: ok\n  namespace: 42\n`)).message)
      .toBe('routes.yaml: document 1 (ModelServer default/ok): metadata.namespace: expected a non-empty string, got 42');
  });

  it.each([
    ['missing modelName', '  rules: []\n', 'spec.modelName: is required unless spec.loraAdapters lists adapters: expected a non-empty string'],
    ['empty modelName and loraAdapters', '  modelName: ""\n  loraAdapters: []\n  rules: []\n', 'spec.modelName: is required unless spec.loraAdapters lists adapters: expected a non-empty string'],
    ['loraAdapters not a list', '  loraAdapters: lora-a\n  rules: []\n', 'spec.loraAdapters: expected a list of adapter names, got the string "lora-a"'],
    ['body.model of wrong type', '  modelName: m\n  rules:\n  - modelMatch: {body: {model: 5}}\n    targetModels: [{modelServerName: sf-server}]\n', 'spec.rules[0].modelMatch.body.model: expected a non-empty string, got 5'],
    ['empty LoRA adapter name', '  loraAdapters: [a, ""]\n  rules: []\n', 'spec.loraAdapters[1]: expected a non-empty string, got the string ""'],
    ['modelName of wrong type', '  modelName: 5\n', 'spec.modelName: expected a non-empty string, got 5'],
    ['missing rules', '  modelName: m\n', 'spec.rules: is required: expected a list of rules'],
    ['rules not a list', '  modelName: m\n  rules: {a: 1}\n', 'spec.rules: expected a list of rules, got a mapping'],
    ['rule name of wrong type', '  modelName: m\n  rules:\n  - name: 7\n    targetModels: [{modelServerName: sf-server}]\n', 'spec.rules[0].name: expected a non-empty string, got 7'],
    ['rule without targets', '  modelName: m\n  rules:\n  - name: a\n', 'spec.rules[0].targetModels: is required: expected a non-empty list'],
    ['empty targets', '  modelName: m\n  rules:\n  - name: a\n    targetModels: []\n', 'spec.rules[0].targetModels: must not be empty'],
    ['target without server', '  modelName: m\n  rules:\n  - name: a\n    targetModels: [{weight: 5}]\n', 'spec.rules[0].targetModels[0].modelServerName: is required: expected a non-empty string'],
    ['weight as string', '  modelName: m\n  rules:\n  - name: a\n    targetModels: [{modelServerName: sf-server, weight: "50"}]\n', 'spec.rules[0].targetModels[0].weight: must be an integer from 0 to 100, got the string "50"'],
    ['fractional weight', '  modelName: m\n  rules:\n  - name: a\n    targetModels: [{modelServerName: sf-server, weight: 2.5}]\n', 'spec.rules[0].targetModels[0].weight: must be an integer from 0 to 100, got 2.5'],
  ])('ModelRoute: %s', (_name, spec, expected) => {
    expect(routeError(spec)).toBe(`routes.yaml: document 2 (ModelRoute default/sf-route): ${expected}`);
  });

  const rule = (match: string) => `  modelName: m\n  rules:\n  - name: a\n    modelMatch:\n${match}    targetModels: [{modelServerName: sf-server}]\n`;
  it.each([
    ['no match kind, another field', '      headers:\n        X-Tier: {suffix: x}\n', 'spec.rules[0].modelMatch.headers.X-Tier: must set one of exact, prefix, regex; got none'],
    ['match value not a string', '      uri: {prefix: 5}\n', 'spec.rules[0].modelMatch.uri.prefix: expected a string, got 5'],
    ['bad regex', '      headers:\n        x-a: {regex: "(unclosed"}\n', 'spec.rules[0].modelMatch.headers.x-a.regex: invalid regular expression "(unclosed": '],
    ['RE2 flag that has no JavaScript twin', '      uri: {regex: "(?U)^/v1/.+"}\n', 'spec.rules[0].modelMatch.uri.regex: invalid regular expression "(?U)^/v1/.+": flag U of (?U) is not supported (i, m and s are)'],
    ['bad header name', '      headers:\n        "bad header": {exact: x}\n', 'spec.rules[0].modelMatch.headers["bad header"]: invalid header name "bad header"'],
    ['header twice', '      headers:\n        X-A: {exact: x}\n        x-a: {exact: y}\n', 'spec.rules[0].modelMatch.headers.x-a: header "x-a" is listed twice'],
    ['headers not a mapping', '      headers: [a]\n', 'spec.rules[0].modelMatch.headers: expected a mapping, got a list'],
  ])('modelMatch: %s', (_name, match, expected) => {
    expect(routeError(rule(match))).toContain(`routes.yaml: document 2 (ModelRoute default/sf-route): ${expected}`);
  });

  it('a regex in the route API\'s syntax (Go RE2) that JavaScript lacks loads: leading flags, (?P<name>…), POSIX classes', () => {
    const { routes } = parse(`${SERVER}---\n${route('r', rule('      headers:\n        x-tier: {regex: "(?i)^(?P<t>gold|[[:digit:]]+)$"}\n'))}`);
    expect(routes[0].rules[0].modelMatch?.headers['x-tier']).toEqual({ kind: 'regex', value: '(?i)^(?P<t>gold|[[:digit:]]+)$' });
  });

  const limit = (body: string) => `${SIMPLE_SPEC}  rateLimit:\n${body}`;
  it('as in the route API, the unit defaults to second and a rule may be unnamed', () => {
    const text = `apiVersion: ${API}\nkind: ModelServer\nmetadata: {name: sf-server}\nspec: {}\n---\napiVersion: ${API}\nkind: ModelRoute\nmetadata: {name: r}\nspec:\n  modelName: m\n  rules:\n  - targetModels: [{modelServerName: sf-server}]\n  rateLimit: {inputTokensPerUnit: 5}\n`;
    const { routes } = parseResourceFile(text, 'routes.yaml', opts);
    expect(routes[0].rateLimit?.unit).toBe('second');
    expect(routes[0].rules[0].name).toBe('rule-0');
  });
  it('as in the route API, an empty rule name counts as none; a name of another type is refused', () => {
    const spec = (name: string): string => `  modelName: m\n  rules:\n  - name: ${name}\n    targetModels: [{modelServerName: sf-server}]\n  - name: ""\n    targetModels: [{modelServerName: sf-server}]\n`;
    const { routes } = parse(`${SERVER}---\n${route('r', spec('""'))}`);
    expect(routes[0].rules.map((r) => r.name)).toEqual(['rule-0', 'rule-1']);
    expect(routeError(spec('5'))).toContain('routes.yaml: document 2 (ModelRoute default/sf-route): spec.rules[0].name: expected a non-empty string, got 5');
  });
  it.each([
    ['zero input', '    inputTokensPerUnit: 0\n    unit: minute\n', 'spec.rateLimit.inputTokensPerUnit: must be an integer from 1 to 4294967295, got 0'],
    ['negative output', '    outputTokensPerUnit: -5\n    unit: minute\n', 'spec.rateLimit.outputTokensPerUnit: must be an integer from 1 to 4294967295, got -5'],
    ['bad unit', '    inputTokensPerUnit: 5\n    unit: week\n', 'spec.rateLimit.unit: expected one of second, minute, hour, day, month, got "week"'],
    ['misspelt unit', '    inputTokensPerUnit: 5\n    unit: minutes\n', 'spec.rateLimit.unit: expected one of second, minute, hour, day, month, got "minutes"; did you mean minute?'],
    ['unit not a string', '    inputTokensPerUnit: 5\n    unit: 60\n', 'spec.rateLimit.unit: expected one of second, minute, hour, day, month, got 60'],
    ['misspelt mode', '    inputTokensPerUnit: 5\n    mode: shadwo\n', 'spec.rateLimit.mode: expected one of enforce, shadow, got "shadwo"; did you mean shadow?'],
    // "Global mode" in the docs is where the counts are, not a value of `mode`.
    ['mode global', '    inputTokensPerUnit: 5\n    mode: global\n', 'spec.rateLimit.mode: expected one of enforce, shadow, got "global"; global mode is not set here: give spec.rateLimit.global.redis.address (the Redis that holds the counts)'],
    ['mode local', '    inputTokensPerUnit: 5\n    mode: local\n', 'spec.rateLimit.mode: expected one of enforce, shadow, got "local"; local mode is not set here: leave out spec.rateLimit.global'],
    ['global not a mapping', '    inputTokensPerUnit: 5\n    unit: hour\n    global: redis\n', 'spec.rateLimit.global: expected a mapping, got the string "redis"'],
    ['redis without address', '    inputTokensPerUnit: 5\n    unit: hour\n    global: {redis: {}}\n', 'spec.rateLimit.global.redis.address: is required: expected a non-empty string'],
    ['address without port', '    inputTokensPerUnit: 5\n    unit: hour\n    global: {redis: {address: redis-host}}\n', 'spec.rateLimit.global.redis.address: expected host:port'],
    ['address with bad port', '    inputTokensPerUnit: 5\n    unit: hour\n    global: {redis: {address: "redis:99999"}}\n', 'spec.rateLimit.global.redis.address: expected host:port (IPv4, hostname or [IPv6], port 1-65535): bad port "99999"'],
    ['wrong URL scheme', '    inputTokensPerUnit: 5\n    unit: hour\n    global: {redis: {address: "http://redis:6379"}}\n', 'spec.rateLimit.global.redis.address: URL scheme must be redis:// or rediss://, got "http"'],
  ])('rateLimit: %s', (_name, body, expected) => {
    expect(routeError(limit(body))).toContain(`routes.yaml: document 2 (ModelRoute default/sf-route): ${expected}`);
  });

  it('as in the route API, a global without redis is a local limit, and a warning says so', () => {
    // `global:` alone is what the commented example becomes with its first line uncommented.
    for (const global of ['{}', '{redis: null}', 'null', '\n    #  redis:\n    #    address: redis:6379']) {
      const { routes, warnings } = parse(`${SERVER}---\n${route('r', `${SIMPLE_SPEC}  rateLimit:\n    inputTokensPerUnit: 5\n    global: ${global}\n`)}`);
      expect(routes[0].rateLimit, global).toEqual({ inputTokensPerUnit: 5, outputTokensPerUnit: null, unit: 'second', global: null, mode: 'enforce' });
      expect(warnings, global).toEqual([`routes.yaml: document 2 (ModelRoute default/r): spec.rateLimit.global: ${GLOBAL_WITHOUT_REDIS}`]);
    }
    // With an address (or without global) nothing is said.
    const withRedis = parse(`${SERVER}---\n${route('r', `${SIMPLE_SPEC}  rateLimit:\n    inputTokensPerUnit: 5\n    global: {redis: {address: "redis:6379"}}\n`)}`);
    expect(withRedis.warnings).toEqual([]);
    expect(parse(`${SERVER}---\n${route('r', `${SIMPLE_SPEC}  rateLimit:\n    inputTokensPerUnit: 5\n`)}`).warnings).toEqual([]);
  });

  it('does not print a redis password in messages', () => {
    const message = routeError(limit('    inputTokensPerUnit: 5\n    unit: hour\n    global: {redis: {address: "redis://u:hunter2@:6379"}}\n'));
    expect(message).toContain('spec.rateLimit.global.redis.address');
    expect(message).not.toContain('hunter2');
  });

  it.each([
    ['port out of range', '  workloadPort: {port: 70000}\n', 'spec.workloadPort.port: must be an integer from 1 to 65535, got 70000'],
    ['model not a string', '  model: 3\n', 'spec.model: expected a non-empty string, got 3'],
    ['label value not a string', '  workloadSelector:\n    matchLabels: {version: 1}\n', 'spec.workloadSelector.matchLabels.version: expected a string, got 1'],
    ['timeout garbage', '  trafficPolicy: {timeout: soon}\n', 'spec.trafficPolicy.timeout: invalid duration "soon"'],
    ['timeout unit', '  trafficPolicy: {timeout: 3d}\n', 'spec.trafficPolicy.timeout: invalid duration "3d": unknown unit "d"'],
    ['timeout number', '  trafficPolicy: {timeout: 30}\n', 'spec.trafficPolicy.timeout: expected a duration string such as "30s" or "1m30s", got 30'],
    ['timeout negative', '  trafficPolicy: {timeout: -1s}\n', 'spec.trafficPolicy.timeout: negative duration "-1s" is not allowed'],
    ['retry not a mapping', '  trafficPolicy: {retry: 3}\n', 'spec.trafficPolicy.retry: expected a mapping, got 3'],
    ['retry attempts negative', '  trafficPolicy: {retry: {attempts: -1}}\n', 'spec.trafficPolicy.retry.attempts: must be an integer from 0 to 2147483647, got -1'],
    ['retry interval garbage', '  trafficPolicy: {retry: {attempts: 1, retryInterval: soon}}\n', 'spec.trafficPolicy.retry.retryInterval: invalid duration "soon"'],
    ['retry interval too long', '  trafficPolicy: {retry: {attempts: 1, retryInterval: 2m}}\n', 'spec.trafficPolicy.retry.retryInterval: must be at most 1m, got the string "2m"'],
    ['endpoints not a list', '  endpoints: {a: 1}\n', 'spec.endpoints: expected a list of {name, address}, got a mapping'],
    ['endpoint without name', '  endpoints:\n  - address: 1.2.3.4:80\n', 'spec.endpoints[0].name: is required: expected a non-empty string'],
    ['endpoint without address', '  endpoints:\n  - name: p\n', 'spec.endpoints[0].address: is required: expected a non-empty string'],
    ['endpoint without port', '  endpoints:\n  - {name: p, address: 1.2.3.4}\n', 'spec.endpoints[0].address: expected host:port (IPv4, hostname or [IPv6], port 1-65535), got the string "1.2.3.4"'],
    ['endpoint port 0', '  endpoints:\n  - {name: p, address: "1.2.3.4:0"}\n', 'spec.endpoints[0].address: expected host:port (IPv4, hostname or [IPv6], port 1-65535): bad port "0"'],
    ['endpoint bare IPv6', '  endpoints:\n  - {name: p, address: "::1:8000"}\n', 'spec.endpoints[0].address: expected host:port (IPv4, hostname or [IPv6], port 1-65535): an IPv6 address must be in brackets'],
    ['endpoint bad IPv4', '  endpoints:\n  - {name: p, address: "300.1.1.1:80"}\n', 'spec.endpoints[0].address: expected host:port (IPv4, hostname or [IPv6], port 1-65535): bad host "300.1.1.1"'],
    ['duplicate endpoint', '  endpoints:\n  - {name: p, address: "a:1"}\n  - {name: p, address: "b:1"}\n', 'spec.endpoints[1].name: duplicate endpoint name "p"'],
  ])('ModelServer: %s', (_name, spec, expected) => {
    expect(serverError(spec)).toContain(`servers.yaml: document 1 (ModelServer default/s1): ${expected}`);
  });

  it('names the List item in errors', () => {
    const text = `apiVersion: v1\nkind: List\nitems:\n- ${JSON.stringify({ apiVersion: API, kind: 'ModelServer', metadata: { name: 'ok' } })}\n- ${JSON.stringify({ apiVersion: API, kind: 'ModelServer', metadata: { name: 'x' }, spec: { workloadPort: { port: 0 } } })}\n`;
    expect(errorOf(() => parse(text)).message)
      .toBe('routes.yaml: document 1, items[1] (ModelServer default/x): spec.workloadPort.port: must be an integer from 1 to 65535, got 0');
    expect(errorOf(() => parse('kind: List\nitems: 3\n')).message).toBe('routes.yaml: document 1 (List): items: expected a list of resources, got 3');
  });

  it('rejects duplicate namespace/name of the same kind, naming both documents', () => {
    const message = errorOf(() => parse(`${SERVER}---\n${SERVER}`)).message;
    expect(message).toBe('routes.yaml: document 2 (ModelServer default/sf-server): metadata.name: duplicate ModelServer default/sf-server, first defined in routes.yaml: document 1');
  });

  it('allows the same name for different kinds or namespaces', () => {
    const text = `${SERVER}---\n${SERVER.replace('name: sf-server', 'name: sf-server\n  namespace: other')}---\n${route('sf-server', SIMPLE_SPEC)}`;
    const { routes, servers } = parse(text);
    expect(servers.map((s) => s.key)).toEqual(['default/sf-server', 'other/sf-server']);
    expect(routes.map((r) => r.key)).toEqual(['default/sf-server']);
  });

  it('rejects a target naming a missing ModelServer (also across namespaces)', () => {
    const spec = SIMPLE_SPEC.replace('    - modelServerName: sf-server\n', '    - modelServerName: sf-server\n    - modelServerName: ghost\n');
    expect(errorOf(() => parse(`${SERVER}---\n${route('r', spec)}`)).message).toBe(
      "routes.yaml: document 2 (ModelRoute default/r): spec.rules[0].targetModels[1].modelServerName: ModelServer default/ghost does not exist (a target must name a ModelServer in the route's namespace)",
    );
    const message = errorOf(() => parse(`${SERVER}---\n${route('r', SIMPLE_SPEC, 'team-a')}`)).message;
    expect(message).toContain('(ModelRoute team-a/r): spec.rules[0].targetModels[0].modelServerName: ModelServer team-a/sf-server does not exist');
  });

  it('reports every bad document in one error', () => {
    const err = errorOf(() => parse(`${SERVER.replace('127.0.0.1:18001', 'nope')}---\n${route('r', '  modelName: ""\n')}`));
    expect(err.problems).toHaveLength(2);
    expect(err.message).not.toContain('\n');
    // The file is named once, before the numbered problems.
    expect(err.message).toMatch(/^routes\.yaml: 2 problems: \(1\) document 1 \(ModelServer default\/sf-server\): spec\.endpoints\[0\]\.address: .*; \(2\) document 2 \(ModelRoute default\/r\): spec\.modelName: is required unless spec\.loraAdapters lists adapters: expected a non-empty string$/);
  });
});

describe('parseResourceFile: a rule whose targets all have weight 0', () => {
  it('is kept, with a warning naming the file, document, route and rule (its requests get 503)', () => {
    const { routes, warnings } = parse(`${SERVER}---\n${route('r', `  modelName: m
  rules:
  - name: off
    modelMatch: {headers: {x-off: {exact: "1"}}}
    targetModels: [{modelServerName: sf-server, weight: 0}, {modelServerName: sf-server, weight: 0}]
  - name: some
    targetModels: [{modelServerName: sf-server, weight: 0}, {modelServerName: sf-server, weight: 1}]
`)}`);
    expect(routes[0].rules.map((r) => r.name)).toEqual(['off', 'some']);
    expect(warnings).toEqual([
      'routes.yaml: document 2 (ModelRoute default/r): spec.rules[0].targetModels: every target has weight 0, so each request this rule matches is answered 503 no_weighted_target, unless a later route of the same model name takes it (give a target a weight above 0 to send it traffic)',
    ]);
  });
});

describe('parseResourceFile: routes that share a model name', () => {
  const HEADER_RULE = `  modelName: sf-model
  rules:
  - name: canary
    modelMatch: {headers: {x-canary: {exact: "1"}}}
    targetModels:
    - modelServerName: sf-server
`;

  it('keeps both in file order, the order they are tried in; a later route after one whose rules take only some requests is not warned about', () => {
    const text = `${SERVER}---\n${route('first', HEADER_RULE)}---\n${route('second', SIMPLE_SPEC)}`;
    const { routes, warnings } = parse(text);
    expect(routes.map((r) => r.key)).toEqual(['default/first', 'default/second']);
    expect(warnings).toEqual([]);
  });

  it('routes carrying a creationTimestamp (a kubectl dump) are tried oldest first, before those without, which keep file order', () => {
    const at = (ts: string) => (name: string) => route(name, HEADER_RULE).replace(`name: ${name}\n`, `name: ${name}\n  creationTimestamp: "${ts}"\n`);
    const text = `${SERVER}---\n${route('plain-1', HEADER_RULE)}---\n${at('2025-03-01T00:00:00Z')('newer')}---\n${route('plain-2', HEADER_RULE)}---\n${at('2024-01-01T00:00:00Z')('older')}`;
    expect(parse(text).routes.map((r) => r.key)).toEqual(['default/older', 'default/newer', 'default/plain-1', 'default/plain-2']);
  });

  it('a later route that can never be reached (an earlier one has a rule taking every request) is warned about, naming that rule', () => {
    const text = `${SERVER}---\n${route('first', SIMPLE_SPEC)}---\n${route('second', SIMPLE_SPEC, 'team-b')}---\n${SERVER.replace('name: sf-server', 'name: sf-server\n  namespace: team-b')}`;
    const { routes, warnings } = parse(text);
    expect(routes.map((r) => r.key)).toEqual(['default/first', 'team-b/second']);
    expect(warnings).toEqual([
      'routes.yaml: document 3 (ModelRoute team-b/second): spec.modelName: model name "sf-model" is also served by ModelRoute default/first, which is tried first and whose rule spec.rules[0] '
        + 'takes every request for it, so this route never receives one; a route of a shared model name is tried only when the earlier routes\' rules match none',
    ]);
  });

  it('a rule whose targets all have weight 0, or whose modelMatch.body.model names another model, does not hide the later route', () => {
    const zero = `  modelName: sf-model\n  rules:\n  - name: off\n    targetModels: [{modelServerName: sf-server, weight: 0}]\n`;
    const other = `  modelName: sf-model\n  loraAdapters: [ad]\n  rules:\n  - name: ad-only\n    modelMatch: {body: {model: ad}}\n    targetModels: [{modelServerName: sf-server}]\n`;
    const { routes, warnings } = parse(`${SERVER}---\n${route('zero', zero)}---\n${route('other', other)}---\n${route('last', SIMPLE_SPEC)}`);
    expect(routes.map((r) => r.key)).toEqual(['default/zero', 'default/other', 'default/last']);
    expect(warnings.filter((w) => w.includes('also served'))).toEqual([]);
  });

  it('routes of one model name bound to different Gateways: the warning says parentRefs is not read without ROUTER_GATEWAY and what to do', () => {
    const servers = ['deepseek-r1-1-5b', 'deepseek-r1-7b'].map((n) => SERVER.replace('name: sf-server', `name: ${n}`)).join('---\n');
    const { routes, warnings } = parse(`${GATEWAY_ROUTES}---\n${servers}`);
    expect(routes.map((r) => [r.key, r.parentRefs])).toEqual([
      ['default/deepseek-default-route', [{ group: null, kind: 'Gateway', namespace: 'kthena-system', name: 'default', sectionName: null }]],
      ['default/deepseek-route-8081', [{ group: null, kind: 'Gateway', namespace: 'default', name: 'kthena-gateway-8081', sectionName: null }]],
    ]);
    expect(warnings).toEqual([
      'routes.yaml: document 2 (ModelRoute default/deepseek-route-8081): spec.modelName: model name "deepseek-r1" is also served by ModelRoute default/deepseek-default-route, which is tried first and whose rule spec.rules[0] '
        + 'takes every request for it, so this route never receives one; a route of a shared model name is tried only when the earlier routes\' rules match none; '
        + 'they are bound to different Gateways (spec.parentRefs: kthena-system/default; default/kthena-gateway-8081), which is not read while ROUTER_GATEWAY is unset: '
        + 'the router serves every route on its own port, so to serve a model name differently per Gateway run a router per Gateway, each with ROUTER_GATEWAY naming its own (<namespace>/<name>)',
    ]);
  });

  it('routes of one model name bound to different Gateways, the later one reachable: the warning says both are tried in turn whichever Gateway', () => {
    const first = `${HEADER_RULE}  parentRefs: [{name: gw-a, kind: Gateway}]\n`;
    const second = `${SIMPLE_SPEC}  parentRefs: [{name: gw-b, kind: Gateway}]\n`;
    const { warnings } = parse(`${SERVER}---\n${route('a', first)}---\n${route('b', second)}`);
    expect(warnings).toEqual([
      'routes.yaml: document 3 (ModelRoute default/b): spec.modelName: model name "sf-model" is also served by ModelRoute default/a: both are bound to different Gateways (spec.parentRefs: default/gw-a; default/gw-b), which is not read while ROUTER_GATEWAY is unset: '
        + 'the router tries the routes of one name in turn on its own port, whichever Gateway they name; to serve a model name differently per Gateway run a router per Gateway, each with ROUTER_GATEWAY naming its own (<namespace>/<name>)',
    ]);
  });

  it('reads parentRefs as the Gateway API defines them: the route\'s namespace when left out, group, kind and sectionName as given', () => {
    const spec = `${SIMPLE_SPEC}  parentRefs:
  - {name: gw, sectionName: http-8081.a}
  - name: other
    namespace: infra
    port: 65535
  - {name: svc, group: "", kind: Service, port: 80}
  - {name: ${'n'.repeat(253)}, namespace: null, group: gateway.networking.k8s.io, kind: Gateway, sectionName: null, port: null}
`;
    const { routes, warnings } = parse(`${route('r', spec, 'team-a')}---\n${SERVER.replace('name: sf-server', 'name: sf-server\n  namespace: team-a')}`);
    expect(warnings).toEqual([]);
    expect(routes[0].parentRefs).toEqual([
      { group: null, kind: null, namespace: 'team-a', name: 'gw', sectionName: 'http-8081.a' },
      { group: null, kind: null, namespace: 'infra', name: 'other', sectionName: null },
      { group: '', kind: 'Service', namespace: 'team-a', name: 'svc', sectionName: null },
      { group: 'gateway.networking.k8s.io', kind: 'Gateway', namespace: 'team-a', name: 'n'.repeat(253), sectionName: null },
    ]);
  });

  it('a parentRefs entry the Gateway API refuses refuses the route, naming the entry and its field', () => {
    const bad: [string, string][] = [
      ['  parentRefs: gw\n', 'spec.parentRefs: expected a list of parent references ({name, namespace, kind, ...}), got the string "gw"'],
      ['  parentRefs: [7]\n', 'spec.parentRefs[0]: expected a mapping with a name, got 7'],
      ['  parentRefs: [null]\n', 'spec.parentRefs[0]: is required: expected a mapping with a name'],
      ['  parentRefs: [{name: gw}, {namespace: infra, kind: Gateway}]\n', 'spec.parentRefs[1].name: is required: expected the name of the Gateway (or other parent) the route is bound to'],
      ['  parentRefs: [{name: ""}]\n', 'spec.parentRefs[0].name: expected a non-empty string, got the string ""'],
      ['  parentRefs: [{name: 8081}]\n', 'spec.parentRefs[0].name: expected a non-empty string, got 8081'],
      [`  parentRefs: [{name: ${'n'.repeat(254)}}]\n`, 'spec.parentRefs[0].name: must be at most 253 characters, got 254'],
      ['  parentRefs: [{name: gw, namespace: Infra}]\n', 'spec.parentRefs[0].namespace: must be a namespace name (lower-case letters, digits and \'-\', at most 63 characters); '
        + 'leave it out for the route\'s own namespace, got the string "Infra"'],
      ['  parentRefs: [{name: gw, namespace: ""}]\n', 'spec.parentRefs[0].namespace: must be a namespace name'],
      ['  parentRefs: [{name: gw, namespace: kthena.system}]\n', 'spec.parentRefs[0].namespace: must be a namespace name'],
      [`  parentRefs: [{name: gw, namespace: ${'n'.repeat(64)}}]\n`, 'spec.parentRefs[0].namespace: must be a namespace name'],
      ['  parentRefs: [{name: gw, namespace: [infra]}]\n', 'spec.parentRefs[0].namespace: expected a namespace name (lower-case letters, digits and \'-\', at most 63 characters); '
        + 'leave it out for the route\'s own namespace, got a list'],
      ['  parentRefs: [{name: gw, group: Gateway.networking.k8s.io}]\n', 'spec.parentRefs[0].group: must be an API group: "" for the core group, or lower-case letters, digits, \'-\' and \'.\' between them '
        + '(at most 253 characters); leave it out for gateway.networking.k8s.io, got the string "Gateway.networking.k8s.io"'],
      ['  parentRefs: [{name: gw, group: example.com/v1}]\n', 'spec.parentRefs[0].group: must be an API group'],
      ['  parentRefs: [{name: gw, group: 1}]\n', 'spec.parentRefs[0].group: expected an API group'],
      ['  parentRefs: [{name: gw, kind: ""}]\n', 'spec.parentRefs[0].kind: must be a kind (a letter, then letters, digits and \'-\', at most 63 characters), such as Gateway, got the string ""'],
      ['  parentRefs: [{name: gw, kind: "gateway.networking.k8s.io/Gateway"}]\n', 'spec.parentRefs[0].kind: must be a kind'],
      ['  parentRefs: [{name: gw, kind: true}]\n', 'spec.parentRefs[0].kind: expected a kind'],
      ['  parentRefs: [{name: gw, sectionName: HTTP}]\n', 'spec.parentRefs[0].sectionName: must be a listener name (lower-case letters, digits, \'-\' and \'.\' between them, at most 253 characters), got the string "HTTP"'],
      ['  parentRefs: [{name: gw, sectionName: ""}]\n', 'spec.parentRefs[0].sectionName: must be a listener name'],
      ['  parentRefs: [{name: gw, port: 0}]\n', 'spec.parentRefs[0].port: must be an integer from 1 to 65535, got 0'],
      ['  parentRefs: [{name: gw, port: 65536}]\n', 'spec.parentRefs[0].port: must be an integer from 1 to 65535, got 65536'],
      ['  parentRefs: [{name: gw, port: 80.5}]\n', 'spec.parentRefs[0].port: must be an integer from 1 to 65535, got 80.5'],
      ['  parentRefs: [{name: gw, port: "8081"}]\n', 'spec.parentRefs[0].port: must be an integer from 1 to 65535, got the string "8081"'],
    ];
    for (const [refs, problem] of bad) {
      expect(routeError(`${SIMPLE_SPEC}${refs}`), refs).toContain(`routes.yaml: document 2 (ModelRoute default/sf-route): ${problem}`);
    }
  });

  it('a misspelt field of a parentRefs entry is named, with the field likely meant', () => {
    const { routes, warnings } = parse(`${SERVER}---\n${route('r', `${SIMPLE_SPEC}  parentRefs: [{name: gw, namespce: infra}]\n`)}`);
    expect(warnings).toEqual([`routes.yaml: document 2 (ModelRoute default/r): spec.parentRefs[0].namespce: ${UNKNOWN_FIELD}; did you mean namespace?`]);
    expect(routes[0].parentRefs).toEqual([{ group: null, kind: null, namespace: 'default', name: 'gw', sectionName: null }]);
  });
});

describe('parseResourceFile: LoRA adapters', () => {
  const RULES = '  rules:\n  - targetModels:\n    - modelServerName: sf-server\n';

  it('accepts a route with loraAdapters and no modelName, as the route API allows', () => {
    const { routes, warnings } = parse(`${SERVER}---\n${route('lora', `  loraAdapters: [lora-a, lora-b]\n${RULES}`)}`);
    expect(warnings).toEqual([]);
    expect(routes[0]).toMatchObject({ key: 'default/lora', modelName: null, loraAdapters: ['lora-a', 'lora-b'] });
  });

  it('an adapter listed by two routes is served by both, tried in file order; the later one is warned about when the first takes every request', () => {
    const text = `${SERVER}---\n${route('one', `  loraAdapters: [lora-a]\n${RULES}`)}---\n${route('two', `  modelName: base\n  loraAdapters: [lora-b, lora-a]\n${RULES}`)}`;
    const { routes, warnings } = parse(text);
    expect(routes.map((r) => [r.key, r.loraAdapters])).toEqual([['default/one', ['lora-a']], ['default/two', ['lora-b', 'lora-a']]]);
    expect(warnings).toEqual([
      'routes.yaml: document 3 (ModelRoute default/two): spec.loraAdapters[1]: LoRA adapter "lora-a" is also served by ModelRoute default/one, which is tried first and whose rule spec.rules[0] '
        + 'takes every request for it, so this route never receives one; a route of a shared model name is tried only when the earlier routes\' rules match none',
    ]);
  });
});

describe('parseResourceFile: an adapter that is another route\'s model name', () => {
  const RULES = '  rules:\n  - targetModels:\n    - modelServerName: sf-server\n';

  it('is served by that route alone, as the route API does: the route that lists it as an adapter is told, wherever it stands', () => {
    for (const [first, second] of [['match', 'lora'], ['lora', 'match']]) {
      const routes = { match: route('match', `  modelName: m1\n${RULES}`), lora: route('lora', `  modelName: base\n  loraAdapters: [m1, a2]\n${RULES}`) };
      const { warnings } = parse(`${SERVER}---\n${routes[first as 'match']}---\n${routes[second as 'lora']}`);
      const doc = second === 'lora' ? 3 : 2;
      expect(warnings, first).toEqual([
        `routes.yaml: document ${doc} (ModelRoute default/lora): spec.loraAdapters[0]: LoRA adapter "m1" is the model name (spec.modelName) of ModelRoute default/match, which serves every request for it, so this route never receives one for it`,
      ]);
    }
  });

  it('a route listing its own model name as an adapter is not told', () => {
    expect(parse(`${SERVER}---\n${route('self', `  modelName: m1\n  loraAdapters: [m1]\n${RULES}`)}`).warnings).toEqual([]);
  });
});

describe('parseResourceFile: a target of an external model provider', () => {
  it('is refused naming externalModelProviderName, not as a missing modelServerName', () => {
    const spec = '  modelName: m\n  rules:\n  - targetModels:\n    - externalModelProviderName: openai\n';
    const err = errorOf(() => parse(`${SERVER}---\n${route('ext', spec)}`));
    expect(err.message).toBe('routes.yaml: document 2 (ModelRoute default/ext): spec.rules[0].targetModels[0].externalModelProviderName: targets of external model providers are not supported: name a ModelServer in modelServerName');
  });
});

describe('parseResourceFile: workloadPort.protocol', () => {
  const server = (protocol: string) => SERVER.replace('spec:\n', `spec:\n  workloadPort: {port: 8000${protocol}}\n`);

  it('https (which the route API allows) loads with a warning that the pods are spoken to in plain HTTP', () => {
    const { servers, warnings } = parse(server(', protocol: https'));
    expect(servers[0].workloadPort).toBe(8000);
    expect(warnings).toEqual([`routes.yaml: document 1 (ModelServer default/sf-server): spec.workloadPort.protocol: "https" ${PLAIN_HTTP_ONLY}`]);
    expect(PLAIN_HTTP_ONLY).toBe('is not read: the router speaks plain HTTP to the pods, so a pod that takes only TLS at this port fails every request; give the port where the pods speak plain HTTP');
  });

  it('http, or none, is said nothing of', () => {
    // volcano-sh/kthena examples/models/deepseek-v4-flash/router.yaml sets protocol: http.
    expect(parse(server(', protocol: http')).warnings).toEqual([]);
    expect(parse(server('')).warnings).toEqual([]);
  });
});

describe('parseResourceFile: prefill/decode disaggregation (workloadSelector.pdGroup)', () => {
  const PD_SERVER = `apiVersion: ${API}
kind: ModelServer
metadata:
  name: pd-server
spec:
  workloadSelector:
    matchLabels: {app: x}
    pdGroup:
      groupKey: group
      prefillLabels: {role: prefill}
      decodeLabels: {role: decode}
  workloadPort: {port: 8000}
`;

  const FILE_PD = `${PD_SERVER}  kvConnector: {type: nixl}
  endpoints:
    - {name: prefill-0, address: "10.0.0.1:8000", labels: {group: g1, role: prefill}}
    - {name: decode-0, address: "10.0.0.2:8000", labels: {group: g1, role: decode, other: kept}}
`;

  it('reads groupKey, the role labels and kvConnector.type; spec.endpoints[].labels give each pod its group and role', () => {
    const server = parse(FILE_PD).servers[0];
    expect(server.pd).toEqual({ groupKey: 'group', prefillLabels: { role: 'prefill' }, decodeLabels: { role: 'decode' }, connector: 'nixl' });
    expect(server.endpoints).toEqual([
      { name: 'prefill-0', host: '10.0.0.1', port: 8000, labels: { group: 'g1', role: 'prefill' } },
      { name: 'decode-0', host: '10.0.0.2', port: 8000, labels: { group: 'g1', role: 'decode', other: 'kept' } },
    ]);
    expect(parse(FILE_PD).warnings).toEqual([]);
  });

  it('kvConnector.type defaults to http (as in the route API); lmcache, mooncake are read; a null pdGroup is no pdGroup', () => {
    expect(parse(PD_SERVER).servers[0].pd?.connector).toBe('http');
    expect(parse(FILE_PD.replace('type: nixl', 'type: lmcache')).servers[0].pd?.connector).toBe('lmcache');
    expect(parse(FILE_PD.replace('type: nixl', 'type: mooncake')).servers[0].pd?.connector).toBe('mooncake');
    // As the route API's router: SGLang's bootstrap handoff is chosen by inferenceEngine SGLang without kvConnector.type.
    const sglang = PD_SERVER.replace('spec:\n', 'spec:\n  inferenceEngine: SGLang\n');
    expect(parse(sglang).servers[0].pd?.connector).toBe('sglang');
    expect(parse(`${sglang}  kvConnector: {}\n`).servers[0].pd?.connector).toBe('sglang');
    expect(parse(`${sglang}  kvConnector: {type: http}\n`).servers[0].pd?.connector).toBe('http');
    const none = PD_SERVER.replace(/    pdGroup:\n(      .*\n)+/, '    pdGroup: null\n');
    expect(parse(none).servers[0].pd).toBeUndefined();
    // Without pdGroup, endpoint labels are read (checked) but not kept.
    expect(parse(FILE_PD.replace(/    pdGroup:\n(      .*\n)+/, '')).servers[0].endpoints![0]).toEqual({ name: 'prefill-0', host: '10.0.0.1', port: 8000 });
  });

  it('refuses a bad pdGroup, kvConnector or endpoint labels, naming the field', () => {
    const at = (text: string) => errorOf(() => parse(text)).message.replace('routes.yaml: document 1 (ModelServer default/pd-server): ', '');
    expect(at(PD_SERVER.replace('      groupKey: group\n', ''))).toBe('spec.workloadSelector.pdGroup.groupKey: is required: expected a non-empty string');
    expect(at(PD_SERVER.replace('{role: prefill}', '{}'))).toBe('spec.workloadSelector.pdGroup.prefillLabels: must not be empty: it tells the pods of this role from the others');
    expect(at(FILE_PD.replace('type: nixl', 'type: sglang'))).toBe('spec.kvConnector.type: expected one of http, lmcache, nixl, mooncake, got "sglang"');
    expect(at(FILE_PD.replace('{group: g1, role: decode, other: kept}', '{role: decode}'))).toBe('spec.endpoints[1].labels: must carry the label "group" '
      + '(spec.workloadSelector.pdGroup.groupKey) and those of prefillLabels {role: prefill} or decodeLabels {role: decode}, got {role: decode}');
    expect(at(FILE_PD.replace(', labels: {group: g1, role: prefill}', ''))).toContain('spec.endpoints[0].labels: must carry the label "group"');
  });
});

describe('parseResourceFile: a ModelServer without endpoints', () => {
  it('warns, naming the field, that from a file its workloadSelector finds no pod (the route API\'s manifests have no spec.endpoints)', () => {
    const server = SERVER.replace(/  endpoints:\n(  .*\n)+/, '  workloadSelector:\n    matchLabels:\n      app: sf\n  workloadPort:\n    port: 8000\n');
    expect(server).not.toContain('endpoints');
    const { servers, warnings } = parse(`${server}---\n${route('r', SIMPLE_SPEC)}`);
    expect(servers).toHaveLength(1);
    expect(warnings).toEqual([
      "routes.yaml: document 1 (ModelServer default/sf-server): spec.endpoints: not set: from a resources file a ModelServer's pods are its spec.endpoints (spec.workloadSelector is looked up with --kubernetes only), so requests routed to it answer 503 no_ready_endpoint",
    ]);
  });

  it('does not warn when the server lists its endpoints', () => {
    expect(parse(`${SERVER}---\n${route('r', SIMPLE_SPEC)}`).warnings).toEqual([]);
  });
});

describe('validateResource', () => {
  it('validates one object with a caller-given prefix and keeps creationTimestamp', () => {
    const obj = {
      apiVersion: API, kind: 'ModelRoute',
      metadata: { name: 'r', namespace: 'ns', creationTimestamp: new Date('2024-05-01T10:00:00Z') },
      spec: { modelName: 'm', rules: [{ name: 'a', targetModels: [{ modelServerName: 's' }] }] },
      status: {},
    };
    const r = validateResource(obj, 'kubernetes', opts);
    expect(r).toMatchObject({ kind: 'ModelRoute', key: 'ns/r', creationTimestamp: '2024-05-01T10:00:00Z' });
    const fromString = validateResource({ ...obj, metadata: { ...obj.metadata, creationTimestamp: '2024-05-01T10:00:00Z' } }, 'kubernetes', opts);
    expect(fromString).toEqual(r);
    expect(errorOf(() => validateResource({ ...obj, spec: { ...obj.spec, modelName: null } }, 'kubernetes', opts)).message)
      .toBe('kubernetes (ModelRoute ns/r): spec.modelName: is required unless spec.loraAdapters lists adapters: expected a non-empty string');
    expect(errorOf(() => validateResource({ ...obj, metadata: { ...obj.metadata, creationTimestamp: 'yesterday' } }, '', opts)).message)
      .toBe('ModelRoute ns/r: metadata.creationTimestamp: expected an RFC 3339 timestamp, got the string "yesterday"');
  });

  it('rejects non-objects', () => {
    expect(errorOf(() => validateResource(null, 'kubernetes', opts)).message).toBe('kubernetes: is required: expected a mapping');
  });

  it('exposes the parts of the message', () => {
    const err = errorOf(() => validateResource({ apiVersion: API, kind: 'ModelServer', metadata: { name: 's' }, spec: { model: '' } }, 'where', opts));
    expect([err.where, err.resource, err.path, err.problem]).toEqual(['where', 'ModelServer default/s', 'spec.model', 'expected a non-empty string, got the string ""']);
  });
});

describe('findMissingReferences', () => {
  it('lists each target naming a missing server in the route namespace', () => {
    const { routes, servers } = parse(`${SERVER}---\n${route('r', SIMPLE_SPEC)}`);
    expect(findMissingReferences(routes, servers)).toEqual([]);
    expect(findMissingReferences(routes, [])).toEqual([{
      routeKey: 'default/r',
      serverKey: 'default/sf-server',
      path: 'spec.rules[0].targetModels[0].modelServerName',
      problem: "ModelServer default/sf-server does not exist (a target must name a ModelServer in the route's namespace)",
    }]);
    const elsewhere = servers.map((s) => ({ ...s, namespace: 'x', key: `x/${s.name}` }));
    expect(findMissingReferences(routes, elsewhere)).toHaveLength(1);
  });
});

describe('address forms', () => {
  it('parses host:port', () => {
    expect(parseHostPort('127.0.0.1:8000')).toEqual({ host: '127.0.0.1', port: 8000 });
    expect(parseHostPort('pod-a.svc.cluster.local:1')).toEqual({ host: 'pod-a.svc.cluster.local', port: 1 });
    expect(parseHostPort('[::1]:65535')).toEqual({ host: '[::1]', port: 65535 });
    for (const bad of ['', ':80', 'host', 'host:', 'host:65536', 'host:8o', '[::1:80', '[zz]:80', 'a b:80', '-a:80', '1.2.3:80']) {
      expect(typeof parseHostPort(bad), bad).toBe('string');
    }
  });

  it('checks redis addresses', () => {
    expect(redisAddressProblem('redis:6379', false)).toBeNull();
    expect(redisAddressProblem('rediss://redis.example.com', false)).toBeNull();
    expect(redisAddressProblem('redis://h:6379/3', false)).toBeNull();
    expect(redisAddressProblem('redis://h:6379/x', false)).toMatch(/database number/);
    expect(redisAddressProblem('redis:///0', false)).toMatch(/no host/);
    expect(redisAddressProblem('tcp://h:1', false)).toMatch(/scheme/);
    expect(redisAddressProblem('h:0', false)).toMatch(/bad port/);
    expect(redisAddressProblem('a:7000, b:7001,redis://c:7002', true)).toBeNull();
    expect(redisAddressProblem('a:7000,b', true)).toMatch(/^in the list of addresses: expected host:port/);
    expect(redisAddressProblem('a:7000,', true)).toMatch(/^in the list of addresses: expected host:port/);
  });

  // What the Redis limiter cannot connect to is refused here, where it is a clear error, and not
  // where a worker creates the limiter (it threw there, and every worker exited, again and again).
  it('refuses the redis addresses the limiter cannot use, given REDIS_CLUSTER', () => {
    expect(redisAddressProblem('a:7000,b:7001', false)).toBe(
      "names several nodes (Redis Cluster seed nodes); that needs REDIS_CLUSTER=true in the router's environment (one Redis: name only it)");
    expect(redisAddressProblem('redis://h:6379/100', false)).toBe('database number must be 0-99, got 100');
    expect(redisAddressProblem('redis://h:6379/99', false)).toBeNull();
    expect(redisAddressProblem('redis://h:6379/1', true)).toBe('Redis Cluster has only database 0 (REDIS_CLUSTER=true), got database 1');
    expect(redisAddressProblem('redis://h:6379/0', true)).toBeNull();
    const route = (address: string) => `apiVersion: networking.serving.volcano.sh/v1alpha1
kind: ModelRoute
metadata: {name: r}
spec:
  modelName: m
  rules: [{name: d, targetModels: [{modelServerName: s}]}]
  rateLimit: {inputTokensPerUnit: 10, global: {redis: {address: "${address}"}}}
`;
    expect(errorOf(() => validateResource(parseYaml(route('r-0:6379,r-1:6379')), 'r.yaml', opts)).message).toBe(
      'r.yaml (ModelRoute default/r): spec.rateLimit.global.redis.address: names several nodes (Redis Cluster seed nodes); ' +
      "that needs REDIS_CLUSTER=true in the router's environment (one Redis: name only it)");
    const accepted = validateResource(parseYaml(route('r-0:6379,r-1:6379')), 'r.yaml', { ...opts, redisCluster: true });
    expect(accepted.kind === 'ModelRoute' && accepted.rateLimit!.global!.redis.address).toBe('r-0:6379,r-1:6379');
  });
});

describe('parseResourceFile: a regex with a nested repetition', () => {
  const withMatch = (match: string) => `${SERVER}---\n${route('slow', `  modelName: m\n  rules:\n  - modelMatch:\n${match}    targetModels:\n    - modelServerName: sf-server\n`)}`;

  it('loads with a warning naming the field, the pattern and the nesting to rewrite (a crafted value can take seconds here)', () => {
    const { routes, warnings } = parse(withMatch('      headers:\n        X-Tier: {regex: "^(\\\\w+,?)+$"}\n      uri: {regex: "(a*)*b"}\n'));
    expect(routes).toHaveLength(1);
    expect(warnings).toEqual([
      `routes.yaml: document 2 (ModelRoute default/slow): spec.rules[0].modelMatch.headers.X-Tier.regex: "^(\\\\w+,?)+$" ${NESTED_REPETITION} "(\\\\w+,?)+"`,
      `routes.yaml: document 2 (ModelRoute default/slow): spec.rules[0].modelMatch.uri.regex: "(a*)*b" ${NESTED_REPETITION} "(a*)*"`,
    ]);
  });

  it('one without, such as the route API examples\' alternations, is said nothing of', () => {
    expect(parse(withMatch('      headers:\n        x-tier: {regex: "^(acme|globex)-prod$"}\n      uri: {regex: "^/v1/(chat/)?completions"}\n')).warnings).toEqual([]);
  });
});
