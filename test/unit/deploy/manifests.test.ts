/**
 * deploy/: every YAML parses; the kustomizations build with `kubectl kustomize`; the CRD schemas
 * are structural; the examples pass both the CRD schemas and the router's own validation, and
 * deliberately bad resources fail both.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, test } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { resourceNotes, validateResource } from '../../../src/config/resources.js';
import { findMissingReferences } from '../../../src/config/resource-file.js';
import type { ModelRoute, ModelServer } from '../../../src/config/resource-types.js';
import { structuralProblems, validateAgainst, type Schema } from './openapi-schema.js';

const ROOT = new URL('../../../', import.meta.url).pathname;
const DEPLOY = join(ROOT, 'deploy');
const GROUP = 'networking.serving.volcano.sh';
const KUBECTL = '/usr/bin/kubectl';
const hasKubectl = existsSync(KUBECTL);

type Doc = Record<string, any>;

function yamlFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    // Helm templates are Go templates, not YAML: test/unit/deploy/helm.test.ts renders them.
    if (statSync(path).isDirectory()) return name === 'templates' && dir.includes('/helm/') ? [] : yamlFiles(path);
    return /\.ya?ml$/.test(name) ? [path] : [];
  });
}

function parseDocs(text: string, file: string): Doc[] {
  return parseAllDocuments(text).map((doc, i) => {
    if (doc.errors.length > 0) throw new Error(`${file}: document ${i + 1}: ${doc.errors[0].message}`);
    return doc.toJS() as Doc;
  }).filter((d) => d !== null);
}

function load(rel: string): Doc[] {
  const file = join(DEPLOY, rel);
  return parseDocs(readFileSync(file, 'utf8'), rel);
}

function crdSchema(file: string): Schema {
  const [crd] = load(file);
  return crd.spec.versions[0].schema.openAPIV3Schema as Schema;
}

const SCHEMAS: Record<string, Schema> = {
  ModelRoute: crdSchema('crds/modelroutes.yaml'),
  ModelServer: crdSchema('crds/modelservers.yaml'),
};

function schemaErrors(obj: Doc): string[] {
  const schema = SCHEMAS[obj.kind];
  if (schema === undefined) return [`no CRD for kind ${obj.kind}`];
  return validateAgainst(schema, obj);
}

function routerError(obj: Doc, redisCluster = false): string | null {
  try {
    validateResource(obj, 'example', { apiGroup: GROUP, redisCluster });
    return null;
  } catch (err) {
    return (err as Error).message;
  }
}

/** What the router warns of about a valid resource (resourceNotes), as `path: problem` lines. */
function routerWarnings(obj: Doc): string[] {
  return resourceNotes(obj).map((n) => `${n.path}: ${n.problem}`);
}

const EXAMPLES = yamlFiles(join(DEPLOY, 'examples'))
  .filter((f) => !f.endsWith('kustomization.yaml'))
  .flatMap((f) => parseDocs(readFileSync(f, 'utf8'), relative(DEPLOY, f)));

function kustomize(dir: string): Doc[] {
  const out = execFileSync(KUBECTL, ['kustomize', join(DEPLOY, dir)], { encoding: 'utf8', timeout: 30_000 });
  return parseDocs(out, `kubectl kustomize ${dir}`);
}

test('every YAML file under deploy/ parses', () => {
  const files = yamlFiles(DEPLOY);
  expect(files.length).toBeGreaterThanOrEqual(12);
  for (const f of files) expect(load(relative(DEPLOY, f)).length, f).toBeGreaterThan(0);
});

/** A CPU quantity (2, "2", 1500m, 0.5) in CPUs. */
const cpus = (q: string | number): number => (String(q).endsWith('m') ? Number(String(q).slice(0, -1)) / 1000 : Number(q));

test('deploy/base requests one CPU per worker (ROUTER_WORKERS), as the chart and docs/deploy.md advise', () => {
  const deploy = load('base/deployment.yaml').find((d) => d.kind === 'Deployment')!;
  const [c] = deploy.spec.template.spec.containers;
  const workers = Number(c.env.find((e: Doc) => e.name === 'ROUTER_WORKERS').value);
  expect(workers).toBeGreaterThanOrEqual(1);
  expect(cpus(c.resources.requests.cpu)).toBe(workers);
  expect(cpus(c.resources.limits.cpu ?? Infinity)).toBeGreaterThanOrEqual(workers);
  expect([cpus('500m'), cpus('2'), cpus(2), cpus('0.5')]).toEqual([0.5, 2, 2, 0.5]);
});

test('the dashboard keeps rate-limit rejections of each scope apart (a tenant limit\'s have route="")', () => {
  const dashboard = JSON.parse(readFileSync(join(DEPLOY, 'observability/grafana-dashboard.json'), 'utf8'));
  const targets: Doc[] = dashboard.panels.flatMap((p: Doc) => p.targets ?? [])
    .filter((t: Doc) => /\binference_router_ratelimit_rejections_total\b/.test(t.expr));
  expect(targets.length).toBeGreaterThanOrEqual(2);
  for (const t of targets) {
    const by = /\bby \(([^)]*)\)/.exec(t.expr)![1].split(',').map((l) => l.trim());
    const selected = /\{[^}]*\bscope\s*=\s*"[^"]+"/.test(t.expr);
    expect(by.includes('scope') || selected, t.expr).toBe(true);
    // Legends name what the series are grouped by.
    for (const label of by) expect(t.legendFormat, t.expr).toContain(`{{${label}}}`);
  }
  // Together they cover every scope: route, and the others (tenant).
  const exprs = targets.map((t) => t.expr).join('\n');
  expect(exprs).toContain('scope="route"');
  expect(exprs).toContain('scope!="route"');
});

describe('CRDs', () => {
  test.each(['crds/modelroutes.yaml', 'crds/modelservers.yaml'])('%s is a v1 CRD of the group with a structural schema', (file) => {
    const [crd] = load(file);
    expect(crd.apiVersion).toBe('apiextensions.k8s.io/v1');
    expect(crd.kind).toBe('CustomResourceDefinition');
    expect(crd.spec.group).toBe(GROUP);
    expect(crd.metadata.name).toBe(`${crd.spec.names.plural}.${GROUP}`);
    expect(crd.spec.scope).toBe('Namespaced');
    expect(crd.spec.versions.map((v: Doc) => v.name)).toEqual(['v1alpha1']);
    expect(structuralProblems(crd.spec.versions[0].schema.openAPIV3Schema)).toEqual([]);
  });

  test('the validator is not a tautology: a non-structural schema is reported', () => {
    expect(structuralProblems({ type: 'object', properties: { a: {} }, additionalProperties: { type: 'string' } })).toHaveLength(2);
    // A branch of anyOf / oneOf may check only properties declared outside it, and only their values.
    const withBranch = (branch: Schema): Schema => ({ type: 'object', properties: { a: { type: 'string' } }, anyOf: [branch] });
    expect(structuralProblems(withBranch({ required: ['a'], properties: { a: { minLength: 1 } } }))).toEqual([]);
    expect(structuralProblems(withBranch({ properties: { b: { minLength: 1 } } }))).toHaveLength(1);
    expect(structuralProblems(withBranch({ properties: { a: { type: 'string', minLength: 1 } } }))).toHaveLength(1);
    expect(structuralProblems(withBranch({ type: 'object' }))).toHaveLength(1);
  });

  test('the validator applies the checks of a branch to the fields it requires', () => {
    const schema: Schema = {
      type: 'object',
      properties: { a: { type: 'string' }, b: { type: 'array', items: { type: 'string' } } },
      anyOf: [{ required: ['a'], properties: { a: { minLength: 1 } } }, { required: ['b'], properties: { b: { minItems: 1 } } }],
    };
    expect(validateAgainst(schema, { a: 'x' })).toEqual([]);
    expect(validateAgainst(schema, { a: '', b: ['y'] })).toEqual([]);
    expect(validateAgainst(schema, { a: '', b: [] })).toEqual(['<root>: must set at least one of a (minLength 1) | b (minItems 1)']);
    expect(validateAgainst(schema, {})).toHaveLength(1);
  });
});

describe('examples', () => {
  test('there are ModelRoute (local and global limit) and ModelServer examples', () => {
    const kinds = EXAMPLES.map((d) => d.kind);
    expect(kinds).toContain('ModelRoute');
    expect(kinds).toContain('ModelServer');
    const limits = EXAMPLES.filter((d) => d.kind === 'ModelRoute' && d.spec.rateLimit);
    expect(limits.some((d) => d.spec.rateLimit.global === undefined)).toBe(true);
    expect(limits.some((d) => d.spec.rateLimit.global?.redis?.address)).toBe(true);
  });

  test.each(EXAMPLES.map((d) => [`${d.kind} ${d.metadata.name}`, d]))('%s passes the CRD schema and the router validation', (_name, doc) => {
    expect(schemaErrors(doc as Doc)).toEqual([]);
    expect(routerError(doc as Doc)).toBeNull();
  });

  test('every route target names an example ModelServer', () => {
    const parsed = EXAMPLES.map((d) => validateResource(d, 'example', { apiGroup: GROUP, redisCluster: false }));
    const routes = parsed.filter((r): r is ModelRoute => r.kind === 'ModelRoute');
    const servers = parsed.filter((r): r is ModelServer => r.kind === 'ModelServer');
    expect(findMissingReferences(routes, servers)).toEqual([]);
  });
});

describe('bad resources are rejected by the CRD schema and by the router', () => {
  const route = EXAMPLES.find((d) => d.kind === 'ModelRoute' && d.spec.rateLimit?.global) as Doc;
  const server = EXAMPLES.find((d) => d.kind === 'ModelServer' && d.spec.workloadSelector) as Doc;
  const standalone = EXAMPLES.find((d) => d.kind === 'ModelServer' && d.spec.endpoints) as Doc;

  function mutate(base: Doc, change: (d: Doc) => void): Doc {
    const copy = structuredClone(base);
    change(copy);
    return copy;
  }

  const cases: [string, Doc, RegExp][] = [
    ['rate limit unit outside the enum', mutate(route, (d) => { d.spec.rateLimit.unit = 'week'; }), /rateLimit\.unit/],
    ['input token limit 0', mutate(route, (d) => { d.spec.rateLimit.inputTokensPerUnit = 0; }), /inputTokensPerUnit/],
    ['output token limit not an integer', mutate(route, (d) => { d.spec.rateLimit.outputTokensPerUnit = 1.5; }), /outputTokensPerUnit/],
    ['redis address without port', mutate(route, (d) => { d.spec.rateLimit.global.redis.address = 'redis'; }), /address/],
    ['redis seed list with a bad member', mutate(route, (d) => { d.spec.rateLimit.global.redis.address = 'r1:6379,r2'; }), /address/],
    ['weight above 100', mutate(route, (d) => { d.spec.rules[0].targetModels[0].weight = 101; }), /weight/],
    ['negative weight', mutate(route, (d) => { d.spec.rules[0].targetModels[0].weight = -1; }), /weight/],
    ['rule without targets', mutate(route, (d) => { d.spec.rules[0].targetModels = []; }), /targetModels/],
    ['target without modelServerName', mutate(route, (d) => { d.spec.rules[0].targetModels = [{ weight: 5 }]; }), /modelServerName/],
    ['no modelName', mutate(route, (d) => { delete d.spec.modelName; }), /modelName/],
    ['an empty modelName and no loraAdapters', mutate(route, (d) => { d.spec.modelName = ''; }), /modelName/],
    ['no modelName and an empty loraAdapters list', mutate(route, (d) => { delete d.spec.modelName; d.spec.loraAdapters = []; }), /loraAdapters/],
    ['an empty modelName and an empty loraAdapters list', mutate(route, (d) => { d.spec.modelName = ''; d.spec.loraAdapters = []; }), /modelName/],
    ['an empty LoRA adapter name', mutate(route, (d) => { d.spec.loraAdapters = ['a', '']; }), /loraAdapters\[1\]/],
    ['workload port out of range', mutate(server, (d) => { d.spec.workloadPort.port = 70000; }), /workloadPort\.port/],
    ['label value not a string', mutate(server, (d) => { d.spec.workloadSelector.matchLabels.tier = 3; }), /matchLabels/],
    ['timeout that is not a duration', mutate(server, (d) => { d.spec.trafficPolicy.timeout = '30 seconds'; }), /timeout/],
    ['endpoint address without port', mutate(standalone, (d) => { d.spec.endpoints[0].address = '10.0.0.1'; }), /address/],
    ['endpoint without name', mutate(standalone, (d) => { delete d.spec.endpoints[0].name; }), /name/],
    ['duplicate endpoint names', mutate(standalone, (d) => { d.spec.endpoints[1].name = d.spec.endpoints[0].name; }), /endpoints\[1\]/],
    ['a parentRef without a name', mutate(route, (d) => { d.spec.parentRefs = [{ namespace: 'gateways' }]; }), /parentRefs\[0\]\.name/],
    ['a parentRef name over 253 characters', mutate(route, (d) => { d.spec.parentRefs = [{ name: 'g'.repeat(254) }]; }), /parentRefs\[0\]\.name/],
    ['a parentRef namespace that is not a DNS label', mutate(route, (d) => { d.spec.parentRefs = [{ name: 'gw', namespace: 'Gateways' }]; }), /parentRefs\[0\]\.namespace/],
    ['a parentRef sectionName left empty', mutate(route, (d) => { d.spec.parentRefs = [{ name: 'gw', sectionName: '' }]; }), /parentRefs\[0\]\.sectionName/],
    ['a parentRef kind that starts with a digit', mutate(route, (d) => { d.spec.parentRefs = [{ name: 'gw', kind: '1Gateway' }]; }), /parentRefs\[0\]\.kind/],
    ['a parentRef group that is not a DNS subdomain', mutate(route, (d) => { d.spec.parentRefs = [{ name: 'gw', group: 'Gateway.Networking' }]; }), /parentRefs\[0\]\.group/],
    ['a parentRef port of 0', mutate(route, (d) => { d.spec.parentRefs = [{ name: 'gw', port: 0 }]; }), /parentRefs\[0\]\.port/],
  ];

  test.each(cases)('%s', (_name, doc, field) => {
    const errors = schemaErrors(doc);
    expect(errors.length, 'CRD schema should reject it').toBeGreaterThan(0);
    expect(errors.join('\n')).toMatch(field);
    const routerMessage = routerError(doc);
    expect(routerMessage, 'router validation should reject it').not.toBeNull();
  });

  test('what the route API\'s own CRD accepts and reads (a rateLimit without counts, no rules, a match of no kind or of two, retry attempts past 10) is accepted by both, each told', () => {
    for (const [what, doc, note] of [
      ['rate limit without any token limit', mutate(route, (d) => { delete d.spec.rateLimit.inputTokensPerUnit; delete d.spec.rateLimit.outputTokensPerUnit; }), /spec\.rateLimit: sets neither/],
      ['no rules', mutate(route, (d) => { d.spec.rules = []; }), /spec\.rules: is empty/],
      ['uri match with two kinds', mutate(route, (d) => { d.spec.rules[0].modelMatch = { uri: { exact: '/a', prefix: '/b' } }; }), /uri: sets exact and prefix: exact is read/],
      ['header match with no kind', mutate(route, (d) => { d.spec.rules[0].modelMatch = { headers: { 'x-a': {} } }; }), /x-a: sets none of exact, prefix, regex/],
      ['retry attempts past 10', mutate(server, (d) => { d.spec.trafficPolicy = { ...d.spec.trafficPolicy, retry: { attempts: 20 } }; }), /attempts: 20 is read as 10/],
    ] as const) {
      expect(schemaErrors(doc), what).toEqual([]);
      expect(routerError(doc), what).toBeNull();
      expect(routerWarnings(doc).join('\n'), what).toMatch(note);
    }
  });

  test('a retry without attempts (optional in the route API, which defaults only retryInterval) is accepted by both', () => {
    const doc = mutate(server, (d) => { d.spec.trafficPolicy = { ...d.spec.trafficPolicy, retry: { retryInterval: '100ms' } }; });
    expect(schemaErrors(doc)).toEqual([]);
    expect(routerError(doc)).toBeNull();
  });

  test('a global without redis (a local limit in the route API) is accepted by both', () => {
    const doc = mutate(route, (d) => { d.spec.rateLimit.global = {}; });
    expect(schemaErrors(doc)).toEqual([]);
    expect(routerError(doc)).toBeNull();
  });

  test('an empty loraAdapters list beside a modelName (the route API allows it) is accepted by both', () => {
    const doc = mutate(route, (d) => { d.spec.loraAdapters = []; });
    expect(schemaErrors(doc)).toEqual([]);
    expect(routerError(doc)).toBeNull();
  });

  test('an empty modelName beside LoRA adapters, or adapters alone (the route API allows both), is accepted by both', () => {
    for (const [what, change] of [
      ['empty modelName', (d: Doc) => { d.spec.modelName = ''; d.spec.loraAdapters = ['lora-a']; }],
      ['no modelName', (d: Doc) => { delete d.spec.modelName; d.spec.loraAdapters = ['lora-a']; }],
    ] as const) {
      const doc = mutate(route, change);
      expect(schemaErrors(doc), what).toEqual([]);
      expect(routerError(doc), what).toBeNull();
    }
  });

  test('a workloadSelector.pdGroup with a kvConnector is accepted by both', () => {
    const doc = mutate(server, (d) => {
      d.spec.workloadSelector.pdGroup = { groupKey: 'g', prefillLabels: { role: 'prefill' }, decodeLabels: { role: 'decode' } };
      d.spec.kvConnector = { type: 'nixl' };
    });
    expect(schemaErrors(doc)).toEqual([]);
    expect(routerError(doc)).toBeNull();
  });

  test('parentRefs as the Gateway API writes them (a core-group parent, a listener, a port) are accepted by both', () => {
    const doc = mutate(route, (d) => {
      d.spec.parentRefs = [
        { name: 'gw', namespace: 'gateways', group: 'gateway.networking.k8s.io', kind: 'Gateway', sectionName: 'https', port: 443 },
        { name: 'svc', group: '', kind: 'Service' },
        { name: 'other' },
      ];
    });
    expect(schemaErrors(doc)).toEqual([]);
    expect(routerError(doc)).toBeNull();
  });

  test('a rule named "" (the route API takes it as unnamed) is accepted by both', () => {
    const doc = mutate(route, (d) => { d.spec.rules[0].name = ''; });
    expect(schemaErrors(doc)).toEqual([]);
    expect(routerError(doc)).toBeNull();
  });

  test('a Redis Cluster seed list (with REDIS_CLUSTER=true) and a redis:// URL are accepted by both', () => {
    for (const address of ['r1.redis:6379, r2.redis:6379,[fd00::1]:6379', 'rediss://user:pw@redis.example:6380/0']) {
      const doc = mutate(route, (d) => { d.spec.rateLimit.global.redis.address = address; });
      expect(schemaErrors(doc), address).toEqual([]);
      expect(routerError(doc, true), address).toBeNull();
    }
  });

  test('an unknown field where the schema does not preserve them is rejected; where it does, it is kept', () => {
    expect(schemaErrors(mutate(route, (d) => { d.spec.rateLimit.burst = 5; }))).toEqual(['spec.rateLimit.burst: unknown field']);
    expect(schemaErrors(mutate(route, (d) => { d.spec.parentRefs = [{ name: 'gw' }]; }))).toEqual([]);
    expect(schemaErrors(mutate(server, (d) => { d.spec.kvConnector = { type: 'nixl' }; }))).toEqual([]);
  });
});

describe.skipIf(!hasKubectl)('kustomizations build with kubectl kustomize', () => {
  test('deploy/crds', () => {
    expect(kustomize('crds').map((d) => `${d.kind}/${d.metadata.name}`)).toEqual([
      `CustomResourceDefinition/modelroutes.${GROUP}`, `CustomResourceDefinition/modelservers.${GROUP}`,
    ]);
  });

  test('deploy/base: router Deployment, Service, ServiceAccount and read-only RBAC', () => {
    const docs = kustomize('base');
    const byKind = (kind: string): Doc => {
      const found = docs.filter((d) => d.kind === kind);
      expect(found, kind).toHaveLength(1);
      return found[0];
    };
    const deploy = byKind('Deployment');
    expect(deploy.metadata.namespace).toBe('inference-router');
    expect(deploy.spec.replicas).toBe(2);
    const pod = deploy.spec.template.spec;
    const [c] = pod.containers;
    expect(c.image).toBe('inference-router:latest');
    expect(c.args).toEqual(['--kubernetes']);
    const env = Object.fromEntries(c.env.map((e: Doc) => [e.name, e.value]));
    expect(env).toMatchObject({ ROUTER_DRAIN_TIMEOUT: '30s', ACCESS_LOG_ENABLED: 'true', ACCESS_LOG_FORMAT: 'json', ACCESS_LOG_OUTPUT: 'stdout' });
    expect(env.ROUTER_WORKERS).toMatch(/^\d+$/);
    // Every interface, IPv6 too (an IPv6-only cluster's probes and Service); 0.0.0.0 where the node has no IPv6.
    expect(env.ROUTER_HOST).toBe('::');
    expect(pod.terminationGracePeriodSeconds).toBeGreaterThan(30);
    expect(c.readinessProbe.httpGet.path).toBe('/readyz');
    expect(c.livenessProbe.httpGet.path).toBe('/healthz');
    const port = c.ports.find((p: Doc) => p.name === c.readinessProbe.httpGet.port);
    expect(port.containerPort).toBe(8080);
    expect(c.resources.requests).toBeDefined();
    expect(c.resources.limits).toBeDefined();
    expect(pod.securityContext.runAsNonRoot).toBe(true);
    expect(c.securityContext).toMatchObject({ allowPrivilegeEscalation: false, readOnlyRootFilesystem: true });
    expect(pod.serviceAccountName).toBe(byKind('ServiceAccount').metadata.name);

    const svc = byKind('Service');
    expect(svc.spec.ports).toEqual([expect.objectContaining({ port: 80, targetPort: 'http' })]);
    expect(svc.spec.selector).toEqual(deploy.spec.selector.matchLabels);

    const role = byKind('ClusterRole');
    const grants = role.rules.flatMap((r: Doc) => r.apiGroups.flatMap((g: string) => r.resources.map((res: string) => `${g}/${res}:${[...r.verbs].sort().join(',')}`)));
    expect(grants.sort()).toEqual([`/pods:get,list,watch`, `${GROUP}/modelroutes:get,list,watch`, `${GROUP}/modelservers:get,list,watch`]);
    const binding = byKind('ClusterRoleBinding');
    expect(binding.roleRef.name).toBe(role.metadata.name);
    expect(binding.subjects).toEqual([{ kind: 'ServiceAccount', name: 'inference-router', namespace: 'inference-router' }]);
  });

  test('deploy/overlays/global-limits: the base plus Redis at the address the global example uses', () => {
    const docs = kustomize('overlays/global-limits');
    const names = docs.map((d) => `${d.kind}/${d.metadata.name}`);
    expect(names).toEqual(expect.arrayContaining(['Deployment/inference-router', 'Deployment/redis', 'Service/redis', 'Service/inference-router']));
    const redisSvc = docs.find((d) => d.kind === 'Service' && d.metadata.name === 'redis') as Doc;
    const globalRoute = EXAMPLES.find((d) => d.spec?.rateLimit?.global) as Doc;
    expect(globalRoute.spec.rateLimit.global.redis.address)
      .toBe(`${redisSvc.metadata.name}.${redisSvc.metadata.namespace}.svc.cluster.local:${redisSvc.spec.ports[0].port}`);
    // Its Redis evicts nothing: an evicting policy (volatile-ttl takes keys with an expiry, as every
    // count is) drops a window's counts at maxmemory, and the window admits its whole limit again.
    const redis = docs.find((d) => d.kind === 'Deployment' && d.metadata.name === 'redis') as Doc;
    const args: string[] = redis.spec.template.spec.containers[0].args;
    expect(args[args.indexOf('--maxmemory-policy') + 1]).toBe('noeviction');
  });

  test('deploy/examples', () => {
    expect(kustomize('examples')).toHaveLength(EXAMPLES.length);
  });
});
